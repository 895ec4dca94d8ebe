//! What one principal cannot reach or use up of another's: memory sessions named in `config`,
//! working memory (a `config.principal` naming another is overridden), and the per-principal
//! limits (429 with `Retry-After`); and the refusal to serve off
//! loopback without authentication.

use super::*;
use agentgraph_agents::memory::{ChatMemory, SledMemory};

/// A one-node chat graph over the scripted model with a sled memory in `memory`.
fn chat_graph(graphs: &Path, memory: &Path) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples/scripts/chat.json");
    let text = format!(
        r#"graph chat {{
  state {{ messages: messages }}
  model main = scripted {{ script: "{}" }}
  node agent: llm {{ model: main, messages: messages, memory: {{ store: "sled", path: "{}" }} }}
  START -> agent -> END
}}
"#,
        script.display(),
        memory.display()
    );
    std::fs::write(graphs.join("chat.ag"), text).expect("graph");
}

fn ask(text: &str, session: &str) -> Value {
    json!({
        "graph": "chat",
        "input": {"messages": [{"type": "human", "id": text, "content": text}]},
        "config": {"session_id": session},
    })
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_session_named_by_another_principal_is_not_theirs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graphs = dir.path().join("graphs");
    std::fs::create_dir_all(&graphs).expect("graphs");
    let memory_dir = dir.path().join("memory");
    chat_graph(&graphs, &memory_dir);
    let mut cfg = config(dir.path(), Limits::default());
    cfg.graphs_dir = graphs;
    let keys = make_keys(&cfg.auth.keys.clone().expect("keys"));
    let s = Srv::start(cfg).await;

    let (st, v) = s
        .call(
            "POST",
            "/threads/a1/runs",
            Some(&keys.alice),
            Some(ask("alice's secret", "shared")),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_idle("a1", &keys.alice).await;
    // Bob names alice's session on his own thread.
    let (st, v) = s
        .call(
            "POST",
            "/threads/b1/runs",
            Some(&keys.bob),
            Some(ask("bob asks", "shared")),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_idle("b1", &keys.bob).await;
    let (_, state) = s
        .call("GET", "/threads/b1/state", Some(&keys.bob), None)
        .await;
    assert!(
        !state.to_string().contains("alice's secret"),
        "bob's run saw alice's conversation: {state}"
    );

    // Each principal's `shared` is its own (namespace `tenant/user/`), the bare name nobody's.
    let memory = SledMemory::open(&memory_dir).expect("memory");
    let alice = contents(&memory.load("default/alice/shared").await.expect("load"));
    let bob = contents(&memory.load("default/bob/shared").await.expect("load"));
    assert_eq!(
        alice.first().map(String::as_str),
        Some("alice's secret"),
        "{alice:?}"
    );
    assert_eq!(alice.len(), 2, "alice's turn only: {alice:?}");
    assert_eq!(bob.first().map(String::as_str), Some("bob asks"), "{bob:?}");
    assert_eq!(bob.len(), 2, "bob's turn only, nothing of alice's: {bob:?}");
    assert!(memory.load("shared").await.expect("load").is_empty());
    s.stop().await;
}

/// A graph loading the principal's working memory (`observe`) before a scripted model that
/// saves it when asked to remember something.
fn working_memory_graph(graphs: &Path) {
    let script = json!({"responses": [
        {"node": "agent", "match": "remember that",
         "tool_calls": [{"name": "update_working_memory", "args": {"memory": "- Likes tea"}}]},
        {"node": "agent", "match": "Working memory saved.", "text": "Saved."},
        {"node": "agent", "match": "hello there", "text": "Hello."}
    ]});
    std::fs::write(graphs.join("wm.json"), script.to_string()).expect("script");
    let text = r#"graph wm {
  state {
    messages: messages
    observations: string?
    working_memory: string?
  }
  model main = scripted { script: "wm.json" }
  tools kit = [update_working_memory]
  node observe: observe { model: main, working_memory: working_memory }
  node agent: llm { model: main, tools: kit, working_memory: working_memory }
  node tools: tool_executor { tools: kit }
  START -> observe -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> observe
}
"#;
    std::fs::write(graphs.join("wm.ag"), text).expect("graph");
}

#[tokio::test]
async fn working_memory_is_the_callers_whatever_principal_the_request_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graphs = dir.path().join("graphs");
    std::fs::create_dir_all(&graphs).expect("graphs");
    working_memory_graph(&graphs);
    let mut cfg = config(dir.path(), Limits::default());
    cfg.graphs_dir = graphs;
    let keys = make_keys(&cfg.auth.keys.clone().expect("keys"));
    let s = Srv::start(cfg).await;
    let run = |text: &str| {
        json!({"graph": "wm",
               "input": {"messages": [{"type": "human", "content": text}]},
               // Names bob: the server runs it as alice all the same.
               "config": {"principal": "default/bob"}})
    };
    let turns = [
        ("a1", &keys.alice, "remember that I like tea"),
        ("b1", &keys.bob, "hello there"),
        ("a2", &keys.alice, "hello there"),
    ];
    for (thread, key, text) in turns {
        let (st, v) = s
            .call(
                "POST",
                &format!("/threads/{thread}/runs"),
                Some(key),
                Some(run(text)),
            )
            .await;
        assert_eq!(st, 202, "{v}");
        s.wait_idle(thread, key).await;
    }
    let (_, bob) = s
        .call("GET", "/threads/b1/state", Some(&keys.bob), None)
        .await;
    assert_eq!(bob["values"]["working_memory"], Value::Null, "{bob}");
    assert!(!bob.to_string().contains("Likes tea"), "{bob}");
    let (_, alice) = s
        .call("GET", "/threads/a2/state", Some(&keys.alice), None)
        .await;
    assert_eq!(alice["values"]["working_memory"], "- Likes tea", "{alice}");
    s.stop().await;
}

