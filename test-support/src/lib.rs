//! One way for a test to need something the machine may not have: the real n8n catalogue, the
//! n8n workflow corpus, a PostgreSQL server, `redis-server`, Chromium and chromedriver, a
//! program on `PATH`.
//!
//! Every `require_*` function returns the dependency when it is there. When it is absent:
//!
//! - under `CI=true` (or `CI=1`) it **panics** with what is missing and how to provide it, so a
//!   CI run never passes by skipping;
//! - otherwise it prints `skipped: …` on stderr, appends one line (crate, test, reason) to
//!   `skips.tsv` in the skip folder and returns `None`, and the test returns early:
//!
//! ```ignore
//! let Some(dir) = agentgraph_test_support::n8n_catalogue() else { return };
//! ```
//!
//! The skip folder is `$AGENTGRAPH_SKIP_DIR`, else `agentgraph-skips/` in the Cargo target
//! folder of the test binary. `scripts/test` clears it, runs `cargo test --workspace` and
//! prints one line per skipped suite.
//!
//! [`graphs`] holds the graph-building and run helpers the engine and agent-node tests share.

pub mod graphs;
pub mod mcp;

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A folder laid out like n8n's packages (`n8n-nodes-base/nodes.json`,
/// `n8n-nodes-langchain/nodes.json`, or an npm `node_modules` layout).
pub const CATALOGUE_VAR: &str = "AGENTGRAPH_N8N_CATALOGUE";
/// A folder of published n8n workflows (`<category>/<workflow>.json`, `_invalid-json/…`).
pub const WORKFLOWS_VAR: &str = "AGENTGRAPH_N8N_WORKFLOWS";
/// A PostgreSQL URL the tests may create schemas in.
pub const POSTGRES_VAR: &str = "AGENTGRAPH_TEST_POSTGRES_URL";
/// Where skips are recorded (default: `agentgraph-skips/` in the Cargo target folder).
pub const SKIP_DIR_VAR: &str = "AGENTGRAPH_SKIP_DIR";
/// The file of the skip folder that gets one line per skipped test.
pub const SKIP_FILE: &str = "skips.tsv";

/// Whether this is a CI run (`CI=true` or `CI=1`): a missing dependency fails the test.
pub fn is_ci() -> bool {
    std::env::var("CI")
        .map(|v| {
            let v = v.trim();
            v.eq_ignore_ascii_case("true") || v == "1"
        })
        .unwrap_or(false)
}

/// The dependency `what` is absent because `why`: panics under CI, otherwise records the skip
/// of the current test and returns `None`.
pub fn skip<T>(what: &str, why: &str) -> Option<T> {
    let test = current_test();
    if is_ci() {
        panic!(
            "{test} needs {what}, which is absent: {why}. CI=true, so this fails instead of \
             skipping; provide it (see .ci/run) or run without CI=true to skip."
        );
    }
    let reason = format!("{what}: {why}").replace(['\t', '\n'], " ");
    eprintln!("skipped: {test} needs {reason}");
    record(&test, &reason);
    None
}

/// `found` when it is `Ok`; otherwise a skip of `what` (see [`skip`]) with the error as reason.
pub fn require<T, E: Display>(found: Result<T, E>, what: &str) -> Option<T> {
    match found {
        Ok(v) => Some(v),
        Err(e) => skip(what, &e.to_string()),
    }
}

/// The value of the environment variable `var` (trimmed, non-empty), or a skip of `what`.
pub fn require_env(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
        _ => skip(what, &format!("{var} is not set")),
    }
}

/// The folder named by the environment variable `var`, or a skip of `what` when the variable
/// is unset. A variable naming a folder that does not exist is a mistake, never a skip: it
/// panics.
pub fn require_dir(var: &str, what: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(require_env(var, what)?);
    assert!(
        dir.is_dir(),
        "{var}={} is not a folder (it should hold {what})",
        dir.display()
    );
    Some(dir)
}

