//! An application's own routes (`ServerConfig::routes`): served next to the API, reading a
//! thread through `ServerState::thread_graph`, holding runs off it with `hold_thread`.

use super::*;
use agentgraph_server::{ApiError, ServerState};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};

/// `GET /threads/{id}/count`: the thread's `count` channel, read with the graph it runs.
async fn count(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (graph_name, graph) = state.thread_graph(&thread, None).await?;
    let snap = graph
        .get_state(&thread, None)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let count = snap.map(|s| s.values["count"].clone()).unwrap_or_default();
    Ok(Json(json!({ "graph": graph_name, "count": count })))
}

/// `POST /threads/{id}/hold`: holds the thread, tries a second hold while the first lives,
/// then one after it is dropped; answers the three outcomes' statuses.
async fn hold(
    State(state): State<ServerState>,
    Path(thread): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let status = |r: &Result<_, ApiError>| match r {
        Ok(_) => json!(200),
        Err(e) => json!([e.status.as_u16(), e.code]),
    };
    let first = state.hold_thread(&thread, "test");
    let second = state.hold_thread(&thread, "test");
    let during = status(&second);
    drop(second);
    let held = status(&first);
    drop(first);
    let after = status(&state.hold_thread(&thread, "test"));
    Ok(Json(
        json!({ "first": held, "second": during, "after": after }),
    ))
}

fn app_routes() -> Router<ServerState> {
    Router::new()
        .route("/threads/{id}/count", get(count))
        .route("/threads/{id}/hold", post(hold))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_applications_routes_read_threads_and_hold_runs_off() {
    let config = ServerConfig::new(graphs_dir(), "unused")
        .storage(Storage::Memory)
        .routes(app_routes());
    let s = Server::start(config).await;
    let (st, v) = s
        .post(
            "/threads/t1/runs",
            json!({"graph": "counter", "input": {"limit": 4}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.run_end("t1", 0).await;
    s.wait_idle("t1").await;

    let (st, v) = s.get("/threads/t1/count").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v, json!({"graph": "counter", "count": 4}));
    let (st, v) = s.get("/threads/nobody/count").await;
    assert_eq!((st, &v["error"]["code"]), (404, &json!("THREAD_NOT_FOUND")));
    let (st, v) = s.get("/threads/bad%20id/count").await;
    assert_eq!((st, &v["error"]["code"]), (400, &json!("BAD_THREAD_ID")));

    let (st, v) = s.post("/threads/t1/hold", json!({})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v,
        json!({"first": 200, "second": [409, "RUN_ACTIVE"], "after": 200})
    );
    // The holds are gone: runs start again, and the API's own routes still answer.
    let (st, v) = s
        .post(
            "/threads/t1/runs",
            json!({"graph": "counter", "input": {"limit": 6}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let (st, _) = s.get("/threads").await;
    assert_eq!(st, 200);
    s.wait_idle("t1").await;

    // A thread with a run in flight cannot be held.
    let (st, v) = s
        .post(
            "/threads/t2/runs",
            json!({"graph": "counter", "input": {"limit": 100000000}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let (_, v) = s.post("/threads/t2/hold", json!({})).await;
    assert_eq!(v["first"], json!([409, "RUN_ACTIVE"]), "{v}");
    let (st, _) = s.post("/threads/t2/cancel", json!({})).await;
    assert_eq!(st, 200);
    s.stop().await;
}
