//! Finding graph files under the graphs folder and compiling them once.

use crate::backing::GraphStorage;
use crate::error::ApiError;
use crate::events::EventStore;
use crate::reload::{check_file, deps_hash, Checked, Deps, GraphHealth, GraphStatus};
use crate::versions::GraphVersion;
use agentgraph_runtime::CompiledGraph;
use axum::http::StatusCode;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use agentgraph_dsl::RegistryFactory;

/// Why a graph could not be used.
#[derive(Debug, Clone)]
pub enum GraphLoadError {
    /// No such file under the graphs folder (or the name tries to leave it).
    NotFound(String),
    /// The name is not usable (absolute, `..`, empty).
    BadName(String),
    /// The file has errors; the diagnostics as JSON.
    Invalid {
        /// A one-line summary.
        message: String,
        /// Every diagnostic (`Project::to_json`).
        diagnostics: Vec<Value>,
    },
    /// The file could not be read.
    Io(String),
}

/// Rewrites every path under the graphs folder `root` in a check's messages and diagnostics
/// to its path relative to that folder: clients learn where a problem is in the graph, never
/// where the server keeps its files.
fn hide_root(checked: &mut Checked, root: &Path) {
    let mut prefixes: Vec<String> = vec![format!("{}/", root.display())];
    if let Ok(canonical) = root.canonicalize() {
        prefixes.push(format!("{}/", canonical.display()));
    }
    // Longest first, so a prefix of another prefix does not cut it short.
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    prefixes.dedup();
    let scrub = |s: &mut String| {
        for p in &prefixes {
            if s.contains(p.as_str()) {
                *s = s.replace(p.as_str(), "");
            }
        }
    };
    fn walk(v: &mut Value, scrub: &dyn Fn(&mut String)) {
        match v {
            Value::String(s) => scrub(s),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, scrub)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, scrub)),
            _ => {}
        }
    }
    checked.diagnostics.iter_mut().for_each(|d| walk(d, &scrub));
    match &mut checked.result {
        Err(GraphLoadError::Invalid {
            message,
            diagnostics,
        }) => {
            scrub(message);
            diagnostics.iter_mut().for_each(|d| walk(d, &scrub));
        }
        Err(GraphLoadError::Io(m) | GraphLoadError::NotFound(m) | GraphLoadError::BadName(m)) => {
            scrub(m)
        }
        Ok(_) => {}
    }
}

impl From<GraphLoadError> for ApiError {
    fn from(e: GraphLoadError) -> Self {
        match e {
            GraphLoadError::NotFound(m) => ApiError::not_found("GRAPH_NOT_FOUND", m),
            GraphLoadError::BadName(m) => ApiError::bad_request("BAD_GRAPH_NAME", m),
            GraphLoadError::Io(m) => ApiError::internal(m),
            GraphLoadError::Invalid {
                message,
                diagnostics,
            } => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "GRAPH_INVALID", message)
                .with("diagnostics", Value::Array(diagnostics)),
        }
    }
}

/// Compiled graphs by file, compiled on first use. Every graph gets the server's storage
/// (checkpointer, store, node cache).
///
/// A live-reload watcher can call [`GraphCache::compile`] on a changed file and, when it
/// succeeds, [`GraphCache::replace`] the entry: runs already started keep the graph they
/// cloned; the next run uses the new one.
pub struct GraphCache {
    root: PathBuf,
    registry: RegistryFactory,
    storage: GraphStorage,
    graphs: Mutex<HashMap<PathBuf, CompiledGraph>>,
    status: Mutex<HashMap<PathBuf, GraphStatus>>,
    /// The version each cached graph is (absent for graphs given to [`GraphCache::replace`]).
    versions: Mutex<HashMap<PathBuf, Arc<GraphVersion>>>,
    pins: Mutex<HashMap<String, Pin>>,
}

