//! Failover between two `agentgraph serve` processes on one PostgreSQL database: server A is
//! killed (SIGKILL) in the middle of a multi-step run, and server B picks the run up once A's
//! lease expired and finishes it from A's last checkpoint, with event ids above those A gave
//! out; a server stopped by SIGTERM hands its run over at once; a server whose lease was taken
//! stops writing. Needs `AGENTGRAPH_TEST_POSTGRES_URL`; skips otherwise (fails under `CI=true`). Each
//! run uses its own schema (`--postgres-schema`), dropped at the end.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Eight steps of about 250 ms each: long enough to kill A between two of them.
const GRAPH: &str = r#"
graph slow_steps {
  state {
    count: int = 0
    trace: list<string> = [] reduce append
    limit: int = 8
  }

  node step: js {
    code: """
      const end = Date.now() + 250
      while (Date.now() < end) {}
      return { count: count + 1, trace: ["step " + (count + 1)] }
    """
  }

  START -> step
  step -> route {
    count < limit => step
    else          => END
  }
}
"#;

pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
    _db: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agentgraph serve` with a 2 s lease renewed every 500 ms, on port 0.
fn start(url: &str, schema: &str, graphs: &Path) -> Server {
    start_in(tempfile::tempdir().expect("temp dir"), url, schema, graphs)
}

/// The same, with `db` as its `--db` folder (which may hold API keys already).
pub(crate) fn start_in(db: tempfile::TempDir, url: &str, schema: &str, graphs: &Path) -> Server {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .arg("serve")
        .arg("--graphs")
        .arg(graphs)
        .args(["--addr", "127.0.0.1:0", "--postgres", url])
        .args(["--postgres-schema", schema, "--lease", "2s"])
        .args(["--lease-renew", "500ms"])
        .env_remove("AGENTGRAPH_JWT_SECRET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentgraph serve starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let base = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(rest) = line.strip_prefix("serving on ") {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    break addr.to_string();
                }
                seen.push(line);
            }
            _ => panic!("agentgraph serve exited before listening: {seen:?}"),
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base,
        _db: db,
    }
}

/// One SSE event: its id and its data.
type Event = (u64, Value);

/// Reads the thread's events from `s` after `last` until the end event of `run_id` (or of any
/// run, when `None`); `on_event` sees each one as it comes and may stop the reading early by
/// returning `true`.
async fn read_events(
    http: &reqwest::Client,
    s: &Server,
    thread: &str,
    last: u64,
    mut stop: impl FnMut(&Event) -> bool,
) -> Vec<Event> {
    let mut resp = http
        .get(format!("{}/threads/{thread}/events", s.base))
        .header("Last-Event-ID", last.to_string())
        .send()
        .await
        .expect("sse");
    assert_eq!(resp.status().as_u16(), 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let (mut buf, mut out) = (String::new(), Vec::new());
    loop {
        while let Some(i) = buf.find("\n\n") {
            let block: String = buf.drain(..i + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .and_then(|v| v.trim().parse::<u64>().ok());
            let data = block.lines().find_map(|l| l.strip_prefix("data:"));
            if let (Some(id), Some(data)) = (id, data) {
                let event = (id, serde_json::from_str(data.trim()).expect("json event"));
                let done = stop(&event);
                out.push(event);
                if done {
                    return out;
                }
            }
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {out:?}"))
            .expect("sse chunk")
            .unwrap_or_else(|| panic!("stream ended; events so far: {out:?}"));
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

fn is_end(v: &Value) -> bool {
    v["mode"] == "run" && v["data"]["status"] != "started"
}

/// The `count` each `updates` event of the `step` node reports.
fn counts(events: &[Event]) -> Vec<i64> {
    events
        .iter()
        .filter(|(_, v)| v["mode"] == "updates")
        .filter_map(|(_, v)| v["data"]["step"]["count"].as_i64())
        .collect()
}

async fn wait_up(http: &reqwest::Client, s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{}/threads", s.base)).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("server at {} did not come up", s.base);
}

async fn start_run(http: &reqwest::Client, s: &Server, thread: &str) -> String {
    start_run_with(http, s, thread, json!({})).await
}

async fn start_run_with(http: &reqwest::Client, s: &Server, thread: &str, input: Value) -> String {
    let r = http
        .post(format!("{}/threads/{thread}/runs", s.base))
        .json(&json!({ "graph": "slow_steps", "stream_modes": ["updates"], "input": input }))
        .send()
        .await
        .expect("post run");
    assert_eq!(r.status().as_u16(), 202);
    let v: Value = r.json().await.expect("json");
    v["run_id"].as_str().expect("run id").to_string()
}

async fn values(http: &reqwest::Client, s: &Server, thread: &str) -> Value {
    let url = format!("{}/threads/{thread}/state?graph=slow_steps", s.base);
    let v: Value = http
        .get(url)
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    v["values"].clone()
}

/// A schema name no other test uses.
pub(crate) fn fresh_schema() -> String {
    format!(
        "agtest_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..24]
    )
}

/// Drops a test schema and everything in it.
pub(crate) async fn drop_schema(url: &str, schema: &str) {
    if let Ok((client, conn)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        let task = tokio::spawn(conn);
        let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
        if let Err(e) = client.batch_execute(&sql).await {
            eprintln!("could not drop test schema {schema}: {e}");
        }
        drop(client);
        let _ = task.await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_servers_run_is_finished_by_another() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let graphs = tempfile::tempdir().expect("temp dir");
    std::fs::write(graphs.path().join("slow_steps.ag"), GRAPH).expect("graph file");
    let (mut a, b) = (
        start(&url, &schema, graphs.path()),
        start(&url, &schema, graphs.path()),
    );
    let http = reqwest::Client::new();
    wait_up(&http, &a).await;
    wait_up(&http, &b).await;
    let pid = std::process::id();

    // The same graph run without interruption, for the state to compare with.
    let reference = format!("ref-{pid}");
    let ref_run = start_run(&http, &b, &reference).await;
    let ended = read_events(&http, &b, &reference, 0, |(_, v)| is_end(v)).await;
    let end = &ended.last().expect("end").1["data"];
    assert_eq!(
        (&end["status"], &end["run_id"]),
        (&json!("done"), &json!(ref_run))
    );
    let expected = values(&http, &b, &reference).await;
    let trace: Vec<String> = (1..=8).map(|i| format!("step {i}")).collect();
    assert_eq!(expected, json!({ "count": 8, "limit": 8, "trace": trace }));

    // On A: kill it (SIGKILL) once three steps are done.
    let thread = format!("failover-{pid}");
    let run_id = start_run(&http, &a, &thread).await;
    let before = read_events(&http, &a, &thread, 0, |(_, v)| {
        v["mode"] == "updates" && v["data"]["step"]["count"].as_i64() >= Some(3)
    })
    .await;
    a.child.kill().expect("SIGKILL");
    let _ = a.child.wait();
    let last_a = before.last().expect("events from A").0;
    assert!(!before.iter().any(|(_, v)| is_end(v)), "{before:?}");

    // B takes the run over after the lease (2 s) and finishes it.
    let after = read_events(&http, &b, &thread, last_a, |(_, v)| is_end(v)).await;
    let (_, end) = after.last().expect("end");
    assert_eq!(end["data"]["status"], "done", "{after:?}");
    assert_eq!(end["data"]["run_id"], json!(run_id));
    let started = after
        .iter()
        .find(|(_, v)| v["mode"] == "run" && v["data"]["status"] == "started")
        .expect("a started event on B");
    assert_eq!(started.1["data"]["run_id"], json!(run_id));
    assert_eq!(started.1["data"]["resumed"], true);
    // Its second owner: A's lease expired.
    assert_eq!(started.1["data"]["attempt"], 2);
    assert!(
        after.iter().all(|(id, _)| *id > last_a),
        "ids on B must be above A's last ({last_a}): {after:?}"
    );

    // The same state as without the kill.
    assert_eq!(values(&http, &b, &thread).await, expected);
    // Every step ran, and none twice except at most the one in flight at the kill.
    let (on_a, on_b) = (counts(&before), counts(&after));
    let mut all: Vec<i64> = on_a.iter().chain(&on_b).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, (1..=8).collect::<Vec<_>>(), "A {on_a:?}, B {on_b:?}");
    let twice = on_a.iter().filter(|c| on_b.contains(c)).count();
    assert!(twice <= 1, "A {on_a:?}, B {on_b:?}");
    assert!(on_b.len() >= 8 - on_a.len(), "A {on_a:?}, B {on_b:?}");

    drop(b);
    drop_schema(&url, &schema).await;
}

/// Waits until the `step` node of the run on `thread` reported `count` (replaying from the
/// start); returns the last event id read.
async fn wait_count(http: &reqwest::Client, s: &Server, thread: &str, count: i64) -> u64 {
    let seen = read_events(http, s, thread, 0, |(_, v)| {
        v["mode"] == "updates" && v["data"]["step"]["count"].as_i64() >= Some(count)
    })
    .await;
    seen.last().expect("events").0
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_hands_the_run_over_at_once() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let graphs = tempfile::tempdir().expect("temp dir");
    std::fs::write(graphs.path().join("slow_steps.ag"), GRAPH).expect("graph file");
    let (mut a, b) = (
        start(&url, &schema, graphs.path()),
        start(&url, &schema, graphs.path()),
    );
    let http = reqwest::Client::new();
    wait_up(&http, &a).await;
    wait_up(&http, &b).await;
    let thread = format!("handover-{}", std::process::id());
    let run_id = start_run(&http, &a, &thread).await;
    let last_a = wait_count(&http, &a, &thread, 2).await;

    let pid = libc::pid_t::try_from(a.child.id()).expect("pid fits");
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = a.child.wait().expect("exit");
    assert!(status.success(), "{status:?}");

    let after = read_events(&http, &b, &thread, last_a, |(_, v)| is_end(v)).await;
    let (_, end) = after.last().expect("end");
    assert_eq!(
        (&end["data"]["status"], &end["data"]["run_id"]),
        (&json!("done"), &json!(run_id)),
        "{after:?}"
    );
    assert!(after.iter().all(|(id, _)| *id > last_a), "{after:?}");
    // Handed over, not taken after an expiry: the hand-over does not count as a failure.
    let started = after
        .iter()
        .find(|(_, v)| v["mode"] == "run" && v["data"]["status"] == "started")
        .expect("a started event on B");
    assert_eq!(started.1["data"]["resumed"], true);
    assert_eq!(started.1["data"]["attempt"], 1, "{after:?}");
    let trace: Vec<String> = (1..=8).map(|i| format!("step {i}")).collect();
    assert_eq!(
        values(&http, &b, &thread).await,
        json!({ "count": 8, "limit": 8, "trace": trace })
    );
    drop(b);
    drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_whose_lease_was_taken_stops_writing() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let graphs = tempfile::tempdir().expect("temp dir");
    std::fs::write(graphs.path().join("slow_steps.ag"), GRAPH).expect("graph file");
    let a = start(&url, &schema, graphs.path());
    let http = reqwest::Client::new();
    wait_up(&http, &a).await;
    let thread = format!("fenced-{}", std::process::id());
    let run_id = start_run_with(&http, &a, &thread, json!({ "limit": 200 })).await;
    let last = wait_count(&http, &a, &thread, 2).await;

    // Another owner takes the run in the database (as a server would after an expiry).
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let task = tokio::spawn(conn);
    let sql = format!(
        "UPDATE \"{schema}\".agentgraph_runs SET owner = 'thief', \
         lease_expires = now() + interval '1 hour' WHERE run_id = $1"
    );
    assert_eq!(client.execute(&sql, &[&run_id]).await.expect("steal"), 1);

    let rest = read_events(&http, &a, &thread, last, |(_, v)| is_end(v)).await;
    let (_, end) = rest.last().expect("end");
    assert_eq!(end["data"]["status"], "interrupted", "{rest:?}");
    assert!(
        end["data"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("lost the run's lease")),
        "{end}"
    );
    // No step is written after that: the state stays where it stopped, far from the end.
    let stopped = values(&http, &a, &thread).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(values(&http, &a, &thread).await, stopped);
    assert!(stopped["count"].as_i64() < Some(200), "{stopped}");
    let owner = format!("SELECT owner, status FROM \"{schema}\".agentgraph_runs WHERE run_id = $1");
    let row = client.query_one(&owner, &[&run_id]).await.expect("row");
    let (who, status): (String, String) = (row.get(0), row.get(1));
    assert_eq!((who.as_str(), status.as_str()), ("thief", "running"));
    drop(client);
    let _ = task.await;
    drop(a);
    drop_schema(&url, &schema).await;
}
