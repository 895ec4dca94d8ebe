//! HTTP API tests: every endpoint and its errors, SSE replay, concurrency, cancel, HITL,
//! restart with persisted events, graceful shutdown.

use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

mod endpoints;
mod events;
mod extend;
mod observability;
mod pickup;
mod restart;
mod runs;
mod studio;

fn graphs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/graphs")
}

struct Server {
    base: String,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), agentgraph_server::ServerError>>,
    http: reqwest::Client,
}

impl Server {
    async fn start(config: ServerConfig) -> Server {
        let state = ServerState::new(&config).expect("state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(serve_on(listener, state, async move {
            let _ = rx.await;
        }));
        Server {
            base: format!("http://{addr}"),
            stop: Some(tx),
            handle,
            http: reqwest::Client::new(),
        }
    }

    async fn memory() -> Server {
        Server::start(ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)).await
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .expect("shutdown in time")
            .expect("join")
            .expect("serve");
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(self.url(path)).send().await.expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Reads SSE events of `thread` after `last` until `stop` says so (or a timeout).
    async fn events_until(
        &self,
        thread: &str,
        last: Option<u64>,
        mut stop: impl FnMut(&Value) -> bool,
    ) -> Vec<(u64, Value)> {
        let mut req = self
            .http
            .get(self.url(&format!("/threads/{thread}/events")));
        if let Some(l) = last {
            req = req.header("Last-Event-ID", l.to_string());
        }
        let resp = req.send().await.expect("sse");
        assert_eq!(resp.status().as_u16(), 200);
        let mut stream = resp.bytes_stream().eventsource();
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let ev = tokio::time::timeout_at(deadline, stream.next())
                .await
                .expect("events in time")
                .expect("stream open")
                .expect("valid event");
            if ev.event == "gap" {
                continue;
            }
            let id: u64 = ev.id.parse().expect("numeric id");
            let data: Value = serde_json::from_str(&ev.data).expect("json data");
            assert_eq!(data["seq"], json!(id), "envelope seq equals the SSE id");
            let done = stop(&data);
            out.push((id, data));
            if done {
                return out;
            }
        }
    }

    /// Waits until no run is active on `thread`.
    async fn wait_idle(&self, thread: &str) {
        for _ in 0..3000 {
            let (_, v) = self.get(&format!("/threads/{thread}/state")).await;
            if v["active"] == false {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("thread {thread} still active");
    }

    /// Events from the start of the thread's log until a run ends.
    async fn run_end(&self, thread: &str, after: u64) -> Vec<(u64, Value)> {
        self.events_until(thread, Some(after), is_end).await
    }
}

fn is_end(d: &Value) -> bool {
    d["mode"] == "run" && d["data"]["status"] != "started"
}

fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}