/// The graph version a thread runs on until its run ends for good.
#[derive(Clone)]
struct Pin {
    path: PathBuf,
    graph: CompiledGraph,
    version: Option<Arc<GraphVersion>>,
}

/// A compiled graph and the version it was compiled from (`None` when unknown).
pub type Versioned = (CompiledGraph, Option<Arc<GraphVersion>>);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GraphCache {
    /// A cache over the folder `root`.
    pub fn new(root: PathBuf, registry: RegistryFactory, storage: GraphStorage) -> Self {
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        GraphCache {
            root,
            registry,
            storage,
            graphs: Mutex::new(HashMap::new()),
            status: Mutex::new(HashMap::new()),
            versions: Mutex::new(HashMap::new()),
            pins: Mutex::new(HashMap::new()),
        }
    }

    /// The graphs folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file a graph name designates: `name` if it ends in `.ag`, else `name.ag`, relative
    /// to the graphs folder; never outside it, never a file that is not a graph.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, GraphLoadError> {
        let rel = Path::new(name);
        if name.trim().is_empty()
            || rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(GraphLoadError::BadName(format!(
                "graph `{name}` must be a relative path under the graphs folder, without `..`"
            )));
        }
        // Only `.ag` files are graphs: any other file of the folder (`.env`, a prompt, a
        // script) is never read for a client, so its lines cannot come back in diagnostics.
        let candidates = match rel.extension() {
            Some(ext) if ext == "ag" => vec![self.root.join(rel)],
            _ => vec![self.root.join(format!("{name}.ag"))],
        };
        for c in candidates {
            if let Ok(p) = std::fs::canonicalize(&c) {
                if p.is_file() && p.starts_with(&self.root) {
                    return Ok(p);
                }
            }
        }
        Err(GraphLoadError::NotFound(format!(
            "no graph `{name}` under {}",
            self.root.display()
        )))
    }

    /// Loads, checks and compiles the file `path` (not cached).
    pub fn compile(&self, path: &Path) -> Result<CompiledGraph, GraphLoadError> {
        self.check(path).result
    }

    /// Loads, checks and compiles `path`, noting the files it was built from (not cached).
    pub(crate) fn check(&self, path: &Path) -> Checked {
        let mut checked = check_file(path, &self.registry, &self.storage);
        hide_root(&mut checked, &self.root);
        checked
    }

    /// The compiled graph named `name`, compiling it on first use (on a blocking thread).
    pub async fn get(&self, name: &str) -> Result<CompiledGraph, GraphLoadError> {
        self.get_versioned(name).await.map(|(g, _)| g)
    }

    /// [`GraphCache::get`] with the version the graph was compiled from.
    pub async fn get_versioned(&self, name: &str) -> Result<Versioned, GraphLoadError> {
        let path = self.resolve(name)?;
        if let Some(g) = self.cached(&path) {
            return Ok((g, lock(&self.versions).get(&path).cloned()));
        }
        let (reg, cp, p) = (self.registry.clone(), self.storage.clone(), path.clone());
        let mut checked = tokio::task::spawn_blocking(move || check_file(&p, &reg, &cp))
            .await
            .map_err(|e| GraphLoadError::Io(format!("compiling {}: {e}", self.relative(&path))))?;
        hide_root(&mut checked, &self.root);
        let g = checked.result?;
        let mut graphs = lock(&self.graphs);
        if let Some(g) = graphs.get(&path) {
            return Ok((g.clone(), lock(&self.versions).get(&path).cloned()));
        }
        graphs.insert(path.clone(), g.clone());
        let mut versions = lock(&self.versions);
        match &checked.version {
            Some(v) => versions.insert(path.clone(), v.clone()),
            None => versions.remove(&path),
        };
        drop(versions);
        lock(&self.status).insert(
            path.clone(),
            GraphStatus {
                name: self.display_name(&path),
                path: self.relative(&path),
                version: 1,
                hash: status_hash(checked.version.as_deref(), &checked.deps),
                status: GraphHealth::Ok,
                diagnostics: checked.diagnostics,
                deps: checked.deps,
            },
        );
        Ok((g, checked.version))
    }

    /// The cached graph of a resolved file, if compiled.
    pub fn cached(&self, path: &Path) -> Option<CompiledGraph> {
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned()
    }

    /// Replaces (or adds) the compiled graph of a resolved file; returns the previous one.
    /// The graph's files are unknown, so threads it runs are pinned in memory only.
    pub fn replace(&self, path: PathBuf, graph: CompiledGraph) -> Option<CompiledGraph> {
        lock(&self.versions).remove(&path);
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path, graph)
    }

    /// Forgets a file: the next use compiles it again.
    pub fn invalidate(&self, path: &Path) -> Option<CompiledGraph> {
        lock(&self.versions).remove(path);
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path)
    }

    /// `path` relative to the graphs folder.
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The graph name of a file under the graphs folder: its relative path without `.ag`.
    pub fn display_name(&self, path: &Path) -> String {
        let rel = self.relative(path);
        rel.strip_suffix(".ag").map(str::to_string).unwrap_or(rel)
    }

    /// The live-reload status of every compiled graph, by name.
    pub fn statuses(&self) -> Vec<GraphStatus> {
        let mut all: Vec<GraphStatus> = lock(&self.status).values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The live-reload status of one resolved file, if it was compiled.
    pub fn status_of(&self, path: &Path) -> Option<GraphStatus> {
        lock(&self.status).get(path).cloned()
    }

    /// Compiled files and the files each was last checked with.
    pub(crate) fn tracked(&self) -> Vec<(PathBuf, Deps)> {
        lock(&self.status)
            .iter()
            .map(|(p, s)| (p.clone(), s.deps.clone()))
            .collect()
    }

    /// Serves a new clean version of `path`; returns its version number.
    pub(crate) fn record_ok(
        &self,
        path: &Path,
        graph: CompiledGraph,
        version: Option<Arc<GraphVersion>>,
        deps: Deps,
        diagnostics: Vec<serde_json::Value>,
    ) -> u64 {
        let mut graphs = lock(&self.graphs);
        let mut status = lock(&self.status);
        graphs.insert(path.to_path_buf(), graph);
        let hash = status_hash(version.as_deref(), &deps);
        match version {
            Some(v) => lock(&self.versions).insert(path.to_path_buf(), v),
            None => lock(&self.versions).remove(path),
        };
        let st = status
            .entry(path.to_path_buf())
            .or_insert_with(|| GraphStatus {
                name: self.display_name(path),
                path: self.relative(path),
                version: 0,
                hash: String::new(),
                status: GraphHealth::Ok,
                diagnostics: Vec::new(),
                deps: Deps::new(),
            });
        st.version += 1;
        st.hash = hash;
        st.status = GraphHealth::Ok;
        st.diagnostics = diagnostics;
        st.deps = deps;
        st.version
    }

    /// Notes a broken version of `path` (the serving version stays).
    pub(crate) fn record_error(
        &self,
        path: &Path,
        deps: Deps,
        diagnostics: Vec<serde_json::Value>,
    ) {
        if let Some(st) = lock(&self.status).get_mut(path) {
            st.status = GraphHealth::Error;
            st.diagnostics = diagnostics;
            st.deps = deps;
        }
    }

    /// Keeps `graph` (of file `path`, compiled from `version`) for `thread`, so resuming it
    /// runs the version it started with even after a reload, and, when `store` persists and
    /// the version is known, after a restart. A failure to persist is logged: the pin still
    /// holds in memory.
    pub(crate) fn pin(
        &self,
        store: &EventStore,
        thread: &str,
        path: PathBuf,
        graph: CompiledGraph,
        version: Option<Arc<GraphVersion>>,
    ) {
        let r = match &version {
            Some(v) => store.set_version(thread, v),
            None => store.forget_version(thread),
        };
        if let Err(e) = r {
            tracing::warn!(thread, "cannot store the thread's graph version: {e}");
        }
        lock(&self.pins).insert(
            thread.to_string(),
            Pin {
                path,
                graph,
                version,
            },
        );
    }

    /// Forgets `thread`'s graph (its run ended: the next one uses the newest version).
    pub(crate) fn unpin(&self, store: &EventStore, thread: &str) {
        lock(&self.pins).remove(thread);
        if let Err(e) = store.forget_version(thread) {
            tracing::warn!(thread, "cannot forget the thread's graph version: {e}");
        }
    }

    /// The graph `thread` started with, if it is the file `name` designates and the thread
    /// may still be resumed; else the newest version of `name`. After a restart the pinned
    /// version comes from `store` and is compiled from its stored files (the files on disk
    /// may have changed or gone); if it no longer compiles (a tool it uses was removed from
    /// the server), the newest version is used and a warning logged.
    pub async fn pinned(
        &self,
        store: &EventStore,
        thread: &str,
        name: &str,
    ) -> Result<Versioned, GraphLoadError> {
        let path = self.resolve(name)?;
        if let Some(pin) = lock(&self.pins).get(thread) {
            if pin.path == path {
                return Ok((pin.graph.clone(), pin.version.clone()));
            }
        }
        let stored = match store.version_of(thread) {
            Ok(v) => v.filter(|v| v.root == path),
            Err(e) => {
                tracing::warn!(thread, "cannot read the thread's graph version: {e}");
                None
            }
        };
        // The newest version may not compile (a broken edit before the restart): the stored
        // one still serves the thread.
        let newest = self.get_versioned(name).await;
        let Some(stored) = stored else {
            return newest;
        };
        if let Ok((_, Some(v))) = &newest {
            if v.id == stored.id {
                return newest;
            }
        }
        // Another thread may already run this version.
        let shared = lock(&self.pins)
            .values()
            .find(|p| p.version.as_ref().is_some_and(|v| v.id == stored.id))
            .cloned();
        if let Some(p) = shared {
            return Ok((p.graph, p.version));
        }
        let (reg, cp, v) = (self.registry.clone(), self.storage.clone(), stored.clone());
        let compiled = tokio::task::spawn_blocking(move || v.compile(&reg, &cp))
            .await
            .map_err(|e| GraphLoadError::Io(format!("compiling version {}: {e}", stored.id)))?;
        match compiled {
            Ok(g) => {
                let version = Some(Arc::new(stored));
                lock(&self.pins).insert(
                    thread.to_string(),
                    Pin {
                        path,
                        graph: g.clone(),
                        version: version.clone(),
                    },
                );
                Ok((g, version))
            }
            Err(e) => {
                tracing::warn!(
                    thread,
                    version = %stored.id,
                    "the thread's graph version does not compile any more, resuming on the newest: {e:?}"
                );
                newest
            }
        }
    }

    /// Compiles `version` from its stored files (nothing read from disk), off the async
    /// runtime.
    pub(crate) async fn compile_version(
        &self,
        version: GraphVersion,
    ) -> Result<CompiledGraph, GraphLoadError> {
        let (reg, cp, id) = (
            self.registry.clone(),
            self.storage.clone(),
            version.id.clone(),
        );
        tokio::task::spawn_blocking(move || version.compile(&reg, &cp))
            .await
            .map_err(|e| GraphLoadError::Io(format!("compiling version {id}: {e}")))?
    }

    /// The files compiled so far.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

/// What `GET /graphs` shows as `hash`: the version id, or a hash of the dependency set when
/// the files could not be read.
fn status_hash(version: Option<&GraphVersion>, deps: &Deps) -> String {
    version.map_or_else(|| deps_hash(deps), |v| v.id.clone())
}
