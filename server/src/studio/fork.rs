//! `POST /threads/{id}/fork` `{checkpoint_id, values?, graph?, stream_modes?}` → 202 (as runs):
//! continues the thread from an older checkpoint of its history, as `agentgraph fork` does.
//! With `values`, they are first written as the checkpoint's last node would have (the update
//! branches from that checkpoint); the run's checkpoints then form a branch of the history next
//! to the one it forked from. 409 while a run is active, 400 `BAD_CHECKPOINT_ID`, 404
//! `THREAD_NOT_FOUND`.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{
    body, check_thread, confine_session, durability, modes, open_error, run_error, run_permit,
    start, ApiResult,
};
use crate::runs;
use crate::thread_run::{open_run, Opening};
use crate::ServerState;
use agentgraph_runtime::{CheckpointId, RunConfig, RunError};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, Path, State};
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

/// `POST /threads/{id}/fork` body.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkRequest {
    /// The checkpoint to continue from (an id of the thread's history).
    checkpoint_id: String,
    /// Channel values written at that checkpoint before the run continues.
    #[serde(default)]
    values: Option<Value>,
    /// The graph (default: the one the thread last ran).
    #[serde(default)]
    graph: Option<String>,
    /// Modes to stream (default updates, custom, messages).
    #[serde(default)]
    stream_modes: Option<Vec<String>>,
    /// When checkpoints reach the disk (as for a run; default: the server's).
    #[serde(default)]
    durability: Option<String>,
}

#[utoipa::path(
    post,
    path = "/threads/{id}/fork",
    tag = "runs",
    summary = "Fork from a checkpoint",
    description = "Continues the thread from an older checkpoint (optionally with channel values written there) and streams the events.",
    params(("id" = String, Path, description = "The thread id: 1 to 128 letters, digits, `_`, `.`, `:` or `-`.")),
    request_body(content = ForkRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The run's events as server-sent events (`id:` is the event id to resume from with `Last-Event-ID`).", content_type = "text/event-stream"),
        (status = 400, description = "A bad checkpoint id or body.", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread or checkpoint (or not the caller's).", body = crate::openapi::ErrorBody),
        (status = 409, description = "The thread is running.", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 429, description = "A per-principal limit was reached; `Retry-After` says when to try again.", body = crate::openapi::ErrorBody)
    ),
)]
pub(crate) async fn fork(
    State(state): State<ServerState>,
    Extension(caller): Extension<Caller>,
    Path(thread): Path<String>,
    req: Result<Json<ForkRequest>, JsonRejection>,
) -> ApiResult<Response> {
    check_thread(&thread)?;
    let req = body(req)?;
    let id: CheckpointId = req.checkpoint_id.parse().map_err(|e| {
        ApiError::bad_request("BAD_CHECKPOINT_ID", format!("`{}`: {e}", req.checkpoint_id))
    })?;
    let modes = modes(req.stream_modes)?;
    let durability = durability(&state, req.durability.as_deref())?;
    runs::ensure_idle(&state, &thread)?;
    let (name, graph) = crate::routes::thread_graph_pinned(&state, &thread, req.graph).await?;
    let missing = || {
        ApiError::not_found(
            "CHECKPOINT_NOT_FOUND",
            format!("thread {thread} has no checkpoint {id}"),
        )
    };
    match graph.0.get_state(&thread, Some(id)).await {
        Ok(Some(_)) => {}
        Ok(None) | Err(RunError::CheckpointNotFound { .. }) => return Err(missing()),
        Err(e) => return Err(run_error(e)),
    }
    let from = match req.values {
        None | Some(Value::Null) => id,
        Some(v) => graph
            .0
            .update_state(&thread, Some(id), v, None)
            .await
            .map_err(run_error)?,
    };
    let mut config = RunConfig::thread(thread.clone())
        .modes(modes)
        .durability(durability)
        .at(from);
    confine_session(&caller, &thread, &mut config);
    let permit = run_permit(&state, &caller)?;
    let run = open_run(&graph.0, Opening::Continue, config)
        .await
        .map_err(open_error)?;
    start(&state, &thread, &name, graph, run, permit).await
}