/// The real n8n catalogue: `$AGENTGRAPH_N8N_CATALOGUE`, a folder laid out like n8n's packages
/// (`n8n-nodes-base/nodes.json`, `n8n-nodes-langchain/nodes.json`), as
/// `scripts/fetch-n8n-catalogue.sh` writes it.
pub fn n8n_catalogue() -> Option<PathBuf> {
    let dir = require_dir(
        CATALOGUE_VAR,
        "the real n8n catalogue (scripts/fetch-n8n-catalogue.sh DIR fetches it)",
    )?;
    let base = [
        "n8n-nodes-base/nodes.json",
        "n8n-nodes-base/dist/types/nodes.json",
    ];
    assert!(
        base.iter().any(|f| dir.join(f).is_file()),
        "{CATALOGUE_VAR}={} has no n8n-nodes-base/nodes.json (scripts/fetch-n8n-catalogue.sh \
         writes that layout)",
        dir.display()
    );
    Some(dir)
}

/// The n8n workflow corpus: `$AGENTGRAPH_N8N_WORKFLOWS`, a folder of published workflows.
pub fn n8n_workflows() -> Option<PathBuf> {
    require_dir(
        WORKFLOWS_VAR,
        "the n8n workflow corpus (a folder of published n8n workflows)",
    )
}

/// A running n8n for the end-to-end tests, as `scripts/n8n start` prints it: never a user's own
/// instance (`N8N_API_URL`), since the tests create, run and delete workflows.
#[derive(Debug, Clone)]
pub struct N8nInstance {
    /// `$AGENTGRAPH_TEST_N8N_URL`, e.g. `http://127.0.0.1:5679`.
    pub url: String,
    /// `$AGENTGRAPH_TEST_N8N_API_KEY`: a public-API key with every scope.
    pub api_key: String,
    /// `$AGENTGRAPH_TEST_N8N_EMAIL`: the owner's login (for the node types).
    pub email: String,
    /// `$AGENTGRAPH_TEST_N8N_PASSWORD`.
    pub password: String,
}

/// The test n8n instance (`scripts/n8n start` starts one and prints these variables; `.ci/run`
/// does both), or a skip.
pub fn require_n8n() -> Option<N8nInstance> {
    const WHAT: &str = "a running n8n (scripts/n8n install && eval \"$(scripts/n8n start)\")";
    Some(N8nInstance {
        url: require_env("AGENTGRAPH_TEST_N8N_URL", WHAT)?,
        api_key: require_env("AGENTGRAPH_TEST_N8N_API_KEY", WHAT)?,
        email: require_env("AGENTGRAPH_TEST_N8N_EMAIL", WHAT)?,
        password: require_env("AGENTGRAPH_TEST_N8N_PASSWORD", WHAT)?,
    })
}

/// The folder holding the npm MCP servers' programs (`mcp-server-everything`,
/// `mcp-server-filesystem`): `$AGENTGRAPH_TEST_MCP_BIN` (`scripts/mcp-servers install` installs
/// them and prints it; `.ci/run` does both), or a skip.
pub fn require_mcp_servers() -> Option<PathBuf> {
    let dir = require_env(
        "AGENTGRAPH_TEST_MCP_BIN",
        "the npm MCP servers (eval \"$(scripts/mcp-servers install)\")",
    )?;
    let dir = PathBuf::from(dir);
    for program in ["mcp-server-everything", "mcp-server-filesystem"] {
        if !dir.join(program).exists() {
            return skip(
                "the npm MCP servers",
                &format!("{} is not in {}", program, dir.display()),
            );
        }
    }
    Some(dir)
}

/// The MCP inspector's command-line client (`mcp-inspector-cli` of the npm package
/// `@modelcontextprotocol/inspector-cli`): `$AGENTGRAPH_TEST_MCP_INSPECTOR`
/// (`scripts/mcp-servers install` installs it and prints it; `.ci/run` does both), or a skip.
pub fn require_mcp_inspector() -> Option<PathBuf> {
    const WHAT: &str = "the MCP inspector CLI (eval \"$(scripts/mcp-servers install)\")";
    let program = PathBuf::from(require_env("AGENTGRAPH_TEST_MCP_INSPECTOR", WHAT)?);
    if !program.exists() {
        return skip(WHAT, &format!("{} does not exist", program.display()));
    }
    Some(program)
}

