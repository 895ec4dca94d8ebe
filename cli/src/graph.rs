//! Loading graph files (with diagnostics) and the file commands check and viz.

use crate::exit;
use agentgraph_dsl::{Diagnostic, Project};
use agentgraph_runtime::cache::StoreCache;
use agentgraph_runtime::checkpoint::SledOptions;
use agentgraph_runtime::store::SledItemStore;
use agentgraph_runtime::{CompiledGraph, SledCheckpointer};
use agentgraph_server::RegistryFactory;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Global options.
pub struct Ctx {
    /// The sled folder.
    pub db: PathBuf,
    /// JSON output.
    pub json: bool,
    /// Builds the registry of names graphs may use (assembled by `main`).
    pub registry: RegistryFactory,
}

/// Parses a `--thread` value: the rule the server applies too
/// ([`agentgraph_runtime::is_valid_thread_id`]).
pub fn thread_id(s: &str) -> Result<String, String> {
    if agentgraph_runtime::is_valid_thread_id(s) {
        Ok(s.to_string())
    } else {
        Err(agentgraph_runtime::THREAD_ID_RULE.to_string())
    }
}

fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}

/// Prints `error: {e}` and returns the exit code `code`.
pub fn fail(e: impl std::fmt::Display, code: u8) -> u8 {
    eprintln!("error: {e}");
    code
}

/// Diagnostics as one JSON array.
fn diagnostics_json(project: &Project, diags: &[Diagnostic]) -> serde_json::Value {
    serde_json::Value::Array(diags.iter().map(|d| project.to_json(d)).collect())
}

/// Prints diagnostics: rendered for people (colour on a terminal), JSON lines with `json`.
pub fn print_diagnostics(project: &Project, diags: &[Diagnostic], json: bool) {
    if json {
        println!("{}", diagnostics_json(project, diags));
        return;
    }
    let color = std::io::stderr().is_terminal();
    for d in diags {
        eprint!("{}", project.render(d, color, width()));
    }
    let errors = diags.iter().filter(|d| d.is_error()).count();
    let warnings = diags.len() - errors;
    if !diags.is_empty() {
        eprintln!("{errors} error(s), {warnings} warning(s)");
    }
}

/// Loads a graph file and what it references; if the root cannot be read, prints why and
/// returns the exit code.
fn load_project(path: &Path) -> Result<Project, u8> {
    Project::load(path).map_err(|e| fail(e, exit::USAGE))
}

/// Loads, checks and compiles a graph; on failure prints why and returns the exit code.
pub fn load(ctx: &Ctx, path: &Path) -> Result<CompiledGraph, u8> {
    let json = ctx.json;
    let project = load_project(path)?;
    let reg = (ctx.registry)();
    match project.check_and_compile(&reg) {
        Ok(compiled) => {
            if !compiled.warnings.is_empty() && !json {
                print_diagnostics(&project, &compiled.warnings, false);
            }
            Ok(compiled.graph)
        }
        Err(diags) => {
            // In JSON mode stdout is for results: diagnostics go to stderr as JSON.
            if json {
                eprintln!("{}", diagnostics_json(&project, &diags));
            } else {
                print_diagnostics(&project, &diags, false);
            }
            Err(exit::USAGE)
        }
    }
}

/// Opens the sled store.
pub fn store(ctx: &Ctx) -> Result<Arc<SledCheckpointer>, u8> {
    SledCheckpointer::open_with(&ctx.db, SledOptions::from_env())
        .map(Arc::new)
        .map_err(|e| {
            let text = e.to_string();
            let hint = if text.contains("lock") || text.contains("WouldBlock") {
                "another process (a server or a run) has it open; stop it or use another --db"
            } else {
                "if it is damaged, restore the folder or an export from a backup (`agentgraph \
                 --db NEW store import FILE`; docs/deploy.md, \"Backups\")"
            };
            fail(
                format!(
                    "cannot open the store at {}: {text}\nhint: {hint}",
                    ctx.db.display()
                ),
                exit::FAILED,
            )
        })
}

/// `g` with the run's storage: checkpoints in the sled database, and in trees of the same
/// database the long-term store (`TaskContext::store`, an `llm` node's memory on the store)
/// and the node cache — the server's layout, so `run` and `serve` on one `--db` share them.
pub fn attach_storage(g: CompiledGraph, cp: &Arc<SledCheckpointer>) -> Result<CompiledGraph, u8> {
    let db = cp.store().db();
    let open = |tree| SledItemStore::open_tree(db, tree).map_err(|e| fail(e, exit::FAILED));
    let store = open(agentgraph_server::STORE_TREE)?;
    let cache = open(agentgraph_server::CACHE_TREE)?;
    Ok(g.with_checkpointer(cp.clone())
        .with_store(Arc::new(store))
        .with_cache(Arc::new(StoreCache::new(Arc::new(cache)))))
}

/// A graph with the storage attached ([`attach_storage`]).
pub fn load_with_store(ctx: &Ctx, path: &Path) -> Result<CompiledGraph, u8> {
    let g = load(ctx, path)?;
    attach_storage(g, &store(ctx)?)
}

/// `agentgraph check`.
pub fn check(ctx: &Ctx, path: &Path) -> u8 {
    let project = match load_project(path) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let diags = project.check(&(ctx.registry)());
    print_diagnostics(&project, &diags, ctx.json);
    if diags.iter().any(Diagnostic::is_error) {
        exit::USAGE
    } else {
        if !ctx.json {
            eprintln!("{}: ok", path.display());
        }
        exit::DONE
    }
}

