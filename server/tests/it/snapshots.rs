//! Snapshots (insta) of what the server sends: the JSON error bodies of refused runs, and the
//! event sequence of a run over SSE, with run ids, checkpoint ids, the graph's version hash and
//! the graphs folder redacted. Review changes with
//! `cargo insta review`; under `CI=true` a mismatch fails.

use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

fn graphs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/graphs")
}

/// A server on a free port over `tests/graphs`, in memory; returns its base URL and its stop.
async fn start() -> (String, tokio::sync::oneshot::Sender<()>) {
    let graphs = graphs_dir();
    let config = ServerConfig::new(graphs, "unused").storage(Storage::Memory);
    let state = ServerState::new(&config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_on(listener, state, async move {
        let _ = stopped.await;
    }));
    (base, stop)
}

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .expect("send");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_runs_have_a_status_and_a_json_error_body() {
    let (base, stop) = start().await;
    let mut bodies = Vec::new();
    for body in [
        json!({"graph": "nope"}),
        json!({"graph": "../Cargo.toml"}),
        json!({"graph": "counter", "input": {"limit": "five"}}),
    ] {
        let (status, answer) = post(&base, "/threads/t/runs", body.clone()).await;
        bodies.push(json!({"request": body, "status": status, "body": answer}));
    }
    // Messages name the graphs folder, which depends on the checkout.
    let text = serde_json::to_string(&bodies)
        .unwrap()
        .replace(&graphs_dir().display().to_string(), "[graphs]");
    let bodies: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("refused_run_error_bodies", bodies);
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_streams_its_events_in_order() {
    let (base, stop) = start().await;
    let (status, answer) = post(
        &base,
        "/threads/snap/runs",
        json!({"graph": "counter", "input": {"limit": 2}, "stream_modes": ["updates", "values"]}),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let resp = reqwest::Client::new()
        .get(format!("{base}/threads/snap/events?lastEventId=0"))
        .send()
        .await
        .expect("sse");
    let mut events = resp.bytes_stream().eventsource();
    let mut seen: Vec<Value> = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), events.next())
            .await
            .expect("in time")
            .expect("open")
            .expect("event");
        let data: Value = serde_json::from_str(&ev.data).expect("json");
        assert_eq!(ev.id, data["seq"].to_string(), "the SSE id is the seq");
        let end = data["mode"] == "run" && data["data"]["status"] != "started";
        seen.push(data);
        if end {
            break;
        }
    }
    insta::assert_json_snapshot!("counter_run_event_sequence", seen, {
        "[].data.run_id" => "[run id]",
        "[].data.checkpoint_id" => "[checkpoint id]",
        "[].data.graph_version" => "[graph version]",
    });
    let _ = stop.send(());
}
