//! The scripted ReAct agent over HTTP: LLM token (`messages`), tool progress (`custom`) and
//! `updates` events arrive over SSE in order, and the run ends `done`. Its own test binary,
//! because it sets `AGENTGRAPH_PROVIDER=scripted` and the working folder (the agent's sled
//! memory is relative to it) for the whole process.

use agentgraph_server::{serve_on, ServerConfig, ServerState};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn scripted_react_agent_streams_tokens_tool_progress_and_updates() {
    let work = tempfile::tempdir().expect("tempdir");
    std::env::set_current_dir(work.path()).expect("cd");
    std::env::set_var("AGENTGRAPH_PROVIDER", "scripted");
    let graphs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs");
    let n8n = agentgraph_n8n::N8n::new(agentgraph_n8n::CatalogueSource::Builtin);
    let config = ServerConfig::new(graphs, work.path().join("db")).registry(n8n.registry_factory());
    let state = ServerState::new(&config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(listener, state, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();

    let r = http
        .post(format!("{base}/threads/agent-1/runs"))
        .json(&json!({
            "graph": "agents/react-agent.ag",
            "input": {"message": "What is 17 * 23 + 4, and what is our refund policy?"},
            "stream_modes": ["updates", "custom", "messages"],
        }))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 202);

    let resp = http
        .get(format!("{base}/threads/agent-1/events?lastEventId=0"))
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
        let end = data["mode"] == "run" && data["data"]["status"] != "started";
        seen.push(data);
        if end {
            break;
        }
    }
    let last = seen.last().expect("end");
    assert_eq!(last["data"]["status"], "done", "{last}");
    let modes: Vec<&str> = seen.iter().filter_map(|e| e["mode"].as_str()).collect();
    for m in ["messages", "custom", "updates"] {
        assert!(modes.contains(&m), "no {m} event in {modes:?}");
    }
    assert!(seen.iter().any(|e| e["mode"] == "custom"
        && e["data"]["tool"] == "calculator"
        && e["data"]["status"] == "completed"));
    let seqs: Vec<u64> = seen.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seen.len() as u64).collect::<Vec<_>>());

    let state: Value = http
        .get(format!("{base}/threads/agent-1/state"))
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    assert!(!state["values"]["output"].is_null(), "{state}");

    let _ = stop.send(());
    server.await.expect("join").expect("serve");
}
