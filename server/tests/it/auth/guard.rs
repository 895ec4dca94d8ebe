//! The checks every server makes, with or without authentication: a `Host` allow-list (421),
//! a JSON content type on state-changing requests (415), an `Origin` that is the server's own
//! or allowed (403), and CORS preflights for the allowed origins.

use super::*;

async fn raw_post(s: &Srv, path: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    let mut req = s.http.post(s.url(path)).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("send").status().as_u16()
}

#[tokio::test]
async fn form_posts_are_refused_and_foreign_origins_forbidden() {
    let mut cfg = open_config();
    cfg.auth.cors_origins = vec!["https://app.example".into()];
    let s = Srv::start(cfg).await;
    // Posts a browser may send cross-site without a preflight: refused before any handler.
    for path in [
        "/threads/c1/cancel",
        "/threads/c1/resume",
        "/threads/c1/runs",
    ] {
        for ct in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let headers: Vec<(&str, &str)> = ct.iter().map(|c| ("content-type", *c)).collect();
            for body in ["", r#"{"graph":"counter"}"#] {
                let st = raw_post(&s, path, &headers, body).await;
                assert_eq!(st, 415, "{path} as {ct:?} with body {body:?}");
            }
        }
    }
    let json_ct = ("content-type", "application/json");
    // A foreign Origin is forbidden, also with a JSON body.
    let st = raw_post(
        &s,
        "/threads/c1/cancel",
        &[json_ct, ("origin", "http://evil.example")],
        "{}",
    )
    .await;
    assert_eq!(st, 403);
    let st = raw_post(
        &s,
        "/threads/c1/cancel",
        &[json_ct, ("origin", "null")],
        "{}",
    )
    .await;
    assert_eq!(st, 403);
    // The server's own origin, an allowed one, or none (not a browser) are accepted.
    let own = s.base.clone();
    for headers in [
        vec![json_ct, ("origin", own.as_str())],
        vec![json_ct, ("origin", "https://app.example")],
        vec![json_ct],
    ] {
        let st = raw_post(&s, "/threads/c1/cancel", &headers, "{}").await;
        assert_eq!(st, 200, "{headers:?}");
    }
    // An empty JSON resume is `{}` (here: no such thread).
    let st = raw_post(&s, "/threads/c1/resume", &[json_ct], "").await;
    assert_eq!(st, 404);

    // Preflights: the allowed origin gets CORS headers, another does not.
    for (origin, allowed) in [
        ("https://app.example", true),
        ("http://evil.example", false),
    ] {
        let r = s
            .http
            .request(reqwest::Method::OPTIONS, s.url("/threads/c1/runs"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
            .await
            .expect("preflight");
        let acao = r
            .headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().unwrap_or("").to_string());
        assert_eq!(acao.as_deref(), allowed.then_some(origin), "{origin}");
    }
    s.stop().await;
}

#[tokio::test]
async fn only_allowed_host_names_are_served() {
    let mut cfg = open_config();
    cfg.auth.allowed_hosts = vec!["agents.example".into(), "api.example:8443".into()];
    let s = Srv::start(cfg).await;
    let port = s.base.rsplit(':').next().expect("port").to_string();
    let cases = [
        ("evil.example".to_string(), 421),
        (format!("evil.example:{port}"), 421),
        ("api.example".to_string(), 421),
        ("api.example:9999".to_string(), 421),
        (format!("localhost:{port}"), 200),
        (format!("127.0.0.1:{port}"), 200),
        ("[::1]:1".to_string(), 200),
        ("agents.example".to_string(), 200),
        ("agents.example:443".to_string(), 200),
        ("api.example:8443".to_string(), 200),
    ];
    for (host, want) in cases {
        let r = s
            .http
            .get(s.url("/threads"))
            .header("host", &host)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), want, "Host: {host}");
        if want == 421 {
            let v: Value = r.json().await.expect("json");
            assert_eq!(v["error"]["code"], "HOST_NOT_ALLOWED");
        }
    }
    // A state-changing request with a rebound name is refused before anything runs.
    let r = s
        .http
        .post(s.url("/threads/h1/runs"))
        .header("host", "attacker.example")
        .json(&json!({"graph": "counter"}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 421);
    let (_, v) = s.call("GET", "/threads", None, None).await;
    assert_eq!(v["threads"], json!([]), "no run was started");
    s.stop().await;
}
