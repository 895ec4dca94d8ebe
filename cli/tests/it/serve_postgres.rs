//! Two `agentgraph serve` processes sharing threads through PostgreSQL: a run started on one
//! stops at an interrupt and is resumed on the other, and a thread runs on one server at a
//! time (advisory-lock leases). Needs `AGENTGRAPH_TEST_POSTGRES_URL`
//! (`.ci/run` starts a server and sets it); skips otherwise (fails under `CI=true`). Each
//! test uses its own schema (`--postgres-schema`), dropped at the end.

use crate::serve_failover::{drop_schema, fresh_schema};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    base: String,
    _db: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agentgraph serve` on port 0 and reads the bound address from its first stderr
/// line (`serving on http://…`), so parallel tests never race for a port.
fn start(url: &str, schema: &str) -> Server {
    use std::io::BufRead;
    let db = tempfile::tempdir().unwrap();
    let graphs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .arg("serve")
        .arg("--graphs")
        .arg(graphs)
        .args(["--addr", "127.0.0.1:0", "--postgres", url])
        .args(["--postgres-schema", schema])
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
                    break rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                }
                seen.push(line);
            }
            _ => panic!("agentgraph serve exited before listening: {seen:?}"),
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base,
        _db: db,
    }
}

async fn wait_up(client: &reqwest::Client, s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = client.get(format!("{}/threads", s.base)).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("server at {} did not come up", s.base);
}

async fn state(client: &reqwest::Client, s: &Server, thread: &str) -> Value {
    // Thread ids say which example graph they run: `one-…` the counter, others the approval.
    let graph = if thread.starts_with("one-") {
        "counter"
    } else {
        "approval"
    };
    client
        .get(format!("{}/threads/{thread}/state?graph={graph}", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn wait_for(
    client: &reqwest::Client,
    s: &Server,
    thread: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = state(client, s, thread).await;
        if done(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "timed out; last state {st}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_on_one_server_is_resumed_on_another() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let (a, b) = (start(&url, &schema), start(&url, &schema));
    let client = reqwest::Client::new();
    wait_up(&client, &a).await;
    wait_up(&client, &b).await;
    let thread = format!("two-{}", std::process::id());

    let r = client
        .post(format!("{}/threads/{thread}/runs", a.base))
        .json(&json!({"graph": "approval", "input": {"draft": "Hello"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
    let paused = wait_for(&client, &a, &thread, |s| {
        s["interrupts"].as_array().is_some_and(|i| !i.is_empty()) && s["active"] == false
    })
    .await;
    assert_eq!(paused["values"]["published"], false);

    // The other server sees the thread's checkpoints and answers the interrupt.
    let seen = state(&client, &b, &thread).await;
    assert_eq!(seen["checkpoint_id"], paused["checkpoint_id"]);
    let r = client
        .post(format!("{}/threads/{thread}/resume", b.base))
        .json(&json!({"value": "yes", "graph": "approval"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
    let done = wait_for(&client, &b, &thread, |s| s["values"]["published"] == true).await;
    assert_eq!(done["values"]["decision"], "yes");
    // And the first server sees the end of the thread too.
    let back = state(&client, &a, &thread).await;
    assert_eq!(back["values"]["published"], true);
    drop((a, b));
    drop_schema(&url, &schema).await;
}

async fn post(client: &reqwest::Client, s: &Server, path: &str, body: Value) -> (u16, Value) {
    let r = client
        .post(format!("{}{path}", s.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_runs_on_one_server_at_a_time() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let (a, b) = (start(&url, &schema), start(&url, &schema));
    let client = reqwest::Client::new();
    wait_up(&client, &a).await;
    wait_up(&client, &b).await;
    let thread = format!("one-{}", std::process::id());
    let counter = json!({"graph": "counter", "input": {"limit": 1_000_000},
        "recursion_limit": 2_000_000});

    // A long run on `a`; `b` refuses to start or resume the same thread meanwhile.
    let (st, v) = post(
        &client,
        &a,
        &format!("/threads/{thread}/runs"),
        counter.clone(),
    )
    .await;
    assert_eq!(st, 202, "{v}");
    wait_for(&client, &a, &thread, |s| {
        s["values"]["count"].as_i64() >= Some(3)
    })
    .await;
    let (st, v) = post(
        &client,
        &b,
        &format!("/threads/{thread}/runs"),
        counter.clone(),
    )
    .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("RUN_ACTIVE")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("another server"),
        "{v}"
    );
    let resume = json!({"graph": "counter"});
    let (st, v) = post(
        &client,
        &b,
        &format!("/threads/{thread}/resume"),
        resume.clone(),
    )
    .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("RUN_ACTIVE")),
        "{v}"
    );

    // Cancelled through `b` (a NOTIFY reaches `a`, which checkpoints and lets the thread go):
    // `b` continues it, and now `a` is the one refused.
    let (st, v) = post(&client, &b, &format!("/threads/{thread}/cancel"), json!({})).await;
    assert_eq!((st, v["cancelled"].as_bool()), (200, Some(true)), "{v}");
    assert_eq!(v["elsewhere"], true, "{v}");
    let stopped = wait_for(&client, &a, &thread, |s| s["active"] == false).await;
    let at = stopped["values"]["count"].as_i64().unwrap_or(0);
    let (st, v) = post(&client, &b, &format!("/threads/{thread}/resume"), resume).await;
    assert_eq!(st, 202, "{v}");
    wait_for(&client, &b, &thread, |s| {
        s["values"]["count"].as_i64() > Some(at + 2)
    })
    .await;
    let (st, v) = post(&client, &a, &format!("/threads/{thread}/runs"), counter).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("RUN_ACTIVE")),
        "{v}"
    );
    let (st, v) = post(&client, &b, &format!("/threads/{thread}/cancel"), json!({})).await;
    assert_eq!((st, v["cancelled"].as_bool()), (200, Some(true)), "{v}");
    wait_for(&client, &b, &thread, |s| s["active"] == false).await;
    // Nobody runs it now: a cancel anywhere is a no-op.
    let (st, v) = post(&client, &a, &format!("/threads/{thread}/cancel"), json!({})).await;
    assert_eq!((st, v["cancelled"].as_bool()), (200, Some(false)), "{v}");
    drop((a, b));
    drop_schema(&url, &schema).await;
}
