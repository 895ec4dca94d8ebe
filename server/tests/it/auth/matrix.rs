//! The auth matrix: every endpoint as every kind of caller, with the status the security
//! rules give (401 without a valid key or token, 404 on another principal's thread, the
//! endpoint's own answer for the owner and for `admin`).

use super::*;

/// Who calls: a label, the bearer token, and what the rules make of it.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Role {
    /// No valid credential: 401 everywhere but the page.
    Nobody,
    /// The thread's owner.
    Owner,
    /// An authenticated principal that does not own the thread.
    Other,
    /// The `admin` scope.
    Admin,
}

/// The expected status of `endpoint` for `role` on alice's finished thread `ta`.
fn expected(role: Role, endpoint: &str) -> u16 {
    match (role, endpoint) {
        (_, "page" | "health" | "openapi") => 200,
        (Role::Nobody, _) => 401,
        (Role::Admin, "metrics") => 200,
        (_, "metrics") => 403,
        (_, "list" | "graphs" | "graph" | "studio-graphs" | "diagram") => 200,
        (Role::Other, _) => 404,
        // Owner and admin reach the endpoint itself: the thread is done, so there is nothing
        // to resume (400) and nothing to cancel (200), and a new run starts (202).
        (_, "resume") => 400,
        // The fork route is reached: the checkpoint id is refused.
        (_, "fork") => 400,
        // The task route is reached: the thread has no such task.
        (_, "task-cancel") => 404,
        (_, "runs") => 202,
        (_, _) => 200,
    }
}

/// Every route of the server (the OpenAPI test checks this list against `/openapi.json`).
pub(super) const ENDPOINTS: [(&str, &str, &str); 18] = [
    ("list", "GET", "/threads"),
    ("state", "GET", "/threads/ta/state"),
    ("history", "GET", "/threads/ta/history"),
    ("events", "GET", "/threads/ta/events?lastEventId=0"),
    ("resume", "POST", "/threads/ta/resume"),
    ("cancel", "POST", "/threads/ta/cancel"),
    ("runs", "POST", "/threads/ta/runs"),
    ("graphs", "GET", "/graphs"),
    ("page", "GET", "/"),
    ("studio-graphs", "GET", "/studio/graphs"),
    ("diagram", "GET", "/studio/graphs/counter"),
    ("fork", "POST", "/threads/ta/fork"),
    ("graph", "GET", "/graphs/counter"),
    ("health", "GET", "/health"),
    ("metrics", "GET", "/metrics"),
    ("openapi", "GET", "/openapi.json"),
    ("tasks", "GET", "/threads/ta/tasks"),
    ("task-cancel", "POST", "/threads/ta/tasks/none/cancel"),
];

fn body(endpoint: &str) -> Option<Value> {
    match endpoint {
        "resume" | "cancel" | "task-cancel" => Some(json!({})),
        "fork" => Some(json!({"checkpoint_id": "not-a-checkpoint"})),
        "runs" => Some(json!({"graph": "counter"})),
        _ => None,
    }
}

