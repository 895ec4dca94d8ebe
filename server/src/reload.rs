//! Live reload: every graph the server has compiled is re-checked when one of the files it
//! was built from changes (the root file, `use`d and subgraph files, `file(…)` prompts).
//!
//! A clean re-check replaces the cached graph, so the next run uses it; runs already going
//! keep the [`CompiledGraph`] they started with (it is an immutable, shared value), and a
//! thread stopped at an interrupt resumes on the version it started with (see
//! [`GraphCache::pinned`]). A broken edit is logged with `tracing::warn!` and recorded (see
//! `GET /graphs`); the last good version keeps serving.
//!
//! The watcher polls: every `interval` (default 500 ms) it hashes the content of each cached
//! graph's files and re-checks the graphs whose files changed. Polling needs no platform
//! notification API, so it also works on network and container bind mounts (where inotify
//! misses changes), catches editors' save-by-rename, and, hashing contents instead of
//! comparing mtimes, never misses two writes within one timestamp tick. The files are few and
//! small, so a poll costs a few reads.

use crate::backing::GraphStorage;
use crate::graphs::{GraphCache, GraphLoadError, RegistryFactory};
use crate::versions::GraphVersion;
use crate::ServerState;
use agentgraph_dsl::ast::{ExprKind, File, GraphItem, NodeDecl, NodeKind, SubgraphRef};
use agentgraph_dsl::{Diagnostic, Project};
use agentgraph_runtime::CompiledGraph;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The default time between two polls of the graph files.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// The files a graph was built from and a hash of each one's content (`None`: missing).
pub type Deps = BTreeMap<PathBuf, Option<u64>>;

/// Whether a graph's latest check passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphHealth {
    /// The latest version of the files compiled; it is the one serving.
    Ok,
    /// The latest version of the files has errors; the last good version keeps serving.
    Error,
}

/// What the server knows about one compiled graph file.
#[derive(Debug, Clone, Serialize)]
pub struct GraphStatus {
    /// The name runs use: the path under the graphs folder without `.ag`.
    pub name: String,
    /// The path under the graphs folder.
    pub path: String,
    /// Rises by one each time a new version is compiled and replaces the serving one (1 for
    /// the first).
    pub version: u64,
    /// The serving version's id ([`crate::GraphVersion::id`]: a hash of its files).
    pub hash: String,
    /// Whether the files as they are now compiled.
    pub status: GraphHealth,
    /// The latest check's diagnostics (errors and warnings), each the JSON form (`code`,
    /// `severity`, `message`, `file`, `span` with `line`/`column`, …) plus `rendered`: the
    /// text form with the source excerpt.
    pub diagnostics: Vec<Value>,
    /// The files the latest check read, with their content hashes.
    #[serde(skip)]
    pub deps: Deps,
}

/// The outcome of loading and checking one graph file.
pub(crate) struct Checked {
    pub(crate) result: Result<CompiledGraph, GraphLoadError>,
    /// The files as loaded (`None` when the root file could not be read).
    pub(crate) version: Option<Arc<GraphVersion>>,
    pub(crate) deps: Deps,
    pub(crate) diagnostics: Vec<Value>,
}

fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

fn fingerprint(p: &Path) -> Option<u64> {
    std::fs::read(p).ok().map(|b| hash_bytes(&b))
}

