//! The event store's unit tests.

use super::*;
use futures::StreamExt;

/// The ids of the events `thread`'s hub holds.
fn seqs(store: &EventStore, thread: &str) -> Vec<u64> {
    store
        .hub(thread)
        .expect("hub")
        .after(0)
        .iter()
        .map(|e| e.seq)
        .collect()
}

fn hubs(store: &EventStore) -> usize {
    store.hubs.lock().expect("hubs").map.len()
}

#[tokio::test]
async fn streams_on_threads_without_events_leave_nothing_behind() {
    let store = EventStore::memory(LIMITS);
    store
        .append("kept", serde_json::json!({"mode": "run", "data": {}}))
        .expect("append");
    let open = store
        .replay("open", Some(0), CancellationToken::new())
        .expect("replay");
    for i in 0..20_000 {
        let stream = store
            .replay(&format!("probe-{i}"), Some(0), CancellationToken::new())
            .expect("replay");
        drop(stream);
    }
    assert!(hubs(&store) <= 2 * SWEEP_FROM, "{} hubs", hubs(&store));
    // A hub with events in memory, and one a reader still holds, are kept.
    assert_eq!(store.hub("kept").expect("hub").after(0).len(), 1);
    assert!(store.hubs.lock().expect("hubs").map.contains_key("open"));
    drop(open);
}

#[tokio::test]
async fn an_evicted_hub_on_disk_comes_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = EventStore::open(dir.path(), LIMITS).expect("open");
    for _ in 0..3 {
        store
            .append("t", serde_json::json!({"mode": "run", "data": {}}))
            .expect("append");
    }
    // Wait until the three are durable and published.
    let mut live = Box::pin(
        store
            .replay("t", Some(0), CancellationToken::new())
            .expect("replay"),
    );
    for _ in 0..3 {
        live.next().await.expect("event");
    }
    drop(live);
    // The appends' flush tasks hold the hub until they end (a flush may still be running once
    // the third event is out): a hub in use is not evicted, so wait for them first.
    let hub = store.hubs.lock().expect("hubs").map.get("t").cloned();
    let hub = hub.expect("the thread's hub");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::sync::Arc::strong_count(&hub) > 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    drop(hub);
    for i in 0..3 * SWEEP_FROM {
        drop(
            store
                .replay(&format!("probe-{i}"), Some(0), CancellationToken::new())
                .expect("replay"),
        );
    }
    assert!(
        !store.hubs.lock().expect("hubs").map.contains_key("t"),
        "evicted"
    );
    let seqs = seqs(&store, "t");
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(store.next_seq("t").expect("next"), 4);
}

const LIMITS: EventLimits = EventLimits {
    events: 100,
    bytes: 1 << 20,
};

#[test]
fn a_folder_of_the_older_layout_is_moved_into_the_server_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = sled::open(dir.path()).expect("sled");
        let events = db.open_tree("events").expect("tree");
        for seq in [1u64, 2] {
            let mut k = b"t1\0".to_vec();
            k.extend_from_slice(&seq.to_be_bytes());
            events
                .insert(k, format!(r#"{{"seq":{seq},"mode":"run"}}"#).as_bytes())
                .expect("insert");
        }
        let meta = db.open_tree("threads").expect("tree");
        meta.insert(b"nt1", &5u64.to_be_bytes()).expect("insert");
        meta.insert(b"gt1", b"chat.ag").expect("insert");
        db.flush().expect("flush");
    }
    {
        let store = EventStore::open(dir.path(), LIMITS).expect("open");
        let hub = store.hub("t1").expect("hub");
        let seqs: Vec<u64> = hub.after(0).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(store.next_seq("t1").expect("next"), 5);
        assert_eq!(
            store.graph_of("t1").expect("graph").as_deref(),
            Some("chat.ag")
        );
        let seq = store
            .append("t1", serde_json::json!({"mode": "run", "data": {}}))
            .expect("append");
        assert_eq!(seq, 5);
        store.flush().expect("flush");
    }
    let store = EventStore::open(dir.path(), LIMITS).expect("reopen");
    let seqs = seqs(&store, "t1");
    assert_eq!(
        seqs,
        [1, 2, 5],
        "the old trees were dropped, not moved twice"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_servers_events_folder_is_moved_beside_the_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let legacy = dir.path().join(LEGACY_FOLDER);
    {
        let old = EventStore::open(&legacy, LIMITS).expect("open the old folder");
        for status in ["started", "done"] {
            old.append(
                "t1",
                serde_json::json!({"mode": "run", "data": {"status": status}}),
            )
            .expect("append");
        }
        old.set_graph("t1", "chat.ag").expect("graph");
        old.flush().expect("flush");
    }
    {
        let cp = agentgraph_runtime::SledCheckpointer::open(dir.path()).expect("checkpoints");
        let store = EventStore::beside(cp.store(), LIMITS).expect("beside");
        assert!(!legacy.exists(), "the folder is gone once moved");
        let events = store.hub("t1").expect("hub").after(0);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2]);
        assert!(
            events[1].json.contains(r#""status":"done""#),
            "{}",
            events[1].json
        );
        assert_eq!(
            store.graph_of("t1").expect("graph").as_deref(),
            Some("chat.ag")
        );
        let seq = store
            .append(
                "t1",
                serde_json::json!({"mode": "run", "data": {"status": "done"}}),
            )
            .expect("append");
        assert_eq!(seq, 3, "ids go on after the moved ones");
        store.flush().expect("flush");
    }
    // Reopened: everything is in the checkpoints' database now.
    let cp = agentgraph_runtime::SledCheckpointer::open(dir.path()).expect("checkpoints");
    let store = EventStore::beside(cp.store(), LIMITS).expect("beside");
    let seqs = seqs(&store, "t1");
    assert_eq!(seqs, [1, 2, 3]);
}