#[tokio::test]
async fn every_endpoint_as_every_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path(), Limits::default());
    let store = cfg.auth.keys.clone().expect("keys");
    let keys = make_keys(&store);
    let s = Srv::start(cfg).await;

    // Alice creates the thread.
    let (st, v) = s
        .call("POST", "/threads/ta/runs", Some(&keys.alice), body("runs"))
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_idle("ta", &keys.alice).await;

    let exp = now() + 600;
    let callers: Vec<(&str, Option<String>, Role)> = vec![
        ("no key", None, Role::Nobody),
        ("malformed key", Some("not-a-key".into()), Role::Nobody),
        (
            "unknown key",
            Some(format!("agk_{}_{}", "0".repeat(12), "0".repeat(64))),
            Role::Nobody,
        ),
        ("revoked key", Some(keys.revoked.clone()), Role::Nobody),
        (
            "expired JWT",
            Some(hs256(json!({"sub": "alice", "exp": now() - 3600}))),
            Role::Nobody,
        ),
        (
            "JWT with a wrong signature",
            Some(
                jsonwebtoken::encode(
                    &Header::new(Algorithm::HS256),
                    &json!({"sub": "alice", "exp": exp}),
                    &EncodingKey::from_secret(b"another secret"),
                )
                .expect("sign"),
            ),
            Role::Nobody,
        ),
        ("alice's key", Some(keys.alice.clone()), Role::Owner),
        (
            "HS256 JWT sub=alice",
            Some(hs256(json!({"sub": "alice", "exp": exp}))),
            Role::Owner,
        ),
        (
            "RS256 JWT sub=alice",
            Some(rs256(json!({"sub": "alice", "exp": exp}))),
            Role::Owner,
        ),
        ("bob's key", Some(keys.bob.clone()), Role::Other),
        (
            "RS256 JWT sub=alice tenant=other",
            Some(rs256(
                json!({"sub": "alice", "tenant": "other", "exp": exp}),
            )),
            Role::Other,
        ),
        (
            "HS256 JWT sub=bob",
            Some(hs256(json!({"sub": "bob", "scopes": ["read"], "exp": exp}))),
            Role::Other,
        ),
        ("admin key", Some(keys.admin.clone()), Role::Admin),
        (
            "HS256 JWT scope=admin",
            Some(hs256(json!({"sub": "ops2", "scope": "admin", "exp": exp}))),
            Role::Admin,
        ),
    ];
    let mut wrong = Vec::new();
    for (who, token, role) in &callers {
        for (endpoint, method, path) in ENDPOINTS {
            let (st, v) = s.call(method, path, token.as_deref(), body(endpoint)).await;
            let want = expected(*role, endpoint);
            if st != want {
                wrong.push(format!(
                    "{who} {method} {path}: got {st}, want {want} ({v})"
                ));
            }
            if st == 202 {
                s.wait_idle("ta", &keys.alice).await;
            }
            if st == 401 && v["error"]["code"] != "UNAUTHORIZED" {
                wrong.push(format!("{who} {path}: 401 without UNAUTHORIZED ({v})"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // Lists: the owner's and admin's show the thread, another principal's does not.
    let threads = |v: &Value| -> Vec<String> {
        v["threads"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["thread_id"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (_, v) = s.call("GET", "/threads", Some(&keys.alice), None).await;
    assert_eq!(threads(&v), ["ta"]);
    let (_, v) = s.call("GET", "/threads", Some(&keys.bob), None).await;
    assert!(threads(&v).is_empty(), "{v}");
    let (st, _) = s
        .call("POST", "/threads/tb/runs", Some(&keys.bob), body("runs"))
        .await;
    assert_eq!(st, 202);
    s.wait_idle("tb", &keys.bob).await;
    let (_, v) = s.call("GET", "/threads", Some(&keys.bob), None).await;
    assert_eq!(threads(&v), ["tb"]);
    let (_, v) = s.call("GET", "/threads", Some(&keys.admin), None).await;
    assert_eq!(threads(&v), ["ta", "tb"]);
    // Alice cannot take over bob's thread by starting a run on it.
    let (st, _) = s
        .call("POST", "/threads/tb/runs", Some(&keys.alice), body("runs"))
        .await;
    assert_eq!(st, 404);

    // Subscribing to a new thread's events claims it, as its first run would (the chat page
    // subscribes before it starts a run): nobody else can take it afterwards.
    let (st, _) = s
        .call("GET", "/threads/fresh/events", Some(&keys.bob), None)
        .await;
    assert_eq!(st, 200);
    let (st, _) = s
        .call(
            "POST",
            "/threads/fresh/runs",
            Some(&keys.alice),
            body("runs"),
        )
        .await;
    assert_eq!(st, 404);
    let (st, _) = s
        .call("GET", "/threads/fresh/events", Some(&keys.alice), None)
        .await;
    assert_eq!(st, 404);
    let (st, _) = s
        .call("POST", "/threads/fresh/runs", Some(&keys.bob), body("runs"))
        .await;
    assert_eq!(st, 202);
    s.wait_idle("fresh", &keys.bob).await;
    // Reading a thread that does not exist claims nothing.
    let (st, _) = s
        .call("GET", "/threads/unused/state", Some(&keys.bob), None)
        .await;
    assert_eq!(st, 404);
    let (st, _) = s
        .call(
            "POST",
            "/threads/unused/runs",
            Some(&keys.alice),
            body("runs"),
        )
        .await;
    assert_eq!(st, 202);
    s.wait_idle("unused", &keys.alice).await;

    // Odd spellings of the path reach nothing of alice's either.
    for path in [
        "//threads/ta/state",
        "/threads//ta/state",
        "/threads/ta/state/",
    ] {
        let (st, v) = s.call("GET", path, Some(&keys.bob), None).await;
        assert_eq!(st, 404, "{path}: {v}");
    }

    // Another's thread and no thread at all answer alike.
    let (st1, v1) = s
        .call("GET", "/threads/ta/state", Some(&keys.bob), None)
        .await;
    let (st2, v2) = s
        .call("GET", "/threads/nope/state", Some(&keys.bob), None)
        .await;
    assert_eq!((st1, &v1["error"]["code"]), (st2, &v2["error"]["code"]));

    // The event stream (only it) takes the key as `access_token`, for EventSource.
    for (path, want) in [
        (
            format!(
                "/threads/ta/events?lastEventId=0&access_token={}",
                keys.alice
            ),
            200,
        ),
        (format!("/threads/ta/events?access_token={}", keys.bob), 404),
        (
            format!("/threads/ta/state?access_token={}", keys.alice),
            401,
        ),
    ] {
        let (st, v) = s.call("GET", &path, None, None).await;
        assert_eq!(st, want, "{path}: {v}");
    }
    // A 401 says how to authenticate.
    let r = s.http.get(s.url("/threads")).send().await.expect("send");
    assert_eq!(
        r.headers().get("www-authenticate").map(|v| v.as_bytes()),
        Some(&b"Bearer"[..])
    );

    // Revoking takes effect on the next request of the running server.
    store.revoke("alice").expect("revoke");
    let (st, _) = s.call("GET", "/threads", Some(&keys.alice), None).await;
    assert_eq!(st, 401);
    s.stop().await;

    // Owners are durable: after a restart bob still gets 404 and the admin sees the thread.
    let s = Srv::start(config(dir.path(), Limits::default())).await;
    let (st, _) = s
        .call("GET", "/threads/ta/state", Some(&keys.bob), None)
        .await;
    assert_eq!(st, 404);
    let (st, _) = s
        .call("GET", "/threads/ta/state", Some(&keys.admin), None)
        .await;
    assert_eq!(st, 200);
    let jwt_alice = hs256(json!({"sub": "alice", "exp": now() + 600}));
    let (st, _) = s
        .call("GET", "/threads/ta/state", Some(&jwt_alice), None)
        .await;
    assert_eq!(st, 200);
    s.stop().await;
}

/// Threads made before authentication was turned on (no owner) are the admin's only.
#[tokio::test]
async fn threads_from_before_authentication_are_admin_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path(), Limits::default());
    let store = cfg.auth.keys.clone().expect("keys");
    // No keys file yet: an open loopback server.
    let s = Srv::start(cfg.clone().auth(AuthConfig {
        keys: cfg.auth.keys.clone(),
        ..AuthConfig::default()
    }))
    .await;
    let (st, _) = s
        .call("POST", "/threads/old/runs", None, body("runs"))
        .await;
    assert_eq!(st, 202);
    s.wait_idle("old", "").await;
    s.stop().await;

    let keys = make_keys(&store);
    let s = Srv::start(cfg).await;
    for (token, want) in [(&keys.alice, 404), (&keys.bob, 404), (&keys.admin, 200)] {
        let (st, _) = s.call("GET", "/threads/old/state", Some(token), None).await;
        assert_eq!(st, want);
    }
    // Nobody claims it by starting a run on it.
    let (st, _) = s
        .call("POST", "/threads/old/runs", Some(&keys.alice), body("runs"))
        .await;
    assert_eq!(st, 404);
    s.stop().await;
}

/// `/health` answers load balancers without a key; `/metrics` wants an admin key.
#[tokio::test(flavor = "multi_thread")]
async fn health_is_open_and_metrics_are_for_admins() {
    let dir = tempfile::tempdir().expect("dir");
    let cfg = config(dir.path(), Limits::default());
    let store = KeyStore::in_dir(&dir.path().join("db"));
    let keys = make_keys(&store);
    let s = Srv::start(cfg).await;
    let (st, v) = s.call("GET", "/health", None, None).await;
    assert_eq!((st, v["status"].as_str()), (200, Some("ok")), "{v}");
    for (token, want) in [
        (None, 401),
        (Some(keys.revoked.as_str()), 401),
        (Some(keys.alice.as_str()), 403),
        (Some(keys.admin.as_str()), 200),
    ] {
        let mut req = s.http.get(s.url("/metrics"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("send");
        assert_eq!(r.status().as_u16(), want, "{token:?}");
        if want == 200 {
            let text = r.text().await.expect("text");
            assert!(
                text.contains("agentgraph_runs_total{status=\"done\"}"),
                "{text}"
            );
        }
    }
    s.stop().await;
}