/// A hash of a whole dependency set (hex).
pub(crate) fn deps_hash(deps: &Deps) -> String {
    let mut h = DefaultHasher::new();
    deps.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Files a parsed file refers to: `use`d files, subgraph paths and `file(…)` prompts.
fn referenced(f: &File, dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = f.uses.iter().map(|u| dir.join(&u.path.value)).collect();
    for g in &f.graphs {
        for item in &g.items {
            match item {
                GraphItem::Node(NodeDecl {
                    kind: Some(NodeKind::Subgraph(SubgraphRef::Path(p))),
                    ..
                }) => out.push(dir.join(&p.value)),
                GraphItem::Prompt(p) => {
                    if let ExprKind::Call { func, args } = &p.value.kind {
                        if func.name == "file" {
                            if let Some(ExprKind::Str { lit }) = args.first().map(|a| &a.kind) {
                                out.push(dir.join(&lit.value));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The files `project` was built from, hashed: loaded sources by the text that was checked,
/// other references (prompts, missing files) as they are on disk.
fn project_deps(project: &Project) -> Deps {
    let mut deps = Deps::new();
    for (k, src) in &project.sources {
        deps.insert(k.clone(), Some(hash_bytes(src.text.as_bytes())));
    }
    for src in project.sources.values() {
        let Some(ast) = &src.ast else { continue };
        let dir = src.path.parent().map(Path::to_path_buf).unwrap_or_default();
        for r in referenced(ast, &dir) {
            let k = key(&r);
            deps.entry(k).or_insert_with_key(|k| fingerprint(k));
        }
    }
    deps
}

/// Loads, checks and compiles `path`, noting the files it was built from.
pub(crate) fn check_file(
    path: &Path,
    registry: &RegistryFactory,
    storage: &GraphStorage,
) -> Checked {
    let project = match Project::load(path) {
        Ok(p) => p,
        Err(e) => {
            let mut deps = Deps::new();
            deps.insert(path.to_path_buf(), fingerprint(path));
            let msg = e.to_string();
            return Checked {
                result: Err(GraphLoadError::Io(msg.clone())),
                version: None,
                deps,
                diagnostics: vec![serde_json::json!({
                    "code": "IO", "severity": "error", "message": msg, "rendered": msg,
                    "file": path.display().to_string(),
                })],
            };
        }
    };
    let deps = project_deps(&project);
    let version = Some(Arc::new(GraphVersion::of(&project)));
    let reg = registry();
    let render = |d: &Diagnostic| {
        let mut v = project.to_json(d);
        if let Some(o) = v.as_object_mut() {
            o.insert("rendered".into(), project.render(d, false, 100).into());
        }
        v
    };
    match project.check_and_compile(&reg) {
        Ok(compiled) => {
            let diagnostics = compiled.warnings.iter().map(render).collect();
            Checked {
                result: Ok(storage.attach(compiled.graph)),
                version,
                deps,
                diagnostics,
            }
        }
        Err(diags) => {
            let errors = diags.iter().filter(|d| d.is_error()).count();
            let diagnostics: Vec<Value> = diags.iter().map(render).collect();
            Checked {
                result: Err(GraphLoadError::Invalid {
                    message: format!("{} has {errors} error(s)", path.display()),
                    diagnostics: diagnostics.clone(),
                }),
                version,
                deps,
                diagnostics,
            }
        }
    }
}

/// Whether any file of `deps` differs from what was checked.
fn changed(deps: &Deps) -> bool {
    deps.iter().any(|(p, fp)| fingerprint(p) != *fp)
}

/// Re-checks every cached graph whose files changed since its last check, replacing the
/// serving version when the new one is clean. Returns the files re-checked. Blocking: call
/// it off the async threads.
pub fn recheck_changed(cache: &GraphCache) -> Vec<PathBuf> {
    let mut rechecked = Vec::new();
    for (path, deps) in cache.tracked() {
        if !changed(&deps) {
            continue;
        }
        rechecked.push(path.clone());
        let checked = cache.check(&path);
        let rel = cache.display_name(&path);
        match checked.result {
            Ok(graph) => {
                let version = cache.record_ok(
                    &path,
                    graph,
                    checked.version,
                    checked.deps,
                    checked.diagnostics,
                );
                tracing::info!(graph = %rel, version, "graph reloaded");
            }
            Err(e) => {
                let text: Vec<String> = checked
                    .diagnostics
                    .iter()
                    .filter_map(|d| d["rendered"].as_str().map(str::to_string))
                    .collect();
                let summary = match &e {
                    GraphLoadError::Invalid { message, .. } => message.clone(),
                    GraphLoadError::Io(m)
                    | GraphLoadError::NotFound(m)
                    | GraphLoadError::BadName(m) => m.clone(),
                };
                tracing::warn!(
                    graph = %rel,
                    "graph edit rejected, the previous version keeps serving: {summary}\n{}",
                    text.join("\n")
                );
                cache.record_error(&path, checked.deps, checked.diagnostics);
            }
        }
    }
    rechecked
}

/// Polls the state's graph files every `interval` until the server shuts down, re-checking
/// changed graphs (see [`recheck_changed`]). [`crate::serve_on`] starts it when
/// `ServerConfig::watch` is set.
pub fn spawn_watcher(state: ServerState, interval: Duration) -> tokio::task::JoinHandle<()> {
    let stop = state.inner.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
            let st = state.clone();
            let r = tokio::task::spawn_blocking(move || {
                recheck_changed(st.graphs());
            })
            .await;
            if let Err(e) = r {
                tracing::warn!("graph watcher: a poll failed: {e}");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_runtime::MemoryCheckpointer;

    #[tokio::test]
    async fn prompt_files_are_dependencies() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("prompts")).expect("mkdir");
        let prompt = dir.path().join("prompts/s.md");
        std::fs::write(&prompt, "Be brief.").expect("write");
        std::fs::write(
            dir.path().join("g.ag"),
            "graph g {\n  state {\n    n: int = 0\n  }\n  prompt system = file(\"prompts/s.md\")\n  node a { set { n: 1 } }\n  START -> a -> END\n}\n",
        )
        .expect("write");
        let cache = GraphCache::new(
            dir.path().to_path_buf(),
            crate::default_registry(),
            GraphStorage::checkpoints(Arc::new(MemoryCheckpointer::new())),
        );
        cache.get("g").await.expect("compiles");
        let path = cache.resolve("g").expect("resolves");
        let deps = &cache.status_of(&path).expect("status").deps;
        let prompt = std::fs::canonicalize(&prompt).expect("canonical");
        assert!(deps.contains_key(&prompt), "{deps:?}");
        assert!(recheck_changed(&cache).is_empty(), "nothing changed yet");

        std::fs::write(&prompt, "Be very brief.").expect("write");
        assert_eq!(recheck_changed(&cache), vec![path.clone()]);
        let st = cache.status_of(&path).expect("status");
        assert_eq!((st.version, st.status), (2, GraphHealth::Ok));

        std::fs::remove_file(&prompt).expect("rm");
        assert_eq!(recheck_changed(&cache), vec![path.clone()]);
        let st = cache.status_of(&path).expect("status");
        assert_eq!((st.version, st.status), (2, GraphHealth::Error));
        assert_eq!(st.diagnostics[0]["code"], "E0252", "{:?}", st.diagnostics);
        assert!(
            cache.cached(&path).is_some(),
            "the old version still serves"
        );
        assert!(
            recheck_changed(&cache).is_empty(),
            "a broken file is checked once"
        );
    }
}
