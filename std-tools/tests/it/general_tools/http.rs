//! `http_request`: address classification and SSRF refusals without network, then
//! requests against loopback servers.

use super::*;

#[test]
fn address_classification() {
    for blocked in [
        "127.0.0.1",
        "127.1.2.3",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "fc00::1",
        "fd12:3456::1",
        "fd00:ec2::254",
        "fe80::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.1.2.3",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::",
    ] {
        let ip = blocked.parse().unwrap();
        assert!(blocked_reason(ip).is_some(), "{blocked} should be blocked");
    }
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "100.128.0.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
    ] {
        let ip = public.parse().unwrap();
        assert_eq!(blocked_reason(ip), None, "{public} should be allowed");
    }
    let meta: std::net::IpAddr = "169.254.169.254".parse().unwrap();
    assert!(blocked_reason(meta).unwrap().contains("metadata"));
    let lax = HttpPolicy {
        allow_private: true,
        ..HttpPolicy::default()
    };
    assert_eq!(lax.refusal("10.0.0.1".parse().unwrap()), None);
    assert!(lax.refusal(meta).is_some(), "metadata stays blocked");
    let hosts = HttpPolicy {
        allowed_hosts: vec!["Example.com".into(), "*.corp.test".into(), "[::1]".into()],
        ..HttpPolicy::default()
    };
    assert!(hosts.host_allowed("example.com"));
    assert!(hosts.host_allowed("api.corp.test"));
    assert!(!hosts.host_allowed("corp.test"));
    assert!(!hosts.host_allowed("evilcorp.test"));
    assert!(hosts.host_allowed("[::1]"));
}

#[tokio::test]
async fn http_blocked_targets_without_network() {
    let ctx = ctx().await;
    let tool = HttpRequest::new();
    for url in [
        "http://127.0.0.1/",
        "http://127.0.0.1:9/admin",
        "http://10.0.0.1/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://[0:0:0:0:0:ffff:7f00:1]/",
    ] {
        let e = call(&tool, json!({"url": url}), &ctx).await.unwrap_err();
        assert_eq!(e.code, "BLOCKED_ADDRESS", "{url}: {}", e.message);
        assert!(e.message.contains("allowed_hosts"), "{}", e.message);
    }
    for url in [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "not a url",
        "/relative",
    ] {
        let e = call(&tool, json!({"url": url}), &ctx).await.unwrap_err();
        assert_eq!(e.code, "INVALID_URL", "{url}: {}", e.message);
    }
    // Allowing private addresses never opens the metadata endpoint.
    let lax = ctx_with(json!({"allow_private": true})).await;
    let e = call(&tool, json!({"url": "http://169.254.169.254/"}), &lax)
        .await
        .unwrap_err();
    assert_eq!(e.code, "BLOCKED_ADDRESS");
}

#[tokio::test]
async fn http_arguments_and_settings_are_checked() {
    let tool = HttpRequest::new();
    let ctx = ctx().await;
    let bad = [
        json!({"url": "https://example.com", "method": "TRACE"}),
        json!({"url": "https://example.com", "body": "x", "json": {"a": 1}}),
        json!({"url": "https://example.com", "headers": {"bad header": "x"}}),
        json!({"url": "https://example.com", "timeout_secs": -1}),
        json!({"url": "https://example.com", "extra": 1}),
        json!({}),
    ];
    for args in bad {
        let e = call(&tool, args.clone(), &ctx).await.unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENTS", "{args}: {}", e.message);
    }
    let weird = ctx_with(json!({"allow_privat": true})).await;
    let e = call(&tool, json!({"url": "https://example.com"}), &weird)
        .await
        .unwrap_err();
    assert_eq!(e.code, "INVALID_SETTINGS");
    let p = HttpPolicy::default()
        .with_settings(&json!({"max_redirects": 1, "timeout_secs": 2.5, "allowed_hosts": ["a"]}))
        .unwrap();
    assert_eq!(p.max_redirects, 1);
    assert_eq!(p.timeout, Duration::from_millis(2500));
    assert_eq!(p.allowed_hosts, vec!["a".to_string()]);
    assert!(!p.allow_private);
    // Graph files hand every tool a `base_dir`; it is not a typo.
    let from_graph = HttpPolicy::default()
        .with_settings(&json!({"base_dir": "/graphs", "max_redirects": 2}))
        .unwrap();
    assert_eq!(from_graph.max_redirects, 2);
}

// ---------------------------------------------------------------------------------------------
// HTTP request: loopback server
// ---------------------------------------------------------------------------------------------

