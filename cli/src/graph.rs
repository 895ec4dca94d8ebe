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