/// The URL of a PostgreSQL server for tests: `$AGENTGRAPH_TEST_POSTGRES_URL`.
pub fn require_postgres() -> Option<String> {
    require_env(
        POSTGRES_VAR,
        "a PostgreSQL server (e.g. postgres://agentgraph:agentgraph@127.0.0.1:5432/agentgraph; \
         .ci/run starts one)",
    )
}

/// The first of `names` found on `PATH` (or in `extra` folders), or a skip of `what`.
pub fn require_program(names: &[&str], extra: &[&Path], what: &str) -> Option<PathBuf> {
    match find_program(names, extra) {
        Some(p) => Some(p),
        None => skip(what, &format!("{} not found on PATH", names.join(" or "))),
    }
}

/// `redis-server`, for the tests that start their own Redis.
pub fn require_redis() -> Option<PathBuf> {
    require_program(
        &["redis-server"],
        &[],
        "redis-server (apt-get install redis-server)",
    )
}

/// A headless browser for WebDriver tests.
#[derive(Debug, Clone)]
pub struct Browser {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

/// Chromium and chromedriver, for the browser tests.
pub fn require_browser() -> Option<Browser> {
    const WHAT: &str = "Chromium and chromedriver (apt-get install chromium chromium-driver)";
    let extra = [Path::new("/usr/lib/chromium"), Path::new("/usr/bin")];
    let Some(chromedriver) = find_program(&["chromedriver"], &extra) else {
        return skip(WHAT, "chromedriver is not installed");
    };
    let Some(chromium) = find_program(&["chromium", "chromium-browser", "google-chrome"], &extra)
    else {
        return skip(WHAT, "chromium is not installed");
    };
    Some(Browser {
        chromium,
        chromedriver,
    })
}

/// The first of `names` that is a file in a folder of `PATH` or of `extra`.
pub fn find_program(names: &[&str], extra: &[&Path]) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    names.iter().find_map(|n| {
        dirs.iter()
            .map(PathBuf::as_path)
            .chain(extra.iter().copied())
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// The folder skips are recorded in: `$AGENTGRAPH_SKIP_DIR`, else `agentgraph-skips/` in the
/// Cargo target folder holding the running test binary.
pub fn skip_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(SKIP_DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let target = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|d| d.join("CACHEDIR.TAG").is_file())
            .map(Path::to_path_buf)
    });
    target
        .unwrap_or_else(std::env::temp_dir)
        .join("agentgraph-skips")
}

/// The name of the running test (libtest names each test's thread after it).
fn current_test() -> String {
    let krate = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| {
        std::env::current_exe()
            .ok()
            .and_then(|e| e.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".into())
    });
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("?")
        .to_string();
    format!("{krate} {test}")
}

/// Appends `<crate> <test>\t<reason>` to the skip file; a failure to record is only printed.
fn record(test: &str, reason: &str) {
    let dir = skip_dir();
    let line = format!("{test}\t{reason}\n");
    let result = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(SKIP_FILE))?
            .write_all(line.as_bytes())
    });
    if let Err(e) = result {
        eprintln!("could not record the skip in {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_variable_is_returned_trimmed() {
        std::env::set_var("AGENTGRAPH_TEST_SUPPORT_PROBE", " value ");
        assert_eq!(
            require_env("AGENTGRAPH_TEST_SUPPORT_PROBE", "a probe").as_deref(),
            Some("value")
        );
    }

    #[test]
    fn find_program_finds_sh() {
        assert!(find_program(&["sh"], &[Path::new("/bin")]).is_some());
        assert!(find_program(&["no-such-program-anywhere"], &[]).is_none());
    }
}