/// A tool allowed to reach `127.0.0.1` only (by name: `localhost` stays blocked).
fn loopback_tool() -> HttpRequest {
    HttpRequest::with_policy(HttpPolicy {
        allowed_hosts: vec!["127.0.0.1".into()],
        ..HttpPolicy::default()
    })
}

#[tokio::test]
async fn http_get_with_headers_and_query() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", "rust lang"))
        .and(query_param("page", "2"))
        .and(header("x-api-key", "k-123"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-served-by", "mock")
                .set_body_json(json!({"results": ["a", "b"]})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let out = call(
        &loopback_tool(),
        json!({
            "url": format!("{}/search", server.uri()),
            "query": {"q": "rust lang", "page": 2},
            "headers": {"X-Api-Key": "k-123"}
        }),
        &ctx().await,
    )
    .await
    .unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], json!({"results": ["a", "b"]}));
    assert_eq!(out["headers"]["x-served-by"], "mock");
    assert_eq!(out["truncated"], false);
    assert!(out["url"].as_str().unwrap().contains("q=rust+lang"));
}

#[tokio::test]
async fn http_post_json_and_raw_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/items"))
        .and(header("content-type", "application/json"))
        .and(body_json(json!({"name": "widget", "qty": 3})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 7})))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/raw"))
        .and(header("content-type", "text/plain"))
        .respond_with(ResponseTemplate::new(200).set_body_string("stored"))
        .mount(&server)
        .await;
    let ctx = ctx().await;
    let tool = loopback_tool();
    let out = call(
        &tool,
        json!({"url": format!("{}/items", server.uri()), "method": "POST",
               "json": {"name": "widget", "qty": 3}}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["status"], 201);
    assert_eq!(out["body"], json!({"id": 7}));
    let out = call(
        &tool,
        json!({"url": format!("{}/raw", server.uri()), "method": "PUT", "body": "hello",
               "headers": {"Content-Type": "text/plain"}}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["body"], "stored");
}

#[tokio::test]
async fn http_error_status() {
    let server = MockServer::start().await;
    Mock::given(path("/missing"))
        .respond_with(ResponseTemplate::new(404).set_body_string("no such thing"))
        .mount(&server)
        .await;
    let e = call(
        &loopback_tool(),
        json!({"url": format!("{}/missing", server.uri())}),
        &ctx().await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "HTTP_ERROR");
    assert!(e.message.contains("404"), "{}", e.message);
    assert!(e.message.contains("no such thing"), "{}", e.message);
}

#[tokio::test]
async fn http_redirects_are_followed_and_checked() {
    let server = MockServer::start().await;
    let port = server.address().port();
    Mock::given(path("/start"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/end"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/end"))
        .respond_with(ResponseTemplate::new(200).set_body_string("arrived"))
        .mount(&server)
        .await;
    Mock::given(path("/to-localhost"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("http://localhost:{port}/end").as_str()),
        )
        .mount(&server)
        .await;
    Mock::given(path("/to-private"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "http://10.0.0.1/x"))
        .mount(&server)
        .await;
    Mock::given(path("/to-metadata"))
        .respond_with(ResponseTemplate::new(301).insert_header(
            "location",
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        ))
        .mount(&server)
        .await;
    Mock::given(path("/to-ftp"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "ftp://example.com/"))
        .mount(&server)
        .await;
    Mock::given(path("/loop"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/loop"))
        .mount(&server)
        .await;

    let ctx = ctx().await;
    let tool = loopback_tool();
    let url =
        |p: &str| json!({"url": format!("{}{p}", server.uri()), "method": "POST", "json": {}});
    let out = call(&tool, url("/start"), &ctx).await.unwrap();
    assert_eq!(out["body"], "arrived");
    assert!(out["url"].as_str().unwrap().ends_with("/end"));

    // Without a body: a 307 with a body to another origin is refused before its address is.
    let url = |p: &str| json!({"url": format!("{}{p}", server.uri())});
    for (p, want) in [
        ("/to-localhost", "BLOCKED_ADDRESS"),
        ("/to-private", "BLOCKED_ADDRESS"),
        ("/to-metadata", "BLOCKED_ADDRESS"),
        ("/to-ftp", "INVALID_URL"),
        ("/loop", "TOO_MANY_REDIRECTS"),
    ] {
        let e = call(&tool, url(p), &ctx).await.unwrap_err();
        assert_eq!(e.code, want, "{p}: {}", e.message);
    }
    // The metadata endpoint stays blocked after a redirect even when private addresses are on.
    let lax = ctx_with(json!({"allow_private": true, "allowed_hosts": []})).await;
    let e = call(&tool, url("/to-metadata"), &lax).await.unwrap_err();
    assert_eq!(e.code, "BLOCKED_ADDRESS");
    // With private addresses allowed, localhost is reachable (resolved, pinned, connected).
    let out = call(&tool, url("/to-localhost"), &lax).await.unwrap();
    assert_eq!(out["body"], "arrived");
    // The redirect limit comes from the settings; 0 returns the 3xx as it is.
    let strict = ctx_with(json!({"max_redirects": 0})).await;
    let out = call(&tool, url("/start"), &strict).await.unwrap();
    assert_eq!(out["status"], 302);
    assert_eq!(out["headers"]["location"], "/end");
}

#[tokio::test]
async fn http_timeout() {
    let server = MockServer::start().await;
    Mock::given(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let ctx = ctx().await;
    let started = std::time::Instant::now();
    let e = call(
        &loopback_tool(),
        json!({"url": format!("{}/slow", server.uri()), "timeout_secs": 0.3}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "TIMEOUT", "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(2));
    // The operator's default applies when the call gives none, and caps what a call asks.
    let capped = ctx_with(json!({"timeout_secs": 0.3, "max_timeout_secs": 0.4})).await;
    let e = call(
        &loopback_tool(),
        json!({"url": format!("{}/slow", server.uri()), "timeout_secs": 100}),
        &capped,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "TIMEOUT", "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn http_cancellation() {
    let server = MockServer::start().await;
    Mock::given(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let ctx = ctx().await;
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let started = std::time::Instant::now();
    let e = call(
        &loopback_tool(),
        json!({"url": format!("{}/slow", server.uri())}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "CANCELLED", "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn http_response_size_cap() {
    let server = MockServer::start().await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(10_000)))
        .mount(&server)
        .await;
    Mock::given(path("/big.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": "y".repeat(10_000)})))
        .mount(&server)
        .await;
    let ctx = ctx_with(json!({"max_response_bytes": 100})).await;
    let tool = loopback_tool();
    let out = call(&tool, json!({"url": format!("{}/big", server.uri())}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["body"].as_str().unwrap().len(), 100);
    assert!(out["note"].as_str().unwrap().contains("100 bytes"));
    // A cut JSON answer comes back as text.
    let out = call(
        &tool,
        json!({"url": format!("{}/big.json", server.uri())}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["truncated"], true);
    assert!(out["body"].as_str().unwrap().starts_with("{\"data\""));
}

#[tokio::test]
async fn http_connection_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let e = call(
        &loopback_tool(),
        json!({"url": format!("http://127.0.0.1:{port}/")}),
        &ctx().await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "REQUEST_FAILED", "{}", e.message);
}

#[tokio::test]
async fn http_cross_origin_redirect_drops_headers_and_body() {
    // Two servers on two ports are two origins.
    let first = MockServer::start().await;
    let other = MockServer::start().await;
    let land = format!("{}/land", other.uri());
    for (p, status) in [("/see-other", 302), ("/keep-post", 307), ("/get-307", 307)] {
        Mock::given(path(p))
            .respond_with(ResponseTemplate::new(status).insert_header("location", land.as_str()))
            .mount(&first)
            .await;
    }
    Mock::given(path("/same-307"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/echo"))
        .mount(&first)
        .await;
    Mock::given(path("/echo"))
        .respond_with(ResponseTemplate::new(200).set_body_string("same origin"))
        .mount(&first)
        .await;
    Mock::given(path("/land"))
        .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
        .mount(&other)
        .await;
    let ctx = ctx().await;
    let tool = loopback_tool();
    let secret = json!({"X-Api-Key": "k-secret", "Authorization": "Bearer t-secret",
                        "X-Custom": "c"});

    // A POST answered 302 becomes a GET at the other origin: no header the caller set, no body.
    let out = call(
        &tool,
        json!({"url": format!("{}/see-other", first.uri()), "method": "POST",
               "headers": secret, "json": {"card": "4242"}, "idempotency_key": true}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["body"], "landed");
    // A GET answered 307 is followed, without the caller's headers.
    let out = call(
        &tool,
        json!({"url": format!("{}/get-307", first.uri()), "headers": secret}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["body"], "landed");
    // A POST answered 307 to another origin is not followed at all.
    let e = call(
        &tool,
        json!({"url": format!("{}/keep-post", first.uri()), "method": "POST",
               "headers": secret, "json": {"card": "4242"}}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "CROSS_ORIGIN_REDIRECT", "{}", e.message);
    assert!(e.message.contains(&land), "{}", e.message);

    let landed = other.received_requests().await.unwrap();
    assert_eq!(
        landed.len(),
        2,
        "the 307 POST must not reach the other origin"
    );
    for r in &landed {
        assert_eq!(r.method.as_str(), "GET");
        assert!(r.body.is_empty(), "body forwarded: {:?}", r.body);
        for h in ["x-api-key", "authorization", "x-custom", "idempotency-key"] {
            assert!(r.headers.get(h).is_none(), "{h} forwarded across origins");
        }
    }

    // The same origin keeps the method, the headers and the body on a 307.
    let out = call(
        &tool,
        json!({"url": format!("{}/same-307", first.uri()), "method": "POST",
               "headers": secret, "json": {"card": "4242"}}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(out["body"], "same origin");
    let echoed = first.received_requests().await.unwrap();
    let echo = echoed.iter().find(|r| r.url.path() == "/echo").unwrap();
    assert_eq!(echo.method.as_str(), "POST");
    assert_eq!(echo.headers.get("x-api-key").unwrap(), "k-secret");
    assert_eq!(echo.body, br#"{"card":"4242"}"#);
}

/// A tool that asks a human (an interrupt) and returns the answer.
struct Ask;

#[async_trait::async_trait]
impl Tool for Ask {
    fn name(&self) -> &str {
        "ask"
    }
    fn description(&self) -> &str {
        "asks a human"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _args: Value,
        ctx: &ToolContext,
    ) -> Result<agentgraph_agents::tools::ToolOutput, ToolError> {
        let answer = ctx.interrupt(json!("go on?"))?;
        Ok(agentgraph_agents::tools::ToolOutput::text(
            answer.to_string(),
        ))
    }
}

#[tokio::test]
async fn http_idempotency_key_is_the_same_when_a_step_runs_again() {
    use agentgraph_agents::nodes::ToolExecutorNode;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/charge"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&server)
        .await;
    let tools =
        ToolExecutorNode::new([Arc::new(HttpRequest::new()) as Arc<dyn Tool>, Arc::new(Ask)])
            .settings(
                "http_request",
                json!({"allowed_hosts": ["127.0.0.1"], "idempotency_key": true}),
            );
    let g = GraphBuilder::new("tools")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .node("tools", Arc::new(tools))
        .chain(&["START", "tools", "END"])
        .compile()
        .unwrap()
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let charge = |id: &str, cents: i64| {
        json!({"id": id, "name": "http_request", "args": {
            "url": format!("{}/charge", server.uri()), "method": "POST", "json": {"cents": cents}}})
    };
    // The step calls the service, then a tool stops it for a human; answering runs the whole
    // step again (the crash path is the same: the step restarts from its checkpoint).
    let ai = json!({"type": "ai", "id": "ai-1", "content": "", "tool_calls": [
        charge("c1", 500), {"id": "c2", "name": "ask", "args": {}}
    ]});
    for thread in ["t1", "t2"] {
        let out = g
            .invoke(
                Input::values(json!({"messages": [ai.clone()]})),
                RunConfig::thread(thread),
            )
            .await
            .unwrap();
        assert!(
            matches!(out.status, RunStatus::Interrupted { .. }),
            "the ask tool interrupts: {:?}",
            out.status
        );
        g.invoke(Input::resume(json!("yes")), RunConfig::thread(thread))
            .await
            .unwrap();
    }
    let keys: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            r.headers
                .get("idempotency-key")
                .expect("the setting sends the key")
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(keys.len(), 4, "each thread's step ran twice: {keys:?}");
    assert_eq!(keys[0], keys[1], "the re-run of a step sends the same key");
    assert_eq!(keys[2], keys[3]);
    assert_ne!(keys[0], keys[2], "another thread's call gets another key");
    assert!(
        keys[0].starts_with("ag-") && keys[0].len() == 35,
        "{}",
        keys[0]
    );

    // Two calls of one step get two keys; a key the caller set is kept.
    let ai = json!({"type": "ai", "id": "ai-2", "content": "", "tool_calls": [
        charge("c1", 500), charge("c2", 700),
        {"id": "c3", "name": "http_request", "args": {
            "url": format!("{}/charge", server.uri()), "method": "POST",
            "headers": {"Idempotency-Key": "mine"}}}
    ]});
    g.invoke(
        Input::values(json!({"messages": [ai]})),
        RunConfig::thread("t3"),
    )
    .await
    .unwrap();
    let all = server.received_requests().await.unwrap();
    let last: Vec<&str> = all[4..]
        .iter()
        .map(|r| r.headers.get("idempotency-key").unwrap().to_str().unwrap())
        .collect();
    assert_eq!(last.len(), 3);
    assert_ne!(last[0], last[1]);
    assert!(last.contains(&"mine"), "{last:?}");
}
