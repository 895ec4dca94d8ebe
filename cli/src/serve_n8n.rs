//! `serve --n8n`: per-thread routes that deploy a builder thread's workflow to n8n, added to
//! the server through [`agentgraph_server::ServerConfig::routes`].
//!
//! - `GET /threads/{id}/n8n` → `{thread_id, workflow_id, url}` (`null`s before a deploy);
//! - `POST /threads/{id}/n8n/deploy` → `{thread_id, workflow_id, url, created}`: creates the
//!   thread's n8n workflow or updates it, and keeps its id in the thread's state;
//! - `POST /threads/{id}/n8n/activate` → the same plus `active: true`: deploys, then activates.
//!
//! Errors: 422 `N8N_REJECTED` (n8n's message, and `node` when it names one), 502
//! `N8N_UNREACHABLE` / `N8N_UNAUTHORIZED` / `N8N_FAILED`, 504 `N8N_TIMEOUT`, 409
//! `RUN_ACTIVE` / `TURN_UNFINISHED` / `NOTHING_TO_DEPLOY`, 404 `THREAD_NOT_FOUND`, 422
//! `GRAPH_NOT_DEPLOYABLE` (no `n8n_workflow_id` channel).

use agentgraph_n8n::client::{ClientError, N8nClient};
use agentgraph_n8n::deploy::{self, DeployError, Deployment};
use agentgraph_server::{ApiError, ServerState};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::Arc;

/// The routes, over one n8n instance.
pub fn routes(client: N8nClient) -> Router<ServerState> {
    let client = Arc::new(client);
    let (c1, c2, c3) = (client.clone(), client.clone(), client);
    Router::new()
        .route(
            "/threads/{id}/n8n",
            get(move |s: State<ServerState>, p: Path<String>| show(c1.clone(), s, p)),
        )
        .route(
            "/threads/{id}/n8n/deploy",
            post(move |s: State<ServerState>, p: Path<String>| act(c2.clone(), s, p, false)),
        )
        .route(
            "/threads/{id}/n8n/activate",
            post(move |s: State<ServerState>, p: Path<String>| act(c3.clone(), s, p, true)),
        )
}

/// `GET /threads/{id}/n8n`.
async fn show(
    client: Arc<N8nClient>,
    State(state): State<ServerState>,
    Path(thread): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (_, graph) = state.thread_graph(&thread, None).await?;
    let snapshot = graph
        .get_state(&thread, None)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or_else(|| ApiError::not_found("THREAD_NOT_FOUND", format!("no thread {thread}")))?;
    let id = deploy::deployed_id(&snapshot.values);
    Ok(Json(json!({
        "thread_id": thread,
        "workflow_id": id,
        "url": id.map(|id| client.editor_url(id)),
    })))
}

/// `POST /threads/{id}/n8n/deploy` and `…/activate`.
async fn act(
    client: Arc<N8nClient>,
    State(state): State<ServerState>,
    Path(thread): Path<String>,
    activate: bool,
) -> Result<Json<Value>, ApiError> {
    let (_, graph) = state.thread_graph(&thread, None).await?;
    let _hold = state.hold_thread(&thread, "n8n deploy")?;
    let result = if activate {
        deploy::activate_thread(&client, &graph, &thread).await
    } else {
        deploy::deploy_thread(&client, &graph, &thread).await
    };
    let Deployment {
        id, url, created, ..
    } = result.map_err(api_error)?;
    let mut body =
        json!({ "thread_id": thread, "workflow_id": id, "url": url, "created": created });
    if activate {
        body["active"] = json!(true);
    }
    Ok(Json(body))
}

/// A deploy error as HTTP: n8n's judgement of the workflow 422, n8n's own trouble 502/504,
/// the thread's state 404/409.
fn api_error(e: DeployError) -> ApiError {
    let message = e.to_string();
    match e {
        DeployError::Client(c) => match c {
            ClientError::Rejected { node, .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "N8N_REJECTED", message)
                    .with("node", json!(node))
            }
            ClientError::Unreachable { .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "N8N_UNREACHABLE", message)
            }
            ClientError::Timeout { .. } => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "N8N_TIMEOUT", message)
            }
            ClientError::Unauthorized { .. } | ClientError::Forbidden { .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "N8N_UNAUTHORIZED", message)
            }
            _ => ApiError::new(StatusCode::BAD_GATEWAY, "N8N_FAILED", message),
        },
        DeployError::NoThread(_) => ApiError::not_found("THREAD_NOT_FOUND", message),
        DeployError::Unfinished { .. } => ApiError::conflict("TURN_UNFINISHED", message),
        DeployError::Empty => ApiError::conflict("NOTHING_TO_DEPLOY", message),
        DeployError::NoChannel(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "GRAPH_NOT_DEPLOYABLE",
            message,
        ),
        DeployError::State { .. } => ApiError::internal(message),
    }
}
