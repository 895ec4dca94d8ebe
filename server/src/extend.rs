//! What an application's own routes ([`crate::ServerConfig::routes`]) use to act on threads:
//! the graph a thread runs, and a hold that keeps runs off a thread while the route works on
//! its state.
//!
//! ```
//! use agentgraph_server::{ApiError, ServerConfig, ServerState};
//! use axum::extract::{Path, State};
//! use axum::routing::get;
//! use axum::{Json, Router};
//! use serde_json::{json, Value};
//!
//! async fn channels(
//!     State(state): State<ServerState>,
//!     Path(thread): Path<String>,
//! ) -> Result<Json<Value>, ApiError> {
//!     let (graph_name, graph) = state.thread_graph(&thread, None).await?;
//!     let names: Vec<&str> = graph.schema().channels().iter().map(|c| c.name.as_str()).collect();
//!     Ok(Json(json!({ "graph": graph_name, "channels": names })))
//! }
//!
//! let config = ServerConfig::new("graphs", "./.agentgraph")
//!     .routes(Router::new().route("/threads/{id}/channels", get(channels)));
//! ```

use crate::error::ApiError;
use crate::runs::{ActiveRun, LifecycleError};
use crate::ServerState;
use agentgraph_runtime::CompiledGraph;

/// Keeps runs off a thread while it lives (they get 409 `RUN_ACTIVE`); see
/// [`ServerState::hold_thread`].
pub struct ThreadHold {
    state: ServerState,
    thread: String,
    id: String,
}

impl Drop for ThreadHold {
    fn drop(&mut self) {
        let mut runs = self.state.runs();
        if runs.get(&self.thread).is_some_and(|r| r.run_id == self.id) {
            runs.remove(&self.thread);
        }
    }
}

impl ServerState {
    /// The graph `thread` runs: `graph` (a name under the graphs folder) when given, else the
    /// one it last ran on this server. 400 `BAD_THREAD_ID`, 404 `THREAD_NOT_FOUND` or
    /// `GRAPH_NOT_FOUND`, 422 `GRAPH_INVALID`.
    pub async fn thread_graph(
        &self,
        thread: &str,
        graph: Option<&str>,
    ) -> Result<(String, CompiledGraph), ApiError> {
        crate::routes::check_thread(thread)?;
        let name = match graph {
            Some(g) => g.to_string(),
            None => self.inner.events.graph_of(thread)?.ok_or_else(|| {
                ApiError::not_found("THREAD_NOT_FOUND", format!("no thread {thread}"))
            })?,
        };
        let compiled = self.inner.graphs.get(&name).await?;
        Ok((name, compiled))
    }

    /// Marks `thread` busy with `what` (e.g. `n8n deploy`) until the hold is dropped, so no run
    /// starts on it meanwhile. 409 `RUN_ACTIVE` while a run (or another hold) is active on it
    /// in this process, 503 `SHUTTING_DOWN` while stopping. Runs on other servers sharing the
    /// storage are not held off.
    pub fn hold_thread(&self, thread: &str, what: &str) -> Result<ThreadHold, ApiError> {
        crate::routes::check_thread(thread)?;
        let id = format!("{what} {}", uuid::Uuid::new_v4().simple());
        let mut runs = self.runs();
        if self.inner.shutdown.is_cancelled() {
            return Err(LifecycleError::ShuttingDown.into());
        }
        if let Some(r) = runs.get(thread) {
            return Err(LifecycleError::Active {
                thread: thread.to_string(),
                run_id: r.run_id.clone(),
            }
            .into());
        }
        runs.insert(
            thread.to_string(),
            ActiveRun {
                run_id: id.clone(),
                cancel: Default::default(),
                fence: None,
            },
        );
        Ok(ThreadHold {
            state: self.clone(),
            thread: thread.to_string(),
            id,
        })
    }
}
