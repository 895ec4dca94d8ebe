//! `serve --n8n`: per-thread routes that deploy a builder thread's workflow to n8n, added to
//! the server through [`agentgraph_server::ServerConfig::api_routes`] (so they are in
//! `/openapi.json`).
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
use agentgraph_server::utoipa_axum::router::OpenApiRouter;
use agentgraph_server::utoipa_axum::routes;
use agentgraph_server::{ApiError, ServerState};
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

/// The n8n instance the routes talk to.
#[derive(Clone)]
struct Instance(Arc<N8nClient>);

/// The routes, over one n8n instance.
pub fn routes(client: N8nClient) -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(show))
        .routes(routes!(deploy))
        .routes(routes!(activate))
        .layer(Extension(Instance(Arc::new(client))))
}

const THREAD: &str = "The thread id.";

/// `GET /threads/{id}/n8n`.
#[utoipa::path(
    get,
    path = "/threads/{id}/n8n",
    tag = "n8n",
    summary = "The thread's n8n workflow",
    description = "`{thread_id, workflow_id, url}`, with `null`s before a deploy.",
    params(("id" = String, Path, description = THREAD)),
    responses(
        (status = 200, description = "The deployment.", body = serde_json::Value),
        (status = 404, description = "No such thread (or not the caller's)."),
    ),
)]
async fn show(
    Extension(Instance(client)): Extension<Instance>,
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

/// `POST /threads/{id}/n8n/deploy`.
#[utoipa::path(
    post,
    path = "/threads/{id}/n8n/deploy",
    tag = "n8n",
    summary = "Deploy the thread's workflow to n8n",
    description = "Creates the thread's n8n workflow or updates it, and keeps its id in the \
                   thread's state: `{thread_id, workflow_id, url, created}`.",
    params(("id" = String, Path, description = THREAD)),
    responses(
        (status = 200, description = "Deployed.", body = serde_json::Value),
        (status = 404, description = "No such thread (or not the caller's)."),
        (status = 409, description = "A run is active, the turn is unfinished, or there is nothing to deploy."),
        (status = 422, description = "n8n rejected the workflow, or the graph keeps no workflow id."),
        (status = 502, description = "n8n is unreachable, refused the key, or failed."),
        (status = 504, description = "n8n did not answer in time."),
    ),
)]
async fn deploy(
    instance: Extension<Instance>,
    state: State<ServerState>,
    thread: Path<String>,
) -> Result<Json<Value>, ApiError> {
    act(instance, state, thread, false).await
}

/// `POST /threads/{id}/n8n/activate`.
#[utoipa::path(
    post,
    path = "/threads/{id}/n8n/activate",
    tag = "n8n",
    summary = "Deploy and activate the thread's workflow",
    description = "Deploys, then activates: the deploy's answer plus `active: true`.",
    params(("id" = String, Path, description = THREAD)),
    responses(
        (status = 200, description = "Deployed and active.", body = serde_json::Value),
        (status = 404, description = "No such thread (or not the caller's)."),
        (status = 409, description = "A run is active, the turn is unfinished, or there is nothing to deploy."),
        (status = 422, description = "n8n rejected the workflow, or the graph keeps no workflow id."),
        (status = 502, description = "n8n is unreachable, refused the key, or failed."),
        (status = 504, description = "n8n did not answer in time."),
    ),
)]
async fn activate(
    instance: Extension<Instance>,
    state: State<ServerState>,
    thread: Path<String>,
) -> Result<Json<Value>, ApiError> {
    act(instance, state, thread, true).await
}

/// `POST /threads/{id}/n8n/deploy` and `…/activate`.
async fn act(
    Extension(Instance(client)): Extension<Instance>,
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