#[tokio::test]
async fn limits_answer_429_with_retry_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        max_concurrent_runs: 1,
        runs_per_minute: 2,
        max_streams: 1,
    };
    let cfg = config(dir.path(), limits);
    let keys = make_keys(&cfg.auth.keys.clone().expect("keys"));
    let s = Srv::start(cfg).await;
    // A long run (cancelled below) holds alice's one run slot.
    let long = json!({"graph": "counter", "input": {"limit": 100_000_000}});
    let post = |thread: &'static str, key: &str| {
        let key = key.to_string();
        let long = long.clone();
        let http = s.http.clone();
        let url = s.url(&format!("/threads/{thread}/runs"));
        async move {
            http.post(url)
                .bearer_auth(key)
                .json(&long)
                .send()
                .await
                .expect("send")
        }
    };
    assert_eq!(post("l1", &keys.alice).await.status().as_u16(), 202);
    let r = post("l2", &keys.alice).await;
    assert_eq!(r.status().as_u16(), 429, "a second run at once");
    let retry: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After seconds");
    assert!(retry >= 1);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "RATE_LIMITED");
    // Another principal has its own slots.
    assert_eq!(post("m1", &keys.bob).await.status().as_u16(), 202);
    for (t, k) in [("l1", &keys.alice), ("m1", &keys.bob)] {
        let (st, _) = s
            .call(
                "POST",
                &format!("/threads/{t}/cancel"),
                Some(k),
                Some(json!({})),
            )
            .await;
        assert_eq!(st, 200);
        s.wait_idle(t, k).await;
    }
    // The slot came back with the run's end: a second run in this minute starts...
    let (st, _) = s
        .call(
            "POST",
            "/threads/l3/runs",
            Some(&keys.alice),
            Some(json!({"graph": "counter"})),
        )
        .await;
    assert_eq!(st, 202);
    s.wait_idle("l3", &keys.alice).await;
    // ...and a third is over the per-minute limit, told to wait for the window.
    let r = post("l4", &keys.alice).await;
    assert_eq!(r.status().as_u16(), 429);
    let retry: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After seconds");
    assert!((2..=61).contains(&retry), "about a minute: {retry}");

    // One open event stream each.
    let open = |key: &str| {
        s.http
            .get(s.url("/threads/l1/events"))
            .bearer_auth(key.to_string())
            .send()
    };
    let first = open(&keys.alice).await.expect("sse");
    assert_eq!(first.status().as_u16(), 200);
    let second = open(&keys.alice).await.expect("sse");
    assert_eq!(second.status().as_u16(), 429);
    assert!(second.headers().contains_key("retry-after"));
    drop(first);
    s.stop().await;
}

#[test]
fn serving_off_loopback_needs_authentication() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let public: std::net::SocketAddr = "0.0.0.0:8080".parse().expect("addr");
    let base = || {
        ServerConfig::new(graphs_dir(), &db)
            .storage(Storage::Memory)
            .addr(public)
    };
    let err = ServerState::new(&base()).err().expect("refused");
    assert!(err.to_string().contains("without authentication"), "{err}");
    // Loopback stays open.
    let loopback = "127.0.0.1:8080".parse().expect("addr");
    assert!(ServerState::new(&base().addr(loopback)).is_ok());
    // Opting out, a JWT secret, or an active key each allow it.
    let mut insecure = base();
    insecure.auth.insecure_no_auth = true;
    assert!(ServerState::new(&insecure).is_ok());
    let mut jwt = base();
    jwt.auth.jwt = JwtConfig::default()
        .with_hs256_secret(HS_SECRET)
        .expect("secret");
    assert!(ServerState::new(&jwt).is_ok());
    // Revoked keys only: still refused.
    let store = KeyStore::in_dir(&db);
    store.create("k", None, None, vec![]).expect("key");
    store.revoke("k").expect("revoke");
    assert!(ServerState::new(&base()).is_err());
    store.create("k2", None, None, vec![]).expect("key");
    assert!(ServerState::new(&base()).is_ok());
    // A CORS origin that is not an origin is refused rather than ignored.
    let mut cors = base();
    cors.auth.cors_origins = vec!["https://app.example/path".into()];
    assert!(ServerState::new(&cors).is_err());
}
