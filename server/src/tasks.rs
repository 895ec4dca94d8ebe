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
use crate::ServerState;
use agentgraph_agents::orchestration::background::{registry, BackgroundError};
use axum::extract::Path;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

type ApiResult<T> = Result<T, ApiError>;

/// The routes.
pub(crate) fn routes() -> Router<ServerState> {
    Router::new()
        .route("/threads/{id}/tasks", get(list))
        .route("/threads/{id}/tasks/{task}/cancel", post(cancel))
}

async fn list(Path(thread): Path<String>) -> ApiResult<Json<Value>> {
    check_thread(&thread)?;
    Ok(Json(
        json!({"thread_id": thread, "tasks": registry().list(&thread)}),
    ))
}

async fn cancel(Path((thread, task)): Path<(String, String)>) -> ApiResult<Json<Value>> {
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
