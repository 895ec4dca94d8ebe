//! Live reload: a clean edit serves the next runs while a thread started before it finishes
//! on its version; a broken edit is reported over `GET /graphs` and the last good version
//! keeps serving; a change to a subgraph file reloads the graph that uses it; a thread keeps
//! its version across a restart (the version's files are stored with the server's events).

use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

struct Server {
    base: String,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), agentgraph_server::ServerError>>,
    http: reqwest::Client,
}

impl Server {
    async fn start(dir: &Path) -> Server {
        Self::start_on(dir, Storage::Memory).await
    }

    async fn start_on(dir: &Path, storage: Storage) -> Server {
        let config = ServerConfig::new(dir, "unused").storage(storage);
        assert!(config.watch, "live reload is on by default");
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

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Starts (or resumes) a run on `thread` and returns how it ended.
    async fn run(&self, thread: &str, path: &str, body: Value) -> Value {
        let (st, v) = self.post(path, body).await;
        assert_eq!(st, 202, "{v}");
        self.end_of(thread, &v["run_id"]).await
    }

    /// The end event (`interrupted`, `done`, …) of run `run_id` on `thread`, read from the
    /// thread's log from the start, so it cannot be missed.
    async fn end_of(&self, thread: &str, run_id: &Value) -> Value {
        let resp = self
            .http
            .get(format!(
                "{}/threads/{thread}/events?lastEventId=0",
                self.base
            ))
            .send()
            .await
            .expect("sse");
        let mut stream = resp.bytes_stream().eventsource();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let ev = tokio::time::timeout_at(deadline, stream.next())
                .await
                .expect("events in time")
                .expect("stream open")
                .expect("valid event");
            let d: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
            if d["mode"] == "run"
                && d["data"]["run_id"] == *run_id
                && d["data"]["status"] != "started"
            {
                return d["data"].clone();
            }
        }
    }

    async fn value(&self, thread: &str) -> Value {
        let (st, v) = self.get(&format!("/threads/{thread}/state")).await;
        assert_eq!(st, 200, "{v}");
        v["values"]["value"].clone()
    }

