//! Thread owners shared between servers on one PostgreSQL database: a thread alice created
//! through server A is hers on server B too (B serves her its state and lists it), and bob —
//! authenticated on both — gets 404 for it on B and cannot claim it there by starting a run.
//! Both servers accept the same API keys (one keys file, copied). Needs
//! `AGENTGRAPH_TEST_POSTGRES_URL`; skips otherwise (fails under `CI=true`).

use crate::serve_failover::{drop_schema, fresh_schema, start_in, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const GRAPH: &str = r#"
graph counter {
  state {
    count: int = 0
  }

  node bump {
    set { count: count + 1 }
  }

  START -> bump
  bump -> END
}
"#;

fn create_key(db: &Path, name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db)
        .args(["keys", "create", "--name", name])
        .output()
        .expect("agentgraph keys create runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn call(
    s: &Server,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let http = reqwest::Client::new();
    let url = format!("{}{path}", s.base);
    let mut req = match method {
        "GET" => http.get(url),
        _ => http.post(url),
    };
    req = req.bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("the server answers");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn wait_up(s: &Server, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if reqwest::Client::new()
            .get(format!("{}/threads", s.base))
            .bearer_auth(key)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("server at {} did not come up", s.base);
}

fn listed(v: &Value) -> Vec<String> {
    v["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["thread_id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_belongs_to_its_owner_on_every_server_of_the_database() {
    let Some(url) = agentgraph_test_support::require_postgres() else {
        return;
    };
    let schema = fresh_schema();
    let graphs = tempfile::tempdir().expect("temp dir");
    std::fs::write(graphs.path().join("counter.ag"), GRAPH).expect("graph file");
    let (db_a, db_b) = (
        tempfile::tempdir().expect("temp dir"),
        tempfile::tempdir().expect("temp dir"),
    );
    let alice = create_key(db_a.path(), "alice");
    let bob = create_key(db_a.path(), "bob");
    std::fs::copy(
        db_a.path().join("api-keys.json"),
        db_b.path().join("api-keys.json"),
    )
    .expect("the keys file is shared");
    let a = start_in(db_a, &url, &schema, graphs.path());
    let b = start_in(db_b, &url, &schema, graphs.path());
    wait_up(&a, &alice).await;
    wait_up(&b, &alice).await;

    let thread = format!("owned-{}", std::process::id());
    let (st, v) = call(
        &a,
        "POST",
        &format!("/threads/{thread}/runs"),
        &alice,
        Some(json!({"graph": "counter"})),
    )
    .await;
    assert_eq!(st, 202, "{v}");
    // Server B sees the run end (the checkpoints are shared) and answers alice.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (st, v) = call(
            &b,
            "GET",
            &format!("/threads/{thread}/state?graph=counter"),
            &alice,
            None,
        )
        .await;
        assert_eq!(st, 200, "alice reads her thread on B: {v}");
        if v["values"]["count"] == 1 && v["active"] == false {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not finish: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, v) = call(&b, "GET", "/threads", &alice, None).await;
    assert!(listed(&v).contains(&thread), "B lists alice's thread: {v}");

    // Bob, on either server, gets nothing of it.
    for s in [&a, &b] {
        let (st, v) = call(s, "GET", &format!("/threads/{thread}/state"), &bob, None).await;
        assert_eq!(st, 404, "{v}");
        let (st, v) = call(
            s,
            "POST",
            &format!("/threads/{thread}/runs"),
            &bob,
            Some(json!({"graph": "counter"})),
        )
        .await;
        assert_eq!(st, 404, "bob cannot claim alice's thread: {v}");
        let (_, v) = call(s, "GET", "/threads", &bob, None).await;
        assert!(!listed(&v).contains(&thread), "{v}");
    }
    // A thread bob creates on B is his on A.
    let mine = format!("bobs-{}", std::process::id());
    let (st, v) = call(
        &b,
        "POST",
        &format!("/threads/{mine}/runs"),
        &bob,
        Some(json!({"graph": "counter"})),
    )
    .await;
    assert_eq!(st, 202, "{v}");
    let (st, v) = call(
        &a,
        "GET",
        &format!("/threads/{mine}/state?graph=counter"),
        &alice,
        None,
    )
    .await;
    assert_eq!(st, 404, "{v}");
    let (st, v) = call(
        &a,
        "GET",
        &format!("/threads/{mine}/state?graph=counter"),
        &bob,
        None,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    drop((a, b));
    drop_schema(&url, &schema).await;
}
