//! Finding graph files under the graphs folder and compiling them once.

use crate::error::ApiError;
use agentgraph_dsl::{Diagnostic, Project, Registry};
use agentgraph_runtime::{Checkpointer, CompiledGraph};
use axum::http::StatusCode;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Builds the registry of tools, kinds and reducers graphs may use.
pub type RegistryFactory = Arc<dyn Fn() -> Registry + Send + Sync>;

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

/// Compiled graphs by file, compiled on first use. Every graph gets the server's checkpointer.
///
/// A live-reload watcher can call [`GraphCache::compile`] on a changed file and, when it
/// succeeds, [`GraphCache::replace`] the entry: runs already started keep the graph they
/// cloned; the next run uses the new one.
pub struct GraphCache {
    root: PathBuf,
    registry: RegistryFactory,
    checkpointer: Arc<dyn Checkpointer>,
    graphs: Mutex<HashMap<PathBuf, CompiledGraph>>,
}

impl GraphCache {
    /// A cache over the folder `root`.
    pub fn new(
        root: PathBuf,
        registry: RegistryFactory,
        checkpointer: Arc<dyn Checkpointer>,
    ) -> Self {
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        GraphCache {
            root,
            registry,
            checkpointer,
            graphs: Mutex::new(HashMap::new()),
        }
    }

    /// The graphs folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file a graph name designates: `name`, or `name.ag`, relative to the graphs folder;
    /// never outside it.
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
        let mut candidates = vec![self.root.join(rel)];
        if rel.extension().is_none() {
            candidates.push(self.root.join(format!("{name}.ag")));
        }
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
        compile_file(path, &self.registry, &self.checkpointer)
    }

    /// The compiled graph named `name`, compiling it on first use (on a blocking thread).
    pub async fn get(&self, name: &str) -> Result<CompiledGraph, GraphLoadError> {
        let path = self.resolve(name)?;
        if let Some(g) = self.cached(&path) {
            return Ok(g);
        }
        let (reg, cp, p) = (
            self.registry.clone(),
            self.checkpointer.clone(),
            path.clone(),
        );
        let g = tokio::task::spawn_blocking(move || compile_file(&p, &reg, &cp))
            .await
            .map_err(|e| GraphLoadError::Io(format!("compiling {}: {e}", path.display())))??;
        let mut graphs = self.graphs.lock().unwrap_or_else(|p| p.into_inner());
        Ok(graphs.entry(path).or_insert(g).clone())
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
    pub fn replace(&self, path: PathBuf, graph: CompiledGraph) -> Option<CompiledGraph> {
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path, graph)
    }

    /// Forgets a file: the next use compiles it again.
    pub fn invalidate(&self, path: &Path) -> Option<CompiledGraph> {
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path)
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

fn compile_file(
    path: &Path,
    registry: &RegistryFactory,
    checkpointer: &Arc<dyn Checkpointer>,
) -> Result<CompiledGraph, GraphLoadError> {
    let project = Project::load(path).map_err(|e| GraphLoadError::Io(e.to_string()))?;
    let reg = registry();
    match project.compile(&reg) {
        Ok(g) => Ok(g.with_checkpointer(checkpointer.clone())),
        Err(diags) => {
            let errors = diags.iter().filter(|d| d.is_error()).count();
            Err(GraphLoadError::Invalid {
                message: format!("{} has {errors} error(s)", path.display()),
                diagnostics: diags
                    .iter()
                    .map(|d: &Diagnostic| project.to_json(d))
                    .collect(),
            })
        }
    }
}