    /// Polls `GET /graphs/{name}` until `ok` holds (bounded).
    async fn wait_graph(&self, name: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (st, v) = self.get(&format!("/graphs/{name}")).await;
            if st == 200 && ok(&v) {
                return v;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "graph {name} never reached the expected state; last: {st} {v}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A graph that asks before writing `value`.
fn graph(value: &str) -> String {
    format!(
        r#"graph g {{
  state {{
    value: string = ""
    decision: string = ""
  }}
  node ask: interrupt {{
    value: {{ question: "go?" }}
    write: decision
  }}
  node mark {{
    set {{ value: "{value}" }}
  }}
  START -> ask -> mark -> END
}}
"#
    )
}

/// Writes `text` to `path` through a temporary file and a rename, like editors do.
fn write(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[tokio::test(flavor = "multi_thread")]
async fn good_edit_serves_next_runs_broken_edit_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("g.ag");
    write(&file, &graph("v1"));
    let s = Server::start(dir.path()).await;

    // Not compiled yet: not listed.
    let (st, v) = s.get("/graphs").await;
    assert_eq!(st, 200);
    assert_eq!(v["graphs"], json!([]));
    let (st, v) = s.get("/graphs/g").await;
    assert_eq!(st, 404, "{v}");

    // A thread started on v1 stops at its interrupt.
    let end = s
        .run("before", "/threads/before/runs", json!({"graph": "g"}))
        .await;
    assert_eq!(end["status"], "interrupted", "{end}");
    let (st, v) = s.get("/graphs").await;
    assert_eq!(st, 200);
    let list = v["graphs"].as_array().expect("list");
    assert_eq!(list.len(), 1, "{v}");
    assert_eq!(list[0]["name"], "g");
    assert_eq!(list[0]["path"], "g.ag");
    assert_eq!(list[0]["version"], 1);
    assert_eq!(list[0]["status"], "ok");
    let hash1 = list[0]["hash"].clone();

    // A clean edit: the next version serves.
    write(&file, &graph("v2"));
    let v = s.wait_graph("g", |v| v["version"] == 2).await;
    assert_eq!(v["status"], "ok", "{v}");
    assert_ne!(v["hash"], hash1);

    // A new run uses v2 ...
    let end = s
        .run("after", "/threads/after/runs", json!({"graph": "g"}))
        .await;
    assert_eq!(end["status"], "interrupted", "{end}");
    let end = s
        .run("after", "/threads/after/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(s.value("after").await, "v2");
    // ... while the thread started before the edit finishes on v1.
    let end = s
        .run("before", "/threads/before/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(s.value("before").await, "v1");
    // Its next run takes the newest version.
    s.run("before", "/threads/before/runs", json!({"graph": "g"}))
        .await;
    s.run("before", "/threads/before/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(s.value("before").await, "v2");

    // A broken edit (line 13: an edge to a node that does not exist) is reported ...
    write(
        &file,
        &graph("v3").replace("mark -> END", "mark -> nowhere"),
    );
    let v = s.wait_graph("g", |v| v["status"] == "error").await;
    assert_eq!(v["version"], 2, "the good version still serves: {v}");
    let diags = v["diagnostics"].as_array().expect("diagnostics");
    let err = diags
        .iter()
        .find(|d| d["severity"] == "error")
        .unwrap_or_else(|| panic!("an error diagnostic: {v}"));
    assert!(
        err["code"].as_str().is_some_and(|c| c.starts_with('E')),
        "{err}"
    );
    assert_eq!(err["span"]["line"], 13, "{err}");
    assert!(
        err["span"]["column"].as_u64().is_some_and(|c| c > 1),
        "{err}"
    );
    assert!(
        err["message"].as_str().unwrap_or("").contains("nowhere"),
        "{err}"
    );
    let rendered = err["rendered"].as_str().expect("rendered text");
    assert!(rendered.contains("nowhere"), "{rendered}");
    assert!(
        rendered.contains(err["code"].as_str().unwrap_or("?")),
        "{rendered}"
    );
    // ... and runs keep using v2.
    s.run("third", "/threads/third/runs", json!({"graph": "g"}))
        .await;
    let end = s
        .run("third", "/threads/third/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(s.value("third").await, "v2");

    // Fixing it serves the fix.
    write(&file, &graph("v3"));
    let v = s
        .wait_graph("g", |v| v["status"] == "ok" && v["version"] == 3)
        .await;
    assert_eq!(v["diagnostics"], json!([]), "{v}");
    s.run("fourth", "/threads/fourth/runs", json!({"graph": "g"}))
        .await;
    s.run("fourth", "/threads/fourth/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(s.value("fourth").await, "v3");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_subgraph_file_reloads_its_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("lib")).expect("mkdir");
    let child = |v: &str| {
        format!(
            "graph child {{\n  state {{\n    out: string = \"\"\n  }}\n  node w {{ set {{ out: \"{v}\" }} }}\n  START -> w -> END\n}}\n"
        )
    };
    write(&dir.path().join("lib/child.ag"), &child("c1"));
    write(
        &dir.path().join("parent.ag"),
        r#"graph parent {
  state {
    value: string = ""
  }
  node sub: subgraph "lib/child.ag" {
    out { value: out }
  }
  START -> sub -> END
}
"#,
    );
    let s = Server::start(dir.path()).await;
    let end = s
        .run("p1", "/threads/p1/runs", json!({"graph": "parent"}))
        .await;
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(s.value("p1").await, "c1");

    write(&dir.path().join("lib/child.ag"), &child("c2"));
    s.wait_graph("parent", |v| v["version"] == 2 && v["status"] == "ok")
        .await;
    s.run("p2", "/threads/p2/runs", json!({"graph": "parent"}))
        .await;
    assert_eq!(s.value("p2").await, "c2");

    // A broken child is reported against the parent, with the child's file.
    write(
        &dir.path().join("lib/child.ag"),
        &child("c3").replace("START -> w", "START -> nope"),
    );
    let v = s.wait_graph("parent", |v| v["status"] == "error").await;
    let files: Vec<&str> = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["file"].as_str())
        .collect();
    assert!(files.iter().any(|f| f.ends_with("child.ag")), "{v}");
    s.run("p3", "/threads/p3/runs", json!({"graph": "parent"}))
        .await;
    assert_eq!(s.value("p3").await, "c2");
    s.stop().await;
}

/// A thread stopped at an interrupt resumes on the version it started with after the server
/// restarts, even when the files changed and a prompt file it read is gone in the meantime;
/// the version's files come from the server's store, and are dropped from it at a later start
/// once no thread needs them.
#[tokio::test(flavor = "multi_thread")]
async fn a_thread_keeps_its_version_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("g.ag");
    let prompt = dir.path().join("p.md");
    std::fs::write(&prompt, "Be brief.").expect("write");
    let v1 = graph("v1").replace("  node ask", "  prompt system = file(\"p.md\")\n  node ask");
    write(&file, &v1);
    let storage = || Storage::Sled(db.path().to_path_buf());

    let s = Server::start_on(dir.path(), storage()).await;
    let (st, started) = s.post("/threads/t1/runs", json!({"graph": "g"})).await;
    assert_eq!(st, 202, "{started}");
    let v1_id = started["graph_version"].clone();
    assert_eq!(v1_id.as_str().map(str::len), Some(32), "{started}");
    let (_, g) = s.get("/graphs/g").await;
    assert_eq!(
        g["hash"], v1_id,
        "GET /graphs shows the serving version's id"
    );
    let end = s.run("t2", "/threads/t2/runs", json!({"graph": "g"})).await;
    assert_eq!(end["status"], "interrupted", "{end}");
    // t1 must be at its interrupt too before the stop (a stop cancels a run in flight, which
    // would then resume from an earlier checkpoint and stop at the interrupt again).
    let end = s.end_of("t1", &started["run_id"]).await;
    assert_eq!(end["status"], "interrupted", "{end}");
    s.stop().await;

    // Edited and its prompt file removed while the server was down.
    write(&file, &graph("v2"));
    std::fs::remove_file(&prompt).expect("rm");

    let s = Server::start_on(dir.path(), storage()).await;
    let (st, resumed) = s.post("/threads/t1/resume", json!({"value": "yes"})).await;
    assert_eq!(st, 202, "{resumed}");
    assert_eq!(resumed["graph_version"], v1_id, "resumed on its version");
    // Wait for the end through the log, then check what ran.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s.value("t1").await != "v1" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "t1 did not finish on v1: {}",
            s.value("t1").await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let end = s
        .run("t2", "/threads/t2/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(end["status"], "done", "{end}");
    assert_eq!(s.value("t2").await, "v1");
    // New threads, and the old ones' next runs, take the newest version.
    let (_, g) = s.get("/graphs/g").await;
    assert_ne!(g["hash"], v1_id);
    for t in ["t1", "t3"] {
        s.run(t, &format!("/threads/{t}/runs"), json!({"graph": "g"}))
            .await;
        let end = s
            .run(t, &format!("/threads/{t}/resume"), json!({"value": "yes"}))
            .await;
        assert_eq!(end["status"], "done", "{end}");
        assert_eq!(s.value(t).await, "v2", "{t}");
    }
    s.stop().await;

    // No thread is pinned any more: the next start drops the stored version.
    let checkpoints = agentgraph_runtime::SledCheckpointer::open(db.path()).expect("open");
    let events = agentgraph_server::EventStore::beside(
        checkpoints.store(),
        agentgraph_server::EventLimits {
            events: 10,
            bytes: 1 << 20,
        },
    )
    .expect("open");
    assert_eq!(events.version_of("t1").expect("read"), None);
    assert_eq!(
        events.prune_versions().expect("prune"),
        2,
        "v1 and v2, each stored once"
    );
    assert_eq!(events.prune_versions().expect("prune"), 0);
}
