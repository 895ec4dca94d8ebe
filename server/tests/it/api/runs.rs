//! Concurrent runs (409), cancel and resume, interrupts over HTTP.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn second_concurrent_run_gets_409_then_cancel_and_resume_to_the_end() {
    let s = Server::memory().await;
    let limit = 20_000;
    let (st, v) = s
        .post(
            "/threads/c1/runs",
            json!({"graph": "counter", "input": {"limit": limit}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    // Wait for the run to be under way.
    s.events_until("c1", Some(0), |d| {
        d["mode"] == "updates" && d["data"]["bump"]["count"] == 10
    })
    .await;

    let (st, v) = s
        .post(
            "/threads/c1/runs",
            json!({"graph": "counter", "input": {"limit": 2}}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (409, "RUN_ACTIVE"), "{v}");
    let (st, v) = s.post("/threads/c1/resume", json!({})).await;
    assert_eq!((st, error_code(&v)), (409, "RUN_ACTIVE"), "{v}");
    let (_, v) = s.get("/threads/c1/state").await;
    assert_eq!(v["active"], true);

    let (st, v) = s.post("/threads/c1/cancel", json!({})).await;
    assert_eq!(st, 200);
    assert_eq!(v["cancelled"], true);
    let (st, _) = s.post("/threads/c1/cancel", json!({})).await;
    assert_eq!(st, 200, "cancel twice is fine");
    let evs = s.run_end("c1", 0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "cancelled");

    // The cancelled run left a resumable checkpoint.
    let (_, state) = s.get("/threads/c1/state").await;
    let count = state["values"]["count"].as_i64().expect("count");
    assert!(count >= 10 && count < limit, "count {count}");
    assert_eq!(state["next"], json!(["bump"]));
    assert_eq!(state["active"], false);

    let last = evs.last().expect("end").0;
    let (st, v) = s.post("/threads/c1/resume", json!({})).await;
    assert_eq!(st, 202, "{v}");
    let evs = s.run_end("c1", last).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    let (_, state) = s.get("/threads/c1/state").await;
    assert_eq!(state["values"]["count"], limit);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_and_resume_over_http() {
    let s = Server::memory().await;
    let (st, _) = s
        .post(
            "/threads/h1/runs",
            json!({"graph": "approval", "input": {"draft": "Hello"}}),
        )
        .await;
    assert_eq!(st, 202);
    let evs = s.run_end("h1", 0).await;
    let end = &evs.last().expect("end").1;
    assert_eq!(end["data"]["status"], "interrupted", "{end}");
    assert_eq!(
        end["data"]["interrupts"][0]["value"]["question"],
        "Publish this draft?"
    );
    let (_, state) = s.get("/threads/h1/state").await;
    assert_eq!(state["interrupts"][0]["node"], "review");

    let (st, v) = s.post("/threads/h1/resume", json!({"value": "yes"})).await;
    assert_eq!(st, 202, "{v}");
    let evs = s.run_end("h1", evs.last().expect("end").0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    let (_, state) = s.get("/threads/h1/state").await;
    assert_eq!(state["values"]["published"], true);
    assert_eq!(state["values"]["decision"], "yes");
    let (st, v) = s.post("/threads/h1/resume", json!({"value": "yes"})).await;
    assert_eq!((st, error_code(&v)), (400, "NOTHING_TO_RESUME"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_chooses_its_durability() {
    let s = Server::memory().await;
    let history = |thread: &'static str| {
        let s = &s;
        async move {
            let (st, v) = s.get(&format!("/threads/{thread}/history")).await;
            assert_eq!(st, 200, "{v}");
            v["history"].as_array().map(Vec::len).unwrap_or(0)
        }
    };
    for (thread, durability) in [
        ("d-default", None),
        ("d-sync", Some("sync")),
        ("d-async", Some("async")),
        ("d-exit", Some("exit")),
    ] {
        let mut body = json!({"graph": "counter", "input": {"limit": 3}});
        if let Some(d) = durability {
            body["durability"] = json!(d);
        }
        let (st, v) = s.post(&format!("/threads/{thread}/runs"), body).await;
        assert_eq!(st, 202, "{v}");
        let evs = s.run_end(thread, 0).await;
        assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
        let (_, state) = s.get(&format!("/threads/{thread}/state")).await;
        assert_eq!(state["values"]["count"], 3, "{thread}: {state}");
    }
    // `sync` and `async` write a checkpoint per step (they differ in when it reaches the
    // disk); `exit` writes one, at the end.
    let every_step = history("d-default").await;
    assert!(every_step > 3, "{every_step} checkpoints for 3 steps");
    assert_eq!(history("d-sync").await, every_step);
    assert_eq!(history("d-async").await, every_step);
    assert_eq!(history("d-exit").await, 1);

    // An unknown mode is refused before anything runs, naming the ones there are.
    let (st, v) = s
        .post(
            "/threads/d-bad/runs",
            json!({"graph": "counter", "durability": "eventually"}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (400, "BAD_DURABILITY"), "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("sync") && message.contains("exit"),
        "{message}"
    );
    let (st, _) = s.get("/threads/d-bad/state").await;
    assert_eq!(st, 404, "a refused run left a thread behind");
    let (st, v) = s
        .post("/threads/d-exit/resume", json!({"durability": "later"}))
        .await;
    assert_eq!((st, error_code(&v)), (400, "BAD_DURABILITY"), "{v}");

    // A fork takes it too: from the first checkpoint of `d-sync`, with `exit`, the branch adds
    // one checkpoint where `sync` would add one per step.
    let (_, h) = s.get("/threads/d-sync/history").await;
    let first = h["history"]
        .as_array()
        .and_then(|a| a.last())
        .and_then(|c| c["checkpoint_id"].as_str())
        .expect("a first checkpoint")
        .to_string();
    let (st, v) = s
        .post(
            "/threads/d-sync/fork",
            json!({"checkpoint_id": first, "durability": "soon"}),
        )
        .await;
    assert_eq!((st, error_code(&v)), (400, "BAD_DURABILITY"), "{v}");
    let last = s.run_end("d-sync", 0).await.last().expect("end").0;
    let (st, v) = s
        .post(
            "/threads/d-sync/fork",
            json!({"checkpoint_id": first, "durability": "exit"}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let evs = s.run_end("d-sync", last).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    assert_eq!(history("d-sync").await, every_step + 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_durability_applies_to_runs_that_name_none() {
    let config = agentgraph_server::ServerConfig::new(graphs_dir(), "unused")
        .storage(Storage::Memory)
        .durability(agentgraph_runtime::Durability::Exit);
    let s = Server::start(config).await;
    for (thread, body) in [
        (
            "x-default",
            json!({"graph": "counter", "input": {"limit": 3}}),
        ),
        (
            "x-sync",
            json!({"graph": "counter", "input": {"limit": 3}, "durability": "sync"}),
        ),
    ] {
        let (st, v) = s.post(&format!("/threads/{thread}/runs"), body).await;
        assert_eq!(st, 202, "{v}");
        let evs = s.run_end(thread, 0).await;
        assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    }
    let count = |v: Value| v["history"].as_array().map(Vec::len).unwrap_or(0);
    let (_, h) = s.get("/threads/x-default/history").await;
    assert_eq!(
        count(h),
        1,
        "exit, the server's default, writes one checkpoint"
    );
    let (_, h) = s.get("/threads/x-sync/history").await;
    assert!(count(h) > 3, "a run naming sync writes one per step");
    s.stop().await;
}
