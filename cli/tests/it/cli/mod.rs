//! The `agentgraph` command end to end: every command and exit code, on a temporary sled store.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

mod authoring;
mod conveniences;
mod hostile;
mod providers;
mod run;
mod store;
mod stores_and_threads;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn graphs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples")
}

fn ag(db: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("NO_COLOR", "1")
        // Set in this process by the builder tests, or by the caller of the test run.
        .env_remove("AGENTGRAPH_PROVIDER")
        .env_remove("AGENTGRAPH_SCRIPT_DIR")
        .env_remove("AGENTGRAPH_N8N_CATALOGUE")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .output()
        .expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn g(name: &str) -> String {
    graphs().join(name).display().to_string()
}

fn last_json(s: &str) -> Value {
    let line = s
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("null");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
}
