//! The studio's JSON routes: the graphs folder as it is on disk, and one graph's diagram and
//! channels.
//!
//! - `GET /studio/graphs` → `{graphs: [{name, path}]}`: every `.ag` file under the graphs folder
//!   (hidden folders skipped, nothing outside the folder followed), whether or not it has run.
//! - `GET /studio/graphs/{name}` → `{name, path, diagram, channels?, input?, error?}`: the
//!   DSL's diagram structure (`agentgraph_dsl::viz::json`), and when the graph compiles its
//!   channels `[{name, type, reducer, default, input}]` and input channel names; when it does
//!   not, `error` `{code, message, diagnostics?}`. 404 `GRAPH_NOT_FOUND` for a name that is not
//!   a `.ag` file under the folder, 400 `BAD_GRAPH_NAME` for one that tries to leave it.

use crate::error::ApiError;
use crate::ServerState;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Folders deeper than this under the graphs folder are not listed.
const MAX_DEPTH: usize = 8;
/// At most this many graphs are listed.
const MAX_GRAPHS: usize = 2000;

/// Every `.ag` file under `root`, relative, sorted; hidden entries and anything whose real path
/// leaves `root` (a symbolic link out) skipped.
pub(crate) fn graph_files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if out.len() >= MAX_GRAPHS {
                return;
            }
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| n.starts_with('.'));
            let Ok(real) = std::fs::canonicalize(&p) else {
                continue;
            };
            if hidden || !real.starts_with(root) {
                continue;
            }
            if real.is_dir() {
                if depth < MAX_DEPTH {
                    walk(root, &p, depth + 1, out);
                }
            } else if real.is_file() && p.extension().is_some_and(|e| e == "ag") {
                if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.to_path_buf());
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, 0, &mut out);
    out
}

/// Reads `path` if it is a `.ag` file under `root` (its real path); refuses anything else.
fn confined_read(root: &Path, path: &Path) -> std::io::Result<String> {
    let real = std::fs::canonicalize(path)?;
    if real.starts_with(root) && real.extension().is_some_and(|e| e == "ag") {
        std::fs::read_to_string(real)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "only graph files of the graphs folder are read for a diagram",
        ))
    }
}

/// The graph name of a relative `.ag` path: the path without `.ag`, `/`-separated.
fn name_of(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let joined = parts.join("/");
    joined
        .strip_suffix(".ag")
        .map(str::to_string)
        .unwrap_or(joined)
}

#[utoipa::path(
    get,
    path = "/studio/graphs",
    tag = "studio",
    summary = "Graph files",
    description = "Every `.ag` file under the graphs folder, read from disk before any run.",
    responses(
        (status = 200, description = "`{graphs: [...]}`.", body = serde_json::Value),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Result<Json<Value>, ApiError> {
    let root = state.inner.graphs.root().to_path_buf();
    let files = tokio::task::spawn_blocking(move || graph_files(&root))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let graphs: Vec<Value> = files
        .iter()
        .map(|rel| json!({ "name": name_of(rel), "path": rel.to_string_lossy() }))
        .collect();
    Ok(Json(json!({ "graphs": graphs })))
}

#[utoipa::path(
    get,
    path = "/studio/graphs/{*name}",
    tag = "studio",
    summary = "A graph's structure",
    description = "The graph's nodes, edges and subgraphs, for drawing; or its diagnostics when it does not compile.",
    params(("name" = String, Path, description = "A relative `.ag` path under the graphs folder.")),
    responses(
        (status = 200, description = "The structure.", body = serde_json::Value),
        (status = 404, description = "No such graph file.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn diagram(
    State(state): State<ServerState>,
    UrlPath(name): UrlPath<String>,
) -> Result<Json<Value>, ApiError> {
    let graphs = &state.inner.graphs;
    // Only `.ag` files under the graphs folder (the resolver's rule).
    let path = graphs.resolve(&name)?;
    let name = graphs.display_name(&path);
    let (file, root) = (path.clone(), graphs.root().to_path_buf());
    let drawn = tokio::task::spawn_blocking(move || {
        let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
        // The diagram reads `use`d and subgraph files only when they are graphs of the folder.
        let read = |p: &Path| confined_read(&root, p);
        let project = agentgraph_dsl::Project::from_source_with(&file, text, &read);
        agentgraph_dsl::viz::structure(&project)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?;
    let diagram =
        drawn.map_err(|m| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "GRAPH_INVALID", m))?;
    let rel = path
        .strip_prefix(graphs.root())
        .unwrap_or(&path)
        .to_string_lossy()
        .into_owned();
    let mut out = json!({ "name": name, "path": rel, "diagram": diagram });
    match graphs.get(&name).await {
        Ok(g) => {
            let schema = g.schema();
            let inputs = schema.input_keys();
            let channels: Vec<Value> = schema
                .channels()
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "type": c.ty.to_string(),
                        "reducer": c.reducer.name(),
                        "default": c.default,
                        "input": inputs.contains(&c.name.as_str()),
                    })
                })
                .collect();
            out["channels"] = json!(channels);
            out["input"] = json!(inputs);
        }
        Err(e) => {
            let resp = ApiError::from(e).into_response();
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            out["error"] = v["error"].clone();
            if let Some(d) = v.get("diagnostics") {
                out["error"]["diagnostics"] = d.clone();
            }
        }
    }
    Ok(Json(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ag_files_only_skipping_hidden_and_outside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("graphs");
        std::fs::create_dir_all(root.join("sub/deeper")).expect("mkdir");
        std::fs::create_dir_all(root.join(".hidden")).expect("mkdir");
        std::fs::write(root.join("a.ag"), "").expect("write");
        std::fs::write(root.join("notes.md"), "").expect("write");
        std::fs::write(root.join("sub/deeper/b.ag"), "").expect("write");
        std::fs::write(root.join(".hidden/c.ag"), "").expect("write");
        std::fs::write(dir.path().join("outside.ag"), "").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("outside.ag"), root.join("link.ag"))
            .expect("symlink");
        let root = std::fs::canonicalize(&root).expect("canonical");
        let names: Vec<String> = graph_files(&root).iter().map(|p| name_of(p)).collect();
        assert_eq!(names, ["a", "sub/deeper/b"]);
        assert!(confined_read(&root, &root.join("a.ag")).is_ok());
        assert!(confined_read(&root, &root.join("notes.md")).is_err());
        assert!(confined_read(&root, &dir.path().join("outside.ag")).is_err());
        #[cfg(unix)]
        assert!(confined_read(&root, &root.join("link.ag")).is_err());
    }
}