/// `agentgraph viz`.
pub fn viz(ctx: &Ctx, path: &Path, format: &str) -> u8 {
    let format: agentgraph_dsl::viz::Format = match format.parse() {
        Ok(f) => f,
        Err(e) => return fail(e, exit::USAGE),
    };
    let project = match load_project(path) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let diags = project.check(&(ctx.registry)());
    if diags.iter().any(Diagnostic::is_error) {
        print_diagnostics(&project, &diags, false);
        return exit::USAGE;
    }
    match agentgraph_dsl::viz::render(&project, format) {
        Ok(text) => {
            print!("{text}");
            exit::DONE
        }
        Err(e) => fail(e, exit::USAGE),
    }
}

/// Parses a JSON argument, or explains what is wrong.
pub fn json_arg(what: &str, text: &str) -> Result<serde_json::Value, u8> {
    serde_json::from_str(text).map_err(|e| {
        eprintln!(
            "error: {what} is not valid JSON: {e}\n  near: {}",
            json_excerpt(text, e.line(), e.column())
        );
        exit::USAGE
    })
}

/// At most [`EXCERPT`] characters of `text` around line `line`, column `column` (1-based, as
/// serde_json reports them), so that a large file is never echoed whole.
fn json_excerpt(text: &str, line: usize, column: usize) -> String {
    const EXCERPT: usize = 80;
    let l = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let chars: Vec<char> = l.chars().collect();
    let end = column.min(chars.len());
    let start = end.saturating_sub(EXCERPT / 2);
    let stop = (start + EXCERPT).min(chars.len());
    let mut out: String = chars[start..stop].iter().collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if stop < chars.len() {
        out.push('…');
    }
    out
}

/// The graphs shipped with agentgraph (`graphs/` of the repository: the `.ag` files with their
/// prompts, scripts and data), compiled into the binary so that `chat` finds them wherever it
/// runs. A graphs folder on disk always wins, so users can edit their copy.
pub mod shipped {
    use include_dir::{include_dir, Dir};
    use std::path::{Path, PathBuf};

    static GRAPHS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../graphs");

    /// Where a graph was found.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Origin {
        /// A file on disk: the current folder's `graphs/`, the configured graphs folder, or a
        /// path given as is.
        Disk,
        /// The copy built into the binary (unpacked under the data folder).
        BuiltIn,
    }

    /// Whether the binary holds `rel` (a path inside `graphs/`, e.g.
    /// `workflow-builder/single-agent.ag`).
    pub fn contains(rel: &Path) -> bool {
        GRAPHS.get_file(rel).is_some()
    }

    /// A stable tag of the embedded files (FNV-1a over names and contents), so a new binary
    /// unpacks into a new folder and never reads an older copy.
    fn tag() -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        let mut files = Vec::new();
        collect(&GRAPHS, &mut files);
        files.sort_by_key(|f| f.path());
        for f in files {
            eat(f.path().to_string_lossy().as_bytes());
            eat(f.contents());
        }
        format!("{}-{h:016x}", env!("CARGO_PKG_VERSION"))
    }

    fn collect<'a>(dir: &'a Dir<'a>, out: &mut Vec<&'a include_dir::File<'a>>) {
        out.extend(dir.files());
        for d in dir.dirs() {
            collect(d, out);
        }
    }

    /// The folder the embedded graphs are unpacked to (`<data folder>/shipped-graphs/<tag>`),
    /// unpacked on first use; a partial unpack is never seen (written aside, then renamed).
    pub fn unpacked() -> std::io::Result<PathBuf> {
        let base = agentgraph_n8n::catalogue::store::data_dir()
            .unwrap_or_else(|_| std::env::temp_dir().join("agentgraph"))
            .join("shipped-graphs");
        let dir = base.join(tag());
        if dir.is_dir() {
            return Ok(dir);
        }
        std::fs::create_dir_all(&base)?;
        let tmp = base.join(format!(".unpack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let mut files = Vec::new();
        collect(&GRAPHS, &mut files);
        for f in files {
            let to = tmp.join(f.path());
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&to, f.contents())?;
        }
        match std::fs::rename(&tmp, &dir) {
            Ok(()) => Ok(dir),
            // Another process unpacked the same files first.
            Err(_) if dir.is_dir() => {
                let _ = std::fs::remove_dir_all(&tmp);
                Ok(dir)
            }
            Err(e) => Err(e),
        }
    }

    /// Finds `rel` (a path inside `graphs/`): `./graphs/<rel>`, else `<graphs folder>/<rel>`
    /// (`graphs` of agentgraph.toml or `$AGENTGRAPH_GRAPHS`), else the built-in copy.
    pub fn find(rel: &Path, graphs_folder: Option<&Path>) -> Result<(PathBuf, Origin), String> {
        let local = Path::new("graphs").join(rel);
        if local.is_file() {
            return Ok((local, Origin::Disk));
        }
        if let Some(folder) = graphs_folder {
            let p = folder.join(rel);
            if p.is_file() {
                return Ok((p, Origin::Disk));
            }
        }
        if !contains(rel) {
            return Err(format!(
                "graphs/{} not found (not in ./graphs, the graphs folder, nor built in)",
                rel.display()
            ));
        }
        let dir = unpacked().map_err(|e| format!("cannot unpack the built-in graphs: {e}"))?;
        Ok((dir.join(rel), Origin::BuiltIn))
    }
}
