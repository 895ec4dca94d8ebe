//! The general agent tools: calculator, http_request (SSRF protection included) and
//! knowledge_base_search. Hermetic: HTTP tests talk to loopback servers only, blocked cases
//! are refused before any connection.

use agentgraph_agents::tools::{validate_args, Tool, ToolContext, ToolError};
use agentgraph_runtime::*;
use agentgraph_std_tools::general::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wiremock::matchers::{body_json, body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A state view from a one-node run (the runtime builds state views only inside runs).
async fn state() -> StateView {
    let slot: Arc<Mutex<Option<StateView>>> = Arc::default();
    let s = slot.clone();
    let g = GraphBuilder::new("probe")
        .channel(ChannelSpec::new("x", ValueType::Int).default_value(json!(0)))
        .node(
            "probe",
            node_fn(move |ctx| {
                *s.lock().unwrap() = Some(ctx.state().clone());
                async { Ok(Update::new()) }
            }),
        )
        .chain(&["START", "probe", "END"])
        .compile()
        .unwrap();
    g.invoke(Input::values(json!({})), RunConfig::thread("probe"))
        .await
        .unwrap();
    let view = slot.lock().unwrap().take().unwrap();
    view
}

async fn ctx() -> ToolContext {
    ToolContext::detached(state().await)
}

async fn ctx_with(settings: Value) -> ToolContext {
    ctx().await.with_settings(Arc::new(settings))
}

/// Calls `tool` after checking `args` against its schema, as the tool executor does.
async fn call(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
    if let Err(problems) = validate_args(&tool.input_schema(), &args) {
        return Err(ToolError::new("INVALID_ARGUMENTS", problems.join("; ")));
    }
    tool.call(args, ctx).await.map(|o| o.content)
}

fn code(r: Result<Value, ToolError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => {
            assert!(!e.message.is_empty());
            e.code
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Calculator
// ---------------------------------------------------------------------------------------------

#[test]
fn calculator_precedence_and_associativity() {
    let cases: &[(&str, f64)] = &[
        ("2 + 3 * 4", 14.0),
        ("(2 + 3) * 4", 20.0),
        ("10 - 4 - 3", 3.0),
        ("100 / 10 / 5", 2.0),
        ("2 ^ 3 ^ 2", 512.0),
        ("(2 ^ 3) ^ 2", 64.0),
        ("2 ** 3", 8.0),
        ("-2 ^ 2", -4.0),
        ("(-2) ^ 2", 4.0),
        ("2 ^ -1", 0.5),
        ("- - 3", 3.0),
        ("+3 - -2", 5.0),
        ("10 % 4", 2.0),
        ("2 * 3 % 4", 2.0),
        ("7 / 2", 3.5),
        ("1.5e3 + .5", 1500.5),
        ("2E-2", 0.02),
        ("sqrt(16) + abs(-3)", 7.0),
        ("min(3, 1, 2) + max(1, 2 ^ 3)", 9.0),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 3.0),
        ("floor(-2.5) + ceil(2.1)", 0.0),
        ("ln(e) + log10(1000) + log2(8)", 7.0),
        ("exp(0) + cos(0) + sin(0) + tan(0)", 2.0),
        ("2 * pi", std::f64::consts::TAU),
        ("PI", std::f64::consts::PI),
        ("3 × 4 ÷ 2", 6.0),
    ];
    for (expr, want) in cases {
        let got = evaluate(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert!((got - want).abs() < 1e-9, "{expr} = {got}, want {want}");
    }
}

#[test]
fn calculator_errors_have_codes_and_positions() {
    let cases: &[(&str, &str, Option<usize>)] = &[
        ("1 / 0", "DIVISION_BY_ZERO", Some(3)),
        ("5 % (2 - 2)", "DIVISION_BY_ZERO", Some(3)),
        ("0 ^ -1", "DIVISION_BY_ZERO", Some(3)),
        ("2 +", "INVALID_EXPRESSION", Some(4)),
        ("(1 + 2", "INVALID_EXPRESSION", Some(7)),
        ("1 + 2)", "INVALID_EXPRESSION", Some(6)),
        ("2 $ 3", "INVALID_EXPRESSION", Some(3)),
        ("2 3", "INVALID_EXPRESSION", Some(3)),
        ("2pi", "INVALID_EXPRESSION", Some(2)),
        ("foo(2)", "INVALID_EXPRESSION", Some(1)),
        ("x + 1", "INVALID_EXPRESSION", Some(1)),
        ("sqrt 4", "INVALID_EXPRESSION", Some(1)),
        ("sqrt(1, 2)", "INVALID_EXPRESSION", Some(1)),
        ("round(1.234, 1.5)", "INVALID_EXPRESSION", Some(1)),
        ("1..2", "INVALID_EXPRESSION", Some(1)),
        ("", "INVALID_EXPRESSION", Some(1)),
        ("import os", "INVALID_EXPRESSION", Some(1)),
        ("sqrt(-1)", "MATH_ERROR", Some(1)),
        ("ln(0)", "MATH_ERROR", Some(1)),
        ("10 ^ 400", "MATH_ERROR", Some(4)),
        ("1e400 * 0", "MATH_ERROR", Some(1)),
        ("10 ^ 200 * 10 ^ 200", "MATH_ERROR", Some(10)),
    ];
    for (expr, want, pos) in cases {
        let e = evaluate(expr).expect_err(expr);
        assert_eq!(e.code, *want, "{expr}: {}", e.message);
        assert_eq!(e.position, *pos, "{expr}: {}", e.message);
        if let Some(p) = pos {
            assert!(
                e.message.contains(&format!("position {p}")),
                "{}",
                e.message
            );
        }
    }
    let msg = evaluate("(1 + 2").unwrap_err().message;
    assert!(msg.contains("expected `)`"), "{msg}");
}

#[test]
fn calculator_limits() {
    let long = "1+".repeat(600) + "1";
    assert_eq!(evaluate(&long).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let deep = "(".repeat(100) + "1" + &")".repeat(100);
    assert_eq!(evaluate(&deep).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let signs = "-".repeat(200) + "1";
    assert_eq!(evaluate(&signs).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    let powers = "2^".repeat(200) + "1";
    assert_eq!(
        evaluate(&powers).unwrap_err().code,
        "EXPRESSION_TOO_COMPLEX"
    );
    let calls = "abs(".repeat(100) + "1" + &")".repeat(100);
    assert_eq!(evaluate(&calls).unwrap_err().code, "EXPRESSION_TOO_COMPLEX");
    // Within the limits.
    let ok = "(".repeat(30) + "1" + &")".repeat(30);
    assert_eq!(evaluate(&ok).unwrap(), 1.0);
}

#[tokio::test]
async fn calculator_tool() {
    let ctx = ctx().await;
    let calc = Calculator::new();
    assert_eq!(calc.name(), "calculator");
    let out = call(&calc, json!({"expression": "2 + 3 * 4"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, json!({"expression": "2 + 3 * 4", "result": 14}));
    let out = call(&calc, json!({"expression": "0.1 + 0.2"}), &ctx)
        .await
        .unwrap();
    assert!((out["result"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    let e = call(&calc, json!({"expression": "1/0"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(e.code, "DIVISION_BY_ZERO");
    assert_eq!(
        code(call(&calc, json!({"expr": "1"}), &ctx).await),
        "INVALID_ARGUMENTS"
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP request: addresses
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Knowledge base
// ---------------------------------------------------------------------------------------------

fn docs() -> Vec<Document> {
    vec![
        Document::new(
            "rust",
            "Rust is a systems programming language with ownership and borrowing",
        )
        .with_metadata(json!({"source": "lang.md"})),
        Document::new(
            "pasta",
            "To cook pasta boil salted water and cook the pasta for ten minutes",
        ),
        Document::new("cats", "Cats sleep most of the day and hunt mice at night"),
        Document::new(
            "tea",
            "Brew green tea with water below boiling for two minutes",
        ),
    ]
}

#[tokio::test]
async fn hash_embedder_ranks_by_shared_words() {
    let e = HashEmbedder::new(512);
    assert_eq!(e.embed_one("Hello, world"), e.embed_one("hello world"));
    let v = e.embed_one("some words here");
    assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
    assert!(e.embed_one("").iter().all(|x| *x == 0.0));

    let store = VectorStore::new();
    store.add_documents(&e, docs()).await.unwrap();
    assert_eq!(store.len(), 4);
    let q = e.embed_one("how long do I cook pasta");
    let hits = store.search(&q, 2, None).unwrap();
    assert_eq!(hits[0].document.id, "pasta");
    assert!(hits[0].score > hits[1].score);
    let q = e.embed_one("what do cats hunt at night");
    assert_eq!(store.search(&q, 1, None).unwrap()[0].document.id, "cats");
    let q = e.embed_one("ownership in the rust language");
    let hits = store.search(&q, 4, Some(0.3)).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].document.metadata, json!({"source": "lang.md"}));
    // Upsert by id, removal, dimension checks.
    store
        .add_documents(&e, vec![Document::new("cats", "Dogs bark")])
        .await
        .unwrap();
    assert_eq!(store.len(), 4);
    assert!(store.remove("tea"));
    assert!(!store.remove("tea"));
    assert!(matches!(
        store.search(&[1.0, 0.0], 1, None),
        Err(StoreError::Dimensions {
            expected: 512,
            got: 2
        })
    ));
    assert!(store.insert(Document::new("x", "x"), vec![1.0]).is_err());
}

#[tokio::test]
async fn vector_store_persists_to_json() {
    let e = HashEmbedder::default();
    let store = VectorStore::new();
    store.add_documents(&e, docs()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kb.json");
    store.save_json(&file).unwrap();
    let back = VectorStore::load_json(&file).unwrap();
    assert_eq!(back.len(), 4);
    let q = e.embed_one("green tea");
    assert_eq!(
        back.search(&q, 4, None).unwrap(),
        store.search(&q, 4, None).unwrap()
    );
    std::fs::write(&file, "{}").unwrap();
    assert!(matches!(
        VectorStore::load_json(&file),
        Err(StoreError::Io(_))
    ));
    assert!(VectorStore::load_json(dir.path().join("none.json")).is_err());
}

#[tokio::test]
async fn knowledge_base_search_tool() {
    let e = Arc::new(HashEmbedder::default());
    let store = Arc::new(VectorStore::new());
    store.add_documents(e.as_ref(), docs()).await.unwrap();
    let tool = KnowledgeBaseSearch::new(store, e).with_default_top_k(2);
    let ctx = ctx().await;
    let out = call(&tool, json!({"query": "cook pasta"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["query"], "cook pasta");
    let hits = out["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["id"], "pasta");
    assert!(hits[0]["text"].as_str().unwrap().contains("boil"));
    assert!(hits[0]["score"].as_f64().unwrap() > hits[1]["score"].as_f64().unwrap());
    let out = call(&tool, json!({"query": "cook pasta", "top_k": 4}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["hits"].as_array().unwrap().len(), 4);
    for args in [
        json!({"query": "  "}),
        json!({"query": "x", "top_k": 0}),
        json!({"query": "x", "top_k": 51}),
        json!({"query": "x", "top_k": "3"}),
        json!({"top_k": 3}),
    ] {
        assert_eq!(code(call(&tool, args, &ctx).await), "INVALID_ARGUMENTS");
    }
    // A store built with another embedder.
    let store = tool.store().expect("an application store").clone();
    let other = KnowledgeBaseSearch::new(store, Arc::new(HashEmbedder::new(8)));
    assert_eq!(
        code(call(&other, json!({"query": "x"}), &ctx).await),
        "STORE_MISMATCH"
    );
    // An empty store answers with no hits and a note.
    let empty = KnowledgeBaseSearch::new(
        Arc::new(VectorStore::new()),
        Arc::new(HashEmbedder::default()),
    );
    let out = call(&empty, json!({"query": "x"}), &ctx).await.unwrap();
    assert_eq!(out["hits"], json!([]));
    assert!(out["note"].is_string());
}

fn embeddings_response(vectors: &[(usize, Vec<f32>)]) -> Value {
    json!({
        "object": "list",
        "data": vectors.iter().map(|(i, v)| json!({
            "object": "embedding", "index": i, "embedding": v
        })).collect::<Vec<_>>(),
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8}
    })
}

#[tokio::test]
async fn openai_embedder_against_a_loopback_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(json!({
            "model": "text-embedding-3-small",
            "input": ["first", "second"],
            "encoding_format": "float"
        })))
        // Out of order on purpose: the embedder sorts by `index`.
        .respond_with(
            ResponseTemplate::new(200).set_body_json(embeddings_response(&[
                (1, vec![0.0, 1.0, 0.0]),
                (0, vec![1.0, 0.0, 0.0]),
            ])),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_partial_json(json!({"input": ["which is first?"]})))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(embeddings_response(&[(0, vec![0.9, 0.1, 0.0])])),
        )
        .mount(&server)
        .await;
    let base = format!("{}/v1/", server.uri());
    let emb = OpenAiEmbedder::from_lookup(None, |k| match k {
        "OPENAI_API_KEY" => Some("sk-test".into()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    })
    .unwrap();
    assert_eq!(emb.model(), "text-embedding-3-small");
    let v = emb
        .embed(&["first".to_string(), "second".to_string()])
        .await
        .unwrap();
    assert_eq!(v, vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]]);

    let store = Arc::new(VectorStore::new());
    store
        .insert(Document::new("a", "first"), v[0].clone())
        .unwrap();
    store
        .insert(Document::new("b", "second"), v[1].clone())
        .unwrap();
    let tool = KnowledgeBaseSearch::new(store, Arc::new(emb));
    let out = call(
        &tool,
        json!({"query": "which is first?", "top_k": 1}),
        &ctx().await,
    )
    .await
    .unwrap();
    assert_eq!(out["hits"][0]["id"], "a");
}

#[tokio::test]
async fn openai_embedder_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-wrong"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {
                "message": "Incorrect API key provided: sk-wrong.",
                "type": "invalid_request_error",
                "param": null,
                "code": "invalid_api_key"
            }
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-busy"))
        .respond_with(ResponseTemplate::new(500).set_body_string("overloaded"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-odd"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": "?"})))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let with_key = |k: &str| {
        OpenAiEmbedder::new("text-embedding-3-small", Some(k.to_string()))
            .unwrap()
            .with_base_url(base.clone())
    };
    let e = with_key("sk-wrong").embed(&["x".into()]).await.unwrap_err();
    assert!(
        matches!(&e, EmbedError::Auth(m) if m.contains("Incorrect API key")),
        "{e}"
    );
    let e = with_key("sk-busy").embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(&e, EmbedError::Http { status: 500, message } if message == "overloaded"));
    let e = with_key("sk-odd").embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(e, EmbedError::InvalidResponse(_)));

    let store = Arc::new(VectorStore::new());
    let tool = KnowledgeBaseSearch::new(store, Arc::new(with_key("sk-wrong")));
    let e = call(&tool, json!({"query": "x"}), &ctx().await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "EMBEDDING_AUTH_FAILED");
    assert!(e.message.contains("Incorrect API key"), "{}", e.message);
    assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);

    // No key for the official endpoint: a configuration error, before any request.
    let e = OpenAiEmbedder::from_lookup(None, |_| None).unwrap_err();
    assert!(matches!(e, EmbedError::Config(m) if m.contains("OPENAI_API_KEY")));
    // A local server needs no key.
    assert!(OpenAiEmbedder::from_lookup(Some("nomic-embed-text"), |k| {
        (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:11434/v1".to_string())
    })
    .is_ok());
}

#[tokio::test]
async fn knowledge_base_files_configuration_errors_are_coded() {
    let tool = KnowledgeBaseSearch::from_settings();
    let args = json!({"query": "refunds"});
    // No settings at all, then settings of the wrong shape.
    let e = call(&tool, args.clone(), &ctx().await).await.unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED", "{}", e.message);
    assert!(e.message.contains("documents"), "{}", e.message);
    let e = call(
        &tool,
        args.clone(),
        &ctx_with(json!({"documents": 3})).await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED");
    // An unknown embedder.
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.json");
    std::fs::write(&docs, r#"[{"id": "r", "text": "Refunds within 30 days."}]"#).unwrap();
    let settings = |extra: Value| {
        let mut s = json!({"documents": "docs.json", "base_dir": dir.path()});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    };
    let e = call(
        &tool,
        args.clone(),
        &ctx_with(settings(json!({"embedder": "bert"}))).await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED");
    assert!(
        e.message.contains("unknown embedder `bert`"),
        "{}",
        e.message
    );
    // A missing file, then a file that is not a document list.
    let missing = json!({"documents": "nope.json", "base_dir": dir.path()});
    let e = call(&tool, args.clone(), &ctx_with(missing).await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_UNAVAILABLE");
    assert!(e.message.contains("nope.json"), "{}", e.message);
    std::fs::write(dir.path().join("bad.json"), r#"{"id": "r"}"#).unwrap();
    let bad = json!({"documents": "bad.json", "base_dir": dir.path()});
    let e = call(&tool, args.clone(), &ctx_with(bad).await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_UNAVAILABLE");
    assert!(e.message.contains("not a JSON list"), "{}", e.message);
    // The good configuration answers.
    let hits = call(&tool, args, &ctx_with(settings(json!({}))).await)
        .await
        .unwrap();
    assert_eq!(hits["hits"][0]["id"], "r", "{hits}");
}

#[tokio::test]
async fn embedding_errors_become_coded_tool_errors() {
    use agentgraph_std_tools::general::embeddings::EmbedError;
    let e: ToolError = EmbedError::Config("OPENAI_API_KEY is not set".into()).into();
    assert_eq!(e.code, "EMBEDDING_CONFIG");
    assert!(
        e.message.contains("retrying will not help"),
        "{}",
        e.message
    );
    // A server that answers 500: the search fails with EMBEDDING_FAILED, not a panic.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(500).set_body_string("overloaded"))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new("text-embedding-3-small", Some("k".into()))
        .unwrap()
        .with_base_url(format!("{}/v1", server.uri()));
    let tool = KnowledgeBaseSearch::new(Arc::new(VectorStore::new()), Arc::new(embedder));
    let e = call(&tool, json!({"query": "x"}), &ctx().await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "EMBEDDING_FAILED", "{}", e.message);
}

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

#[test]
fn schemas_describe_every_argument() {
    let kb = KnowledgeBaseSearch::new(
        Arc::new(VectorStore::new()),
        Arc::new(HashEmbedder::default()),
    );
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(Calculator::new()),
        Box::new(HttpRequest::new()),
        Box::new(kb),
    ];
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["calculator", "http_request", "knowledge_base_search"]
    );
    for t in &tools {
        let s = t.input_schema();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        for (name, p) in s["properties"].as_object().unwrap() {
            assert!(
                p["description"].as_str().is_some_and(|d| d.len() > 10),
                "{}.{name} has no description",
                t.name()
            );
        }
        assert!(!t.description().is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Through the tool executor
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tools_run_through_the_tool_executor_with_settings() {
    use agentgraph_agents::nodes::ToolExecutorNode;
    let server = MockServer::start().await;
    Mock::given(path("/ok"))
        .respond_with(ResponseTemplate::new(200).set_body_string("fine"))
        .mount(&server)
        .await;
    let tools = ToolExecutorNode::new([
        Arc::new(Calculator::new()) as Arc<dyn Tool>,
        Arc::new(HttpRequest::new()),
    ])
    .settings("http_request", json!({"allowed_hosts": ["127.0.0.1"]}));
    let g = GraphBuilder::new("tools")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .node("tools", Arc::new(tools))
        .chain(&["START", "tools", "END"])
        .compile()
        .unwrap();
    let ai = json!({"type": "ai", "id": "ai-1", "content": "", "tool_calls": [
        {"id": "c1", "name": "calculator", "args": {"expression": "6 * 7"}},
        {"id": "c2", "name": "calculator", "args": {"expression": 42}},
        {"id": "c3", "name": "http_request", "args": {"url": format!("{}/ok", server.uri())}},
        {"id": "c4", "name": "http_request", "args": {"url": "http://10.0.0.1/"}}
    ]});
    let out = g
        .invoke(
            Input::values(json!({"messages": [ai]})),
            RunConfig::thread("t"),
        )
        .await
        .unwrap();
    let msgs = out.values["messages"].as_array().unwrap();
    let by_call = |id: &str| {
        msgs.iter()
            .find(|m| m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {msgs:?}"))
            .clone()
    };
    assert_eq!(by_call("c1")["content"]["result"], 42);
    assert_eq!(
        by_call("c2")["content"]["error"]["code"],
        "INVALID_ARGUMENTS"
    );
    assert_eq!(by_call("c3")["content"]["body"], "fine");
    assert_eq!(by_call("c4")["content"]["error"]["code"], "BLOCKED_ADDRESS");
}
