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

#[tokio::test(flavor = "multi_thread")]
async fn run_state_history_and_threads() {
    let s = Server::memory().await;
    let (st, v) = s
        .post(
            "/threads/t1/runs",
            json!({"graph": "counter", "input": {"limit": 5}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    assert_eq!(v["thread_id"], "t1");
    let run_id = v["run_id"].as_str().expect("run id").to_string();
    let evs = s.run_end("t1", 0).await;
    let end = &evs.last().expect("end").1;
    assert_eq!(end["data"]["status"], "done");
    assert_eq!(end["data"]["run_id"], json!(run_id));
    assert_eq!(evs[0].1["data"]["status"], "started");
    let updates: Vec<_> = evs.iter().filter(|(_, d)| d["mode"] == "updates").collect();
    assert_eq!(updates.len(), 5);
    assert_eq!(updates[0].1["node"], "bump");
    assert_eq!(updates[0].1["ns"], json!([]));

    let (st, v) = s.get("/threads/t1/state").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["values"]["count"], 5);
    assert_eq!(v["next"], json!([]));
    assert_eq!(v["graph"], "counter");
    assert_eq!(v["active"], false);

    let (st, v) = s.get("/threads/t1/history?limit=3").await;
    assert_eq!(st, 200);
    assert_eq!(v["history"].as_array().map(Vec::len), Some(3));
    let (_, all) = s.get("/threads/t1/history").await;
    assert!(all["history"].as_array().map(Vec::len).unwrap_or(0) > 5);

    let (st, v) = s.get("/threads").await;
    assert_eq!(st, 200);
    assert_eq!(v["threads"][0]["thread_id"], "t1");
    assert_eq!(v["threads"][0]["graph"], "counter");

    // A graph by relative path.
    let (st, v) = s
        .post(
            "/threads/t2/runs",
            json!({"graph": "nested/deep.ag", "input": {"limit": 2}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.run_end("t2", 0).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_have_codes_and_statuses() {
    let config = ServerConfig {
        max_body_bytes: 16 * 1024,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    let cases = [
        (json!({"graph": "nope"}), 404, "GRAPH_NOT_FOUND"),
        (json!({"graph": "../Cargo.toml"}), 400, "BAD_GRAPH_NAME"),
        (json!({"graph": "/etc/passwd"}), 400, "BAD_GRAPH_NAME"),
        (json!({"graph": "counter", "input": [1]}), 400, "BAD_INPUT"),
        // A typed channel refuses the value: refused before the run starts.
        (
            json!({"graph": "counter", "input": {"limit": "five"}}),
            400,
            "BAD_INPUT",
        ),
        (
            json!({"graph": "counter", "stream_modes": ["loud"]}),
            400,
            "BAD_STREAM_MODE",
        ),
        (json!({"input": {}}), 400, "BAD_REQUEST"),
        (json!({"graph": "counter", "bogus": 1}), 400, "BAD_REQUEST"),
        (json!({"graph": "broken"}), 422, "GRAPH_INVALID"),
    ];
    for (body, status, code) in cases {
        let (st, v) = s.post("/threads/e1/runs", body.clone()).await;
        assert_eq!((st, error_code(&v)), (status, code), "{body} -> {v}");
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    // 422 carries the diagnostics.
    let (_, v) = s.post("/threads/e1/runs", json!({"graph": "broken"})).await;
    let diags = v["error"]["diagnostics"].as_array().expect("diagnostics");
    assert!(
        diags.iter().any(|d| d.to_string().contains("nowhere")),
        "{v}"
    );

    // A thread of one graph is not re-bound to another: 409 before anything runs, and its
    // state stays readable.
    let (st, v) = s
        .post(
            "/threads/m1/runs",
            json!({"graph": "counter", "input": {"limit": 2}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_idle("m1").await;
    let (st, v) = s
        .post("/threads/m1/runs", json!({"graph": "approval"}))
        .await;
    assert_eq!((st, error_code(&v)), (409, "THREAD_GRAPH_MISMATCH"), "{v}");
    let (st, v) = s.get("/threads/m1/state").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["values"]["count"], 2, "{v}");

    // recursion_limit 0 could never run a step.
    let (st, v) = s
        .post(
            "/threads/e1/runs",
            json!({"graph": "counter", "recursion_limit": 0}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (400, "BAD_REQUEST"), "{v}");
    // Resume takes no body at all (every field is optional).
    let r = s
        .http
        .post(s.url("/threads/never-ran/resume"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 404);
    let v: Value = r.json().await.expect("json");
    assert_eq!(error_code(&v), "THREAD_NOT_FOUND", "{v}");

    // Malformed JSON.
    let r = s
        .http
        .post(s.url("/threads/e1/runs"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.expect("json");
    assert_eq!(error_code(&v), "BAD_REQUEST");

    // Too large.
    let big = "x".repeat(64 * 1024);
    let (st, v) = s
        .post(
            "/threads/e1/runs",
            json!({"graph": "counter", "input": {"pad": big}}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (413, "PAYLOAD_TOO_LARGE"), "{v}");

    // Bad thread id, unknown thread, unknown endpoint, bad Last-Event-ID.
    let (st, v) = s.get("/threads/bad%20id/state").await;
    assert_eq!((st, error_code(&v)), (400, "BAD_THREAD_ID"));
    let (st, v) = s.get("/threads/ghost/state").await;
    assert_eq!((st, error_code(&v)), (404, "THREAD_NOT_FOUND"));
    let (st, v) = s.get("/threads/ghost/history").await;
    assert_eq!((st, error_code(&v)), (404, "THREAD_NOT_FOUND"));
    let (st, v) = s.get("/threads/ghost/state?graph=counter").await;
    assert_eq!(
        (st, error_code(&v)),
        (404, "THREAD_NOT_FOUND"),
        "no checkpoint"
    );
    let (st, v) = s.get("/threads/ghost/state?graph=nope").await;
    assert_eq!((st, error_code(&v)), (404, "GRAPH_NOT_FOUND"));
    let (st, v) = s.post("/threads/ghost/resume", json!({"value": 1})).await;
    assert_eq!((st, error_code(&v)), (404, "THREAD_NOT_FOUND"));
    let (st, v) = s.get("/nowhere").await;
    assert_eq!((st, error_code(&v)), (404, "NOT_FOUND"));
    let (st, v) = s.get("/threads/e1/events?lastEventId=abc").await;
    assert_eq!((st, error_code(&v)), (400, "BAD_LAST_EVENT_ID"));
    let (st, v) = s.get("/threads/e1/history?limit=many").await;
    assert_eq!((st, error_code(&v)), (400, "BAD_QUERY"));

    // Nothing to resume on a finished thread.
    let (st, _) = s
        .post(
            "/threads/fin/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    s.run_end("fin", 0).await;
    let (st, v) = s.post("/threads/fin/resume", json!({"value": 1})).await;
    assert_eq!((st, error_code(&v)), (400, "NOTHING_TO_RESUME"), "{v}");

    // Cancel is idempotent: 200 with nothing running.
    let (st, v) = s.post("/threads/fin/cancel", json!({})).await;
    assert_eq!(st, 200);
    assert_eq!(v["cancelled"], false);
    let (st, _) = s.post("/threads/never-ran/cancel", json!({})).await;
    assert_eq!(st, 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn second_concurrent_run_gets_409_then_cancel_and_resume_to_the_end() {
    let s = Server::memory().await;
    let limit = 20_000;
    let (st, v) = s
        .post(
            "/threads/c1/runs",
            json!({"graph": "counter", "input": {"limit": limit}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    // Wait for the run to be under way.
    s.events_until("c1", Some(0), |d| {
        d["mode"] == "updates" && d["data"]["bump"]["count"] == 10
    })
    .await;

    let (st, v) = s
        .post(
            "/threads/c1/runs",
            json!({"graph": "counter", "input": {"limit": 2}}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (409, "RUN_ACTIVE"), "{v}");
    let (st, v) = s.post("/threads/c1/resume", json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "RUN_ACTIVE"), "{v}");
    let (_, v) = s.get("/threads/c1/state").await;
    assert_eq!(v["active"], true);

    let (st, v) = s.post("/threads/c1/cancel", json!({})).await;
    assert_eq!(st, 200);
    assert_eq!(v["cancelled"], true);
    let (st, _) = s.post("/threads/c1/cancel", json!({})).await;
    assert_eq!(st, 200, "cancel twice is fine");
    let evs = s.run_end("c1", 0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "cancelled");

    // The cancelled run left a resumable checkpoint.
    let (_, state) = s.get("/threads/c1/state").await;
    let count = state["values"]["count"].as_i64().expect("count");
    assert!(count >= 10 && count < limit, "count {count}");
    assert_eq!(state["next"], json!(["bump"]));
    assert_eq!(state["active"], false);

    let last = evs.last().expect("end").0;
    let (st, v) = s.post("/threads/c1/resume", json!({})).await;
    assert_eq!(st, 202, "{v}");
    let evs = s.run_end("c1", last).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    let (_, state) = s.get("/threads/c1/state").await;
    assert_eq!(state["values"]["count"], limit);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_and_resume_over_http() {
    let s = Server::memory().await;
    let (st, _) = s
        .post(
            "/threads/h1/runs",
            json!({"graph": "approval", "input": {"draft": "Hello"}}),
        )
        .await;
    assert_eq!(st, 202);
    let evs = s.run_end("h1", 0).await;
    let end = &evs.last().expect("end").1;
    assert_eq!(end["data"]["status"], "interrupted", "{end}");
    assert_eq!(
        end["data"]["interrupts"][0]["value"]["question"],
        "Publish this draft?"
    );
    let (_, state) = s.get("/threads/h1/state").await;
    assert_eq!(state["interrupts"][0]["node"], "review");

    let (st, v) = s.post("/threads/h1/resume", json!({"value": "yes"})).await;
    assert_eq!(st, 202, "{v}");
    let evs = s.run_end("h1", evs.last().expect("end").0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    let (_, state) = s.get("/threads/h1/state").await;
    assert_eq!(state["values"]["published"], true);
    assert_eq!(state["values"]["decision"], "yes");
    let (st, v) = s.post("/threads/h1/resume", json!({"value": "yes"})).await;
    assert_eq!((st, error_code(&v)), (400, "NOTHING_TO_RESUME"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_replay_after_a_dropped_connection_loses_and_repeats_nothing() {
    let config = ServerConfig {
        events_per_thread: 5_000,
        event_bytes_per_thread: 8 << 20,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    let limit = 1_500;
    let (st, _) = s
        .post(
            "/threads/r1/runs",
            json!({"graph": "counter", "input": {"limit": limit}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    // First connection: drop it after 300 events.
    let mut seen = 0usize;
    let first = s
        .events_until("r1", Some(0), |_| {
            seen += 1;
            seen == 300
        })
        .await;
    let last = first.last().expect("events").0;
    // Second connection resumes with ?lastEventId= (the first used the header).
    let resp = s
        .http
        .get(s.url(&format!("/threads/r1/events?lastEventId={last}")))
        .send()
        .await
        .expect("sse");
    let mut stream = resp.bytes_stream().eventsource();
    let mut second = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .expect("in time")
    {
        let ev = ev.expect("event");
        let data: Value = serde_json::from_str(&ev.data).expect("json");
        let end = is_end(&data);
        second.push((ev.id.parse::<u64>().expect("id"), data));
        if end {
            break;
        }
    }
    let ids: Vec<u64> = first.iter().chain(&second).map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(
        ids, expected,
        "contiguous ids from 1, none lost or repeated"
    );
    // started + one update per step + end
    assert_eq!(ids.len(), limit + 2);
    let counts: Vec<i64> = first
        .iter()
        .chain(&second)
        .filter(|(_, d)| d["mode"] == "updates")
        .map(|(_, d)| d["data"]["bump"]["count"].as_i64().expect("count"))
        .collect();
    assert_eq!(counts, (1..=limit as i64).collect::<Vec<_>>());

    // Without Last-Event-ID only new events come; a new run on the thread continues the ids.
    let (st, _) = s
        .post(
            "/threads/r1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let more = s.run_end("r1", *ids.last().expect("id")).await;
    assert_eq!(more[0].0, *ids.last().expect("id") + 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn event_log_is_bounded_by_count_and_bytes() {
    let config = ServerConfig {
        events_per_thread: 50,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    let (st, _) = s
        .post(
            "/threads/b1/runs",
            json!({"graph": "counter", "input": {"limit": 200}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    // Wait for the end, then replay from 0: only the newest 50 remain.
    s.wait_idle("b1").await;
    let evs = s.run_end("b1", 0).await;
    assert_eq!(evs.len(), 50);
    assert_eq!(evs.last().expect("end").0, 202);
    // The replay starts with a `gap` event naming the ids the log no longer holds.
    let resp = s
        .http
        .get(s.url("/threads/b1/events?lastEventId=0"))
        .send()
        .await
        .expect("sse");
    let mut stream = resp.bytes_stream().eventsource();
    let first = stream.next().await.expect("open").expect("event");
    assert_eq!(first.event, "gap");
    let gap: Value = serde_json::from_str(&first.data).expect("json");
    assert_eq!(gap, json!({"from": 1, "to": 152}));
    let second = stream.next().await.expect("open").expect("event");
    assert_eq!(second.id, "153");
    s.stop().await;

    let config = ServerConfig {
        event_bytes_per_thread: 2_000,
        ..ServerConfig::new(graphs_dir(), "unused").storage(Storage::Memory)
    };
    let s = Server::start(config).await;
    s.post(
        "/threads/b2/runs",
        json!({"graph": "counter", "input": {"limit": 200}, "stream_modes": ["updates"]}),
    )
    .await;
    s.wait_idle("b2").await;
    let evs = s.run_end("b2", 0).await;
    let bytes: usize = evs.iter().map(|(_, d)| d.to_string().len()).sum();
    assert!(
        bytes <= 2_000 && evs.len() < 100,
        "{} events, {bytes} bytes",
        evs.len()
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn events_survive_a_restart_and_shutdown_checkpoints_running_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ServerConfig::new(graphs_dir(), dir.path().join("db"));
    let s = Server::start(config.clone()).await;
    let (st, _) = s
        .post(
            "/threads/p1/runs",
            json!({"graph": "counter", "input": {"limit": 3}}),
        )
        .await;
    assert_eq!(st, 202);
    let before = s.run_end("p1", 0).await;
    // A long run that the shutdown cancels.
    let (st, _) = s
        .post(
            "/threads/p2/runs",
            json!({"graph": "counter", "input": {"limit": 1000000}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    s.events_until("p2", Some(0), |d| d["mode"] == "updates")
        .await;
    // An open event stream does not hold the shutdown up: it ends.
    let held = s
        .http
        .get(s.url("/threads/p2/events"))
        .send()
        .await
        .expect("sse");
    let mut held = held.bytes_stream();
    s.stop().await;
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = held.next().await {}
    })
    .await;
    assert!(rest.is_ok(), "the event stream ended with the server");

    let s = Server::start(config).await;
    let after = s.run_end("p1", 0).await;
    let ids = |v: &Vec<(u64, Value)>| v.iter().map(|(i, d)| (*i, d.clone())).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&after), "replayed from disk");
    let p2 = s.run_end("p2", 0).await;
    assert_eq!(p2.last().expect("end").1["data"]["status"], "cancelled");
    let (_, state) = s.get("/threads/p2/state").await;
    assert_eq!(state["next"], json!(["bump"]), "{state}");
    assert!(state["values"]["count"].as_i64().unwrap_or(0) >= 1);
    // Ids keep rising after the restart.
    let (st, _) = s
        .post(
            "/threads/p1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let more = s.run_end("p1", after.last().expect("end").0).await;
    assert_eq!(more[0].0, after.last().expect("end").0 + 1);
    let (_, threads) = s.get("/threads").await;
    assert_eq!(
        threads["threads"].as_array().map(Vec::len),
        Some(2),
        "{threads}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_left_mid_way_by_a_killed_server_ends_interrupted_on_restart() {
    use agentgraph_server::{EventLimits, EventStore};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let config = ServerConfig::new(graphs_dir(), &db);
    // A run that ended, then one the server was killed during: its log stops after `started`
    // and an update, with no end event (what a SIGKILL or a crash leaves).
    {
        let s = Server::start(config.clone()).await;
        let (st, _) = s
            .post(
                "/threads/k1/runs",
                json!({"graph": "counter", "input": {"limit": 2}}),
            )
            .await;
        assert_eq!(st, 202);
        s.run_end("k1", 0).await;
        s.stop().await;
    }
    {
        let limits = EventLimits {
            events: 500,
            bytes: 1 << 20,
        };
        let store = EventStore::open(&db.join("server-events"), limits).expect("open");
        // The store gives each event its id.
        let ev =
            |mode: &str, data: Value| json!({"ns": [], "mode": mode, "node": null, "data": data});
        store
            .append(
                "k1",
                ev("run", json!({"status": "started", "run_id": "r-killed"})),
            )
            .expect("append");
        store
            .append("k1", ev("updates", json!({"bump": {"count": 3}})))
            .expect("append");
        // A thread whose last run ended is left alone.
        store
            .append(
                "k2",
                ev("run", json!({"status": "started", "run_id": "r-ok"})),
            )
            .expect("append");
        store
            .append("k2", ev("run", json!({"status": "done", "run_id": "r-ok"})))
            .expect("append");
        store.flush().expect("flush");
    }

    let s = Server::start(config.clone()).await;
    // Replaying from the killed run's start: its end event is there.
    let evs = s
        .events_until("k1", Some(0), |d| {
            d["mode"] == "run" && d["data"]["run_id"] == "r-killed" && is_end(d)
        })
        .await;
    let (end_id, end) = evs.last().expect("end").clone();
    assert_eq!(end["data"]["status"], "interrupted", "{end}");
    assert!(end["data"]["reason"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    assert!(end["data"].get("interrupts").is_none(), "{end}");
    // Exactly one, and a client that had seen everything before it gets only it.
    let after = s.run_end("k1", end_id - 1).await;
    assert_eq!(after.len(), 1);
    let evs = s.run_end("k2", 0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    s.stop().await;

    // Not added again on the next start.
    let s = Server::start(config).await;
    let (st, _) = s
        .post(
            "/threads/k1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let next = s.run_end("k1", end_id).await;
    assert_eq!(next[0].0, end_id + 1, "{next:?}");
    assert_eq!(next[0].1["data"]["status"], "started");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_id_given_out_is_the_engines_run_id() {
    let s = Server::memory().await;
    let (st, v) = s
        .post(
            "/threads/r1/runs",
            json!({"graph": "counter", "input": {"limit": 3}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let run_id = v["run_id"].as_str().expect("run id").to_string();
    let evs = s.run_end("r1", 0).await;
    assert_eq!(evs.last().expect("end").1["data"]["run_id"], json!(run_id));
    let (_, state) = s.get("/threads/r1/state").await;
    assert_eq!(state["metadata"]["run_id"], json!(run_id), "{state}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_method_is_a_json_405() {
    let s = Server::memory().await;
    for (method, path) in [
        (reqwest::Method::GET, "/threads/m1/runs"),
        (reqwest::Method::DELETE, "/threads/m1/state"),
        (reqwest::Method::POST, "/graphs"),
    ] {
        let r = s
            .http
            .request(method.clone(), s.url(path))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 405, "{method} {path}");
        let v: Value = r.json().await.expect("a JSON body");
        assert_eq!(error_code(&v), "METHOD_NOT_ALLOWED", "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains(method.as_str()) && msg.contains(path), "{v}");
    }
    s.stop().await;
}
