//! Restarts: persisted events, shutdown checkpoints, runs left by a killed server.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn events_survive_a_restart_and_shutdown_checkpoints_running_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ServerConfig::new(graphs_dir(), dir.path().join("db"));
    let s = Server::start(config.clone()).await;
    let (st, _) = s
        .post(
            "/threads/p1/runs",
            json!({"graph": "counter", "input": {"limit": 3}}),
        )
        .await;
    assert_eq!(st, 202);
    let before = s.run_end("p1", 0).await;
    // A long run that the shutdown cancels.
    let (st, _) = s
        .post(
            "/threads/p2/runs",
            json!({"graph": "counter", "input": {"limit": 1000000}, "stream_modes": ["updates"]}),
        )
        .await;
    assert_eq!(st, 202);
    s.events_until("p2", Some(0), |d| d["mode"] == "updates")
        .await;
    // An open event stream does not hold the shutdown up: it ends.
    let held = s
        .http
        .get(s.url("/threads/p2/events"))
        .send()
        .await
        .expect("sse");
    let mut held = held.bytes_stream();
    s.stop().await;
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = held.next().await {}
    })
    .await;
    assert!(rest.is_ok(), "the event stream ended with the server");

    let s = Server::start(config).await;
    let after = s.run_end("p1", 0).await;
    let ids = |v: &Vec<(u64, Value)>| v.iter().map(|(i, d)| (*i, d.clone())).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&after), "replayed from disk");
    let p2 = s.run_end("p2", 0).await;
    assert_eq!(p2.last().expect("end").1["data"]["status"], "cancelled");
    let (_, state) = s.get("/threads/p2/state").await;
    assert_eq!(state["next"], json!(["bump"]), "{state}");
    assert!(state["values"]["count"].as_i64().unwrap_or(0) >= 1);
    // Ids keep rising after the restart.
    let (st, _) = s
        .post(
            "/threads/p1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let more = s.run_end("p1", after.last().expect("end").0).await;
    assert_eq!(more[0].0, after.last().expect("end").0 + 1);
    let (_, threads) = s.get("/threads").await;
    assert_eq!(
        threads["threads"].as_array().map(Vec::len),
        Some(2),
        "{threads}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_left_mid_way_by_a_killed_server_ends_interrupted_on_restart() {
    use agentgraph_server::{EventLimits, EventStore};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let config = ServerConfig::new(graphs_dir(), &db);
    // A run that ended, then one the server was killed during: its log stops after `started`
    // and an update, with no end event (what a SIGKILL or a crash leaves).
    {
        let s = Server::start(config.clone()).await;
        let (st, _) = s
            .post(
                "/threads/k1/runs",
                json!({"graph": "counter", "input": {"limit": 2}}),
            )
            .await;
        assert_eq!(st, 202);
        s.run_end("k1", 0).await;
        s.stop().await;
    }
    {
        let limits = EventLimits {
            events: 500,
            bytes: 1 << 20,
        };
        let checkpoints = agentgraph_runtime::SledCheckpointer::open(&db).expect("open");
        let store = EventStore::beside(checkpoints.store(), limits).expect("open");
        // The store gives each event its id.
        let ev =
            |mode: &str, data: Value| json!({"ns": [], "mode": mode, "node": null, "data": data});
        store
            .append(
                "k1",
                ev("run", json!({"status": "started", "run_id": "r-killed"})),
            )
            .expect("append");
        store
            .append("k1", ev("updates", json!({"bump": {"count": 3}})))
            .expect("append");
        // A thread whose last run ended is left alone.
        store
            .append(
                "k2",
                ev("run", json!({"status": "started", "run_id": "r-ok"})),
            )
            .expect("append");
        store
            .append("k2", ev("run", json!({"status": "done", "run_id": "r-ok"})))
            .expect("append");
        store.flush().expect("flush");
        // Each append publishes from a task that holds the store until its flush returns: read
        // the events back (a reader sees an event only once it is published), so the store is
        // released when it is dropped and the restarted server can open the folder.
        for thread in ["k1", "k2"] {
            let stream = store
                .replay(thread, Some(0), tokio_util::sync::CancellationToken::new())
                .expect("replay");
            let seen: Vec<_> = Box::pin(stream).take(2).collect().await;
            assert_eq!(seen.len(), 2, "{thread}");
        }
    }

    let s = Server::start(config.clone()).await;
    // Replaying from the killed run's start: its end event is there.
    let evs = s
        .events_until("k1", Some(0), |d| {
            d["mode"] == "run" && d["data"]["run_id"] == "r-killed" && is_end(d)
        })
        .await;
    let (end_id, end) = evs.last().expect("end").clone();
    assert_eq!(end["data"]["status"], "interrupted", "{end}");
    assert!(end["data"]["reason"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    assert!(end["data"].get("interrupts").is_none(), "{end}");
    // Exactly one, and a client that had seen everything before it gets only it.
    let after = s.run_end("k1", end_id - 1).await;
    assert_eq!(after.len(), 1);
    let evs = s.run_end("k2", 0).await;
    assert_eq!(evs.last().expect("end").1["data"]["status"], "done");
    s.stop().await;

    // Not added again on the next start.
    let s = Server::start(config).await;
    let (st, _) = s
        .post(
            "/threads/k1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202);
    let next = s.run_end("k1", end_id).await;
    assert_eq!(next[0].0, end_id + 1, "{next:?}");
    assert_eq!(next[0].1["data"]["status"], "started");
    s.stop().await;
}
