//! A thread's background tasks over HTTP (the agents crate's `orchestration::background`):
//! `GET /threads/{id}/tasks` lists the tasks this process runs or ran for the thread, `POST
//! /threads/{id}/tasks/{task}/cancel` stops one (a stop button), and the thread's cancel
//! (`POST /threads/{id}/cancel`, in `routes.rs`) stops them all.
//!
//! Tasks live in the process that started or resumed them: after a restart a thread's tasks
//! are listed again once the thread is next driven (its task list channel, in the thread's
//! state, keeps them meanwhile).

use crate::error::ApiError;
use crate::routes::check_thread;
use agentgraph_agents::orchestration::background::{registry, BackgroundError};
use axum::extract::Path;
use axum::Json;
use serde_json::{json, Value};

type ApiResult<T> = Result<T, ApiError>;

#[utoipa::path(
    get,
    path = "/threads/{id}/tasks",
    tag = "runs",
    summary = "A thread's background tasks",
    description = "The tasks this process runs or ran for the thread (id, state, role, last result).",
    params(("id" = String, Path, description = "The thread id.")),
    responses(
        (status = 200, description = "`{thread_id, tasks}`.", body = serde_json::Value),
        (status = 400, description = "A bad thread id.", body = crate::openapi::ErrorBody),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such thread (or not the caller's).", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn list(Path(thread): Path<String>) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    Ok(Json(
        json!({"thread_id": thread, "tasks": registry().list(&thread)}),
    ))
}

#[utoipa::path(
    post,
    path = "/threads/{id}/tasks/{task}/cancel",
    tag = "runs",
    summary = "Cancel one background task",
    description = "Stops one running task of the thread; the thread's own cancel stops them all.",
    params(
        ("id" = String, Path, description = "The thread id."),
        ("task" = String, Path, description = "The task id."),
    ),
    responses(
        (status = 200, description = "`{thread_id, task, cancelled: true}`.", body = serde_json::Value),
        (status = 401, description = "No key or token, or a key that is not valid (with authentication on).", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such task (`UNKNOWN_TASK`) or thread.", body = crate::openapi::ErrorBody),
        (status = 409, description = "The task is not running.", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = crate::openapi::ErrorBody),
    ),
)]
pub(crate) async fn cancel(Path((thread, task)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    match registry().cancel(&thread, &task) {
        Ok(_) => Ok(Json(
            json!({"thread_id": thread, "task": task, "cancelled": true}),
        )),
        Err(e @ BackgroundError::UnknownTask { .. }) => {
            Err(ApiError::not_found("UNKNOWN_TASK", e.to_string()))
        }
        Err(e) => Err(ApiError::conflict(e.code(), e.to_string())),
    }
}

/// Cancels every running task of `thread`; their ids.
pub(crate) fn cancel_thread(thread: &str) -> Vec<String> {
    registry().cancel_thread(thread)
}
