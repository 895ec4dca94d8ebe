//! Every endpoint and its errors, run ids, and JSON 405s.

use super::*;

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
    let all = all["history"].as_array().cloned().unwrap_or_default();
    assert!(all.len() > 5);
    // Pages of 3, following `next_before`, give the whole history once, in order.
    let (mut paged, mut next) = (Vec::new(), String::new());
    loop {
        let before = if next.is_empty() {
            String::new()
        } else {
            format!("&before={next}")
        };
        let (st, v) = s.get(&format!("/threads/t1/history?limit=3{before}")).await;
        assert_eq!(st, 200, "{v}");
        paged.extend(v["history"].as_array().cloned().unwrap_or_default());
        match v["next_before"].as_str() {
            Some(id) => next = id.to_string(),
            None => break,
        }
    }
    assert_eq!(paged, all);
    for bad in ["limit=0", "limit=1001", "before=xyz"] {
        let (st, v) = s.get(&format!("/threads/t1/history?{bad}")).await;
        assert_eq!((st, error_code(&v)), (400, "BAD_QUERY"), "{bad}");
    }

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
    // Files of the graphs folder that are not graphs cannot be named: not found, and nothing of
    // them comes back (the `.env` there holds a fake secret).
    for name in [".env", "notes.md", "nested/../.env"] {
        let (st, v) = s.post("/threads/e2/runs", json!({"graph": name})).await;
        assert!(st == 404 || st == 400, "{name} -> {st} {v}");
        assert!(!v.to_string().contains("fake-secret"), "{name} -> {v}");
    }
    // 422 carries the diagnostics.
    let (_, v) = s.post("/threads/e1/runs", json!({"graph": "broken"})).await;
    let diags = v["error"]["diagnostics"].as_array().expect("diagnostics");
    assert!(
        diags.iter().any(|d| d.to_string().contains("nowhere")),
        "{v}"
    );
    // Files are named relative to the graphs folder: clients never learn where the server
    // keeps them.
    assert!(diags.iter().all(|d| d["file"] == "broken.ag"), "{v}");
    let (_, listed) = s.get("/graphs").await;
    let root = graphs_dir();
    let canonical = root.canonicalize().expect("canonical");
    for text in [v.to_string(), listed.to_string()] {
        for dir in [&root, &canonical] {
            let dir = dir.display().to_string();
            assert!(!text.contains(&dir), "{dir} in {text}");
        }
    }

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
    // Resume takes an empty JSON body (every field is optional); without the JSON content
    // type it is refused like any state-changing request (415, a browser form could send it).
    let r = s
        .http
        .post(s.url("/threads/never-ran/resume"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 415);
    let r = s
        .http
        .post(s.url("/threads/never-ran/resume"))
        .header("content-type", "application/json")
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
        // With the JSON content type state-changing methods need (else 415 comes first).
        let r = s
            .http
            .request(method.clone(), s.url(path))
            .header("content-type", "application/json")
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
