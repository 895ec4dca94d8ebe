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
