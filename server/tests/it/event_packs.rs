//! The sled-backed event log after a run ends: its events are packed into one key, read back
//! whole (and bounded) when the store is reopened, seen through by `close_unfinished_runs`; and
//! events are published to live readers once durable, each within a bounded time. Most tests
//! run twice: on a log in a sled folder of its own (`EventStore::open`) and on one in the sled
//! checkpointer's database (`EventStore::beside`, what `agentgraph serve` uses).
//!
//! Every expected id and envelope comes from what the test appended: a fresh thread's ids start
//! at 1 and rise by one, and a stored envelope is the one appended with its id as `seq`.

use agentgraph_runtime::checkpoint::SledCheckpointer;
use agentgraph_server::{EventLimits, EventStore, Replayed};
use futures::StreamExt;
use serde_json::{json, Value};
use std::ops::Deref;
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const LIMITS: EventLimits = EventLimits {
    events: 1000,
    bytes: 1 << 20,
};

/// Where the event log lives.
#[derive(Debug, Clone, Copy)]
enum Home {
    /// A sled database of its own in a folder ([`EventStore::open`]).
    Folder,
    /// Tree `server` of the sled checkpointer's database, behind its write-ahead log
    /// ([`EventStore::beside`], what `agentgraph serve` uses).
    Beside,
}

/// An open event log, with the checkpointer whose database holds it when it lives beside the
/// checkpoints (dropped after the log).
struct Log {
    events: EventStore,
    _checkpoints: Option<SledCheckpointer>,
}

impl Deref for Log {
    type Target = EventStore;
    fn deref(&self) -> &EventStore {
        &self.events
    }
}

/// Opens the event log of folder `dir` in `home`.
fn open_log(home: Home, dir: &Path, limits: EventLimits) -> Log {
    match home {
        Home::Folder => Log {
            events: EventStore::open(dir, limits).expect("open the event folder"),
            _checkpoints: None,
        },
        Home::Beside => {
            let cp = SledCheckpointer::open(dir).expect("open the checkpoints");
            let events = EventStore::beside(cp.store(), limits).expect("the events beside");
            Log {
                events,
                _checkpoints: Some(cp),
            }
        }
    }
}

/// Two tests of `$test`, an `async fn(Home)`: `$test::in_a_folder_of_its_own` and
/// `$test::beside_the_checkpoints`.
macro_rules! in_both_homes {
    ($test:ident) => {
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn in_a_folder_of_its_own() {
                super::$test(super::Home::Folder).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn beside_the_checkpoints() {
                super::$test(super::Home::Beside).await;
            }
        }
    };
}

/// What a reader got, comparable: an event as its id and parsed JSON, or a gap.
#[derive(Debug, Clone, PartialEq)]
enum Got {
    Event(u64, Value),
    Gap(u64, u64),
}

impl From<Replayed> for Got {
    fn from(r: Replayed) -> Self {
        match r {
            Replayed::Event(e) => Got::Event(
                e.seq,
                serde_json::from_str(&e.json).unwrap_or_else(|err| {
                    panic!("event {} is not JSON ({err}): {}", e.seq, e.json)
                }),
            ),
            Replayed::Gap { from, to } => Got::Gap(from, to),
        }
    }
}

fn envelope(mode: &str, data: Value) -> Value {
    json!({"ns": [], "mode": mode, "node": null, "data": data})
}

/// Appends an envelope; returns what a reader must get for it: its id, and the envelope with
/// that id as `seq`.
fn append(store: &EventStore, thread: &str, mode: &str, data: Value) -> Got {
    let mut env = envelope(mode, data);
    let id = store.append(thread, env.clone()).expect("append");
    env["seq"] = json!(id);
    Got::Event(id, env)
}

/// An update whose text has what JSON must escape and bytes beyond ASCII.
fn update(run_id: &str, step: usize) -> Value {
    json!({"work": {"run": run_id, "step": step, "text": format!("{run_id} \"step\" {step}\n✓ é\t\\")}})
}

/// A run as the server logs it: `started` (then the run is recorded in flight), `updates`
/// updates, the end event, then the run's end is recorded (which packs its events).
fn run(store: &EventStore, thread: &str, run_id: &str, updates: usize) -> Vec<Got> {
    let mut out = vec![append(
        store,
        thread,
        "run",
        json!({"status": "started", "run_id": run_id}),
    )];
    store.set_running(thread, Some(run_id)).expect("running");
    for step in 0..updates {
        out.push(append(store, thread, "updates", update(run_id, step)));
    }
    out.push(append(
        store,
        thread,
        "run",
        json!({"status": "done", "run_id": run_id}),
    ));
    store.set_running(thread, None).expect("ended");
    out
}

fn ids(got: &[Got]) -> Vec<u64> {
    got.iter()
        .map(|g| match g {
            Got::Event(id, _) => *id,
            Got::Gap(..) => panic!("a gap among appended events"),
        })
        .collect()
}

/// Waits (10 s at most) until a live reader of `thread` sees event `id`.
async fn published(store: &EventStore, thread: &str, id: u64) {
    let stop = CancellationToken::new();
    let mut live = Box::pin(
        store
            .replay(thread, Some(id - 1), stop.clone())
            .expect("replay"),
    );
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(r) = live.next().await {
            if let Replayed::Event(e) = r {
                if e.seq >= id {
                    return true;
                }
            }
        }
        false
    })
    .await;
    stop.cancel();
    assert_eq!(seen, Ok(true), "event {id} of {thread} was never published");
}

/// Everything a reader of `thread` resuming after `last` gets now: a replay whose stop has
/// already fired ends once it has given what is published.
async fn visible(store: &EventStore, thread: &str, last: u64) -> Vec<Got> {
    let stop = CancellationToken::new();
    stop.cancel();
    let stream = store.replay(thread, Some(last), stop).expect("replay");
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.map(Got::from).collect::<Vec<_>>(),
    )
    .await
    .expect("a stopped replay ends")
}

/// Drops `log` (its last events published first, so the tasks that publish them let go of
/// the database) and opens it again.
async fn reopen(log: Log, home: Home, dir: &Path, limits: EventLimits, threads: &[&str]) -> Log {
    for thread in threads {
        let next = log.next_seq(thread).expect("next id");
        if next > 1 {
            published(&log, thread, next - 1).await;
        }
    }
    drop(log);
    open_log(home, dir, limits)
}

/// The keys under which `thread`'s events are stored in tree `server` of the sled database in
/// `dir`, once closed (its log merged into sled), in key order (module docs of `events/mod.rs`: `E thread 0 seq` for one event, `E thread 0 first last`
/// for a pack): `(seq, None)` or `(first, Some(last))`.
fn stored_keys(dir: &Path, thread: &str) -> Vec<(u64, Option<u64>)> {
    let compressed = agentgraph_runtime::checkpoint::sled_folder_compression(dir).unwrap_or(false);
    let db = agentgraph_runtime::checkpoint::open_sled(
        &sled::Config::new().path(dir).use_compression(compressed),
    )
    .expect("open the folder with sled");
    let tree = db.open_tree("server").expect("tree");
    let mut prefix = b"E".to_vec();
    prefix.extend_from_slice(thread.as_bytes());
    prefix.push(0);
    let be = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    tree.scan_prefix(&prefix)
        .map(|kv| {
            let (k, _) = kv.expect("read");
            let tail = &k[prefix.len()..];
            match tail.len() {
                8 => (be(tail), None),
                16 => (be(&tail[..8]), Some(be(&tail[8..]))),
                n => panic!("an event key of {thread} with {n} bytes after its prefix"),
            }
        })
        .collect()
}

async fn a_packed_run_comes_back_whole_after_a_reopen_and_the_next_run_is_packed_too(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    let first = run(&store, "t1", "r1", 5);
    assert_eq!(ids(&first), (1..=7).collect::<Vec<_>>());
    published(&store, "t1", 7).await;
    assert_eq!(visible(&store, "t1", 0).await, first, "before the reopen");

    let store = reopen(store, home, dir.path(), LIMITS, &["t1"]).await;
    assert_eq!(visible(&store, "t1", 0).await, first, "after the reopen");
    assert_eq!(
        visible(&store, "t1", 3).await,
        first[3..].to_vec(),
        "a replay from a middle id returns exactly the later ones"
    );
    assert_eq!(visible(&store, "t1", 7).await, Vec::<Got>::new());
    assert_eq!(store.next_seq("t1").expect("next"), 8);

    let second = run(&store, "t1", "r2", 2);
    assert_eq!(ids(&second), (8..=11).collect::<Vec<_>>());
    let both: Vec<Got> = first.iter().chain(&second).cloned().collect();
    published(&store, "t1", 11).await;
    assert_eq!(visible(&store, "t1", 0).await, both);

    let store = reopen(store, home, dir.path(), LIMITS, &["t1"]).await;
    assert_eq!(
        visible(&store, "t1", 0).await,
        both,
        "both runs after the reopen"
    );
    assert_eq!(visible(&store, "t1", 9).await, both[9..].to_vec());
    assert_eq!(store.next_seq("t1").expect("next"), 12);
    drop(store);
    // Closed (the log was drained into sled): each run is one pack, no event is left alone.
    let keys = stored_keys(dir.path(), "t1");
    assert_eq!(keys, [(1, Some(7)), (8, Some(11))]);
}

in_both_homes!(a_packed_run_comes_back_whole_after_a_reopen_and_the_next_run_is_packed_too);

async fn a_run_in_flight_stays_loose_beside_the_packs_and_is_packed_with_a_lone_leftover(
    home: Home,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    // A packed run (1..=4), then one that has not ended when the store closes.
    let mut sent = run(&store, "t1", "r1", 2);
    sent.push(append(
        &store,
        "t1",
        "run",
        json!({"status": "started", "run_id": "r2"}),
    ));
    store.set_running("t1", Some("r2")).expect("running");
    sent.push(append(&store, "t1", "updates", update("r2", 0)));
    assert_eq!(ids(&sent), (1..=6).collect::<Vec<_>>());
    let store = reopen(store, home, dir.path(), LIMITS, &["t1"]).await;
    assert_eq!(visible(&store, "t1", 0).await, sent);
    drop(store);
    assert_eq!(
        stored_keys(dir.path(), "t1"),
        [(1, Some(4)), (5, None), (6, None)]
    );

    // It ends in the reopened store: its events (read back one per key) are packed.
    let store = open_log(home, dir.path(), LIMITS);
    sent.push(append(
        &store,
        "t1",
        "run",
        json!({"status": "done", "run_id": "r2"}),
    ));
    store.set_running("t1", None).expect("ended");
    // A lone event after a run (nothing to pack with) and the next run.
    sent.push(append(
        &store,
        "t1",
        "custom",
        json!({"note": "between runs"}),
    ));
    store.set_running("t1", None).expect("ended again");
    sent.extend(run(&store, "t1", "r3", 1));
    assert_eq!(ids(&sent), (1..=11).collect::<Vec<_>>());
    let store = reopen(store, home, dir.path(), LIMITS, &["t1"]).await;
    assert_eq!(visible(&store, "t1", 0).await, sent);
    assert_eq!(visible(&store, "t1", 7).await, sent[7..].to_vec());
    drop(store);
    let keys = stored_keys(dir.path(), "t1");
    assert!(
        keys.iter().all(|(_, last)| last.is_some()),
        "every event of an ended run is in a pack: {keys:?}"
    );
    assert_eq!(keys.first(), Some(&(1, Some(4))));
    assert_eq!(keys.last().and_then(|k| k.1), Some(11));
}

in_both_homes!(a_run_in_flight_stays_loose_beside_the_packs_and_is_packed_with_a_lone_leftover);

async fn packs_are_bounded_like_the_log_and_the_ones_it_dropped_go_away(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = EventLimits {
        events: 10,
        bytes: 1 << 20,
    };
    let store = open_log(home, dir.path(), limits);
    let mut sent = Vec::new();
    for r in ["r1", "r2", "r3"] {
        // started, six updates, done: eight events a run.
        sent.extend(run(&store, "b", r, 6));
    }
    assert_eq!(ids(&sent), (1..=24).collect::<Vec<_>>());
    // The newest ten are kept; the fourteen before them are one gap.
    let mut kept = vec![Got::Gap(1, 14)];
    kept.extend_from_slice(&sent[14..]);
    published(&store, "b", 24).await;
    assert_eq!(visible(&store, "b", 0).await, kept, "before the reopen");

    let store = reopen(store, home, dir.path(), limits, &["b"]).await;
    assert_eq!(visible(&store, "b", 0).await, kept, "after the reopen");
    let mut inside = vec![Got::Gap(6, 14)];
    inside.extend_from_slice(&sent[14..]);
    assert_eq!(
        visible(&store, "b", 5).await,
        inside,
        "resuming inside the gap"
    );
    assert_eq!(
        visible(&store, "b", 19).await,
        sent[19..].to_vec(),
        "resuming after the gap"
    );
    assert_eq!(store.next_seq("b").expect("next"), 25);
    drop(store);
    // The first run's pack held only dropped events when the third was packed: deleted. The
    // second's still holds 15 and 16.
    assert_eq!(
        stored_keys(dir.path(), "b"),
        [(9, Some(16)), (17, Some(24))]
    );

    // Ids keep rising, and a pack the reopened store read back is dropped once all its events
    // are gone.
    let store = open_log(home, dir.path(), limits);
    sent.extend(run(&store, "b", "r4", 6));
    assert_eq!(ids(&sent[24..]), (25..=32).collect::<Vec<_>>());
    let mut kept = vec![Got::Gap(1, 22)];
    kept.extend_from_slice(&sent[22..]);
    let store = reopen(store, home, dir.path(), limits, &["b"]).await;
    assert_eq!(visible(&store, "b", 0).await, kept);
    drop(store);
    assert_eq!(
        stored_keys(dir.path(), "b"),
        [(17, Some(24)), (25, Some(32))]
    );
}

in_both_homes!(packs_are_bounded_like_the_log_and_the_ones_it_dropped_go_away);

async fn the_byte_bound_applies_to_packed_events_read_back(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = EventLimits {
        events: 100,
        bytes: 1000,
    };
    // Every envelope, with its id, serializes to 400..500 bytes: two fit in 1000, three do not.
    let pad = "x".repeat(360);
    let padded = |mode: &str, mut data: Value| {
        data["pad"] = json!(pad);
        let size = serde_json::to_string(
            &json!({"seq": 99, "ns": [], "mode": mode, "node": null, "data": data}),
        )
        .expect("json")
        .len();
        assert!((400..500).contains(&size), "{size} bytes");
        data
    };
    let store = open_log(home, dir.path(), limits);
    let mut sent = vec![append(
        &store,
        "y",
        "run",
        padded("run", json!({"status": "started", "run_id": "r1"})),
    )];
    store.set_running("y", Some("r1")).expect("running");
    for step in 0..3 {
        sent.push(append(
            &store,
            "y",
            "updates",
            padded("updates", update("r1", step)),
        ));
    }
    sent.push(append(
        &store,
        "y",
        "run",
        padded("run", json!({"status": "done", "run_id": "r1"})),
    ));
    store.set_running("y", None).expect("ended");
    // One more event, of the next run: the pack still holds event 4, which the bound dropped.
    sent.push(append(
        &store,
        "y",
        "run",
        padded("run", json!({"status": "started", "run_id": "r2"})),
    ));
    assert_eq!(ids(&sent), (1..=6).collect::<Vec<_>>());
    let mut kept = vec![Got::Gap(1, 4)];
    kept.extend_from_slice(&sent[4..]);
    published(&store, "y", 6).await;
    assert_eq!(visible(&store, "y", 0).await, kept, "before the reopen");
    let store = reopen(store, home, dir.path(), limits, &["y"]).await;
    assert_eq!(visible(&store, "y", 0).await, kept, "after the reopen");
    assert_eq!(store.next_seq("y").expect("next"), 7);
}

in_both_homes!(the_byte_bound_applies_to_packed_events_read_back);

async fn events_dropped_under_lower_bounds_stay_dropped_when_the_bounds_are_raised_again(
    home: Home,
) {
    // A server restarted with fewer events per thread, then with more again.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    let mut sent = run(&store, "o", "r1", 6); // 1..=8, packed
    sent.push(append(
        &store,
        "o",
        "run",
        json!({"status": "started", "run_id": "r2"}),
    ));
    store.set_running("o", Some("r2")).expect("running");
    for step in 0..3 {
        sent.push(append(&store, "o", "updates", update("r2", step)));
    }
    assert_eq!(ids(&sent), (1..=12).collect::<Vec<_>>());

    let fewer = EventLimits {
        events: 3,
        bytes: 1 << 20,
    };
    let store = reopen(store, home, dir.path(), fewer, &["o"]).await;
    let mut kept = vec![Got::Gap(1, 9)];
    kept.extend_from_slice(&sent[9..]);
    assert_eq!(visible(&store, "o", 0).await, kept, "under the lower bound");
    sent.push(append(
        &store,
        "o",
        "run",
        json!({"status": "done", "run_id": "r2"}),
    ));
    store.set_running("o", None).expect("ended");
    published(&store, "o", 13).await;
    let mut kept = vec![Got::Gap(1, 10)];
    kept.extend_from_slice(&sent[10..]);
    assert_eq!(visible(&store, "o", 0).await, kept, "after the run's end");

    // Events 1..=10 were dropped: raising the bound again does not bring any of them back.
    let store = reopen(store, home, dir.path(), LIMITS, &["o"]).await;
    assert_eq!(
        visible(&store, "o", 0).await,
        kept,
        "under the raised bound"
    );
    drop(store);
    assert_eq!(
        stored_keys(dir.path(), "o"),
        [(11, Some(13))],
        "only the kept events are stored"
    );
}

in_both_homes!(events_dropped_under_lower_bounds_stay_dropped_when_the_bounds_are_raised_again);

async fn close_unfinished_runs_reads_through_packs(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    // Ended: the end event is inside the pack.
    let done = run(&store, "done", "r1", 3);
    // Ended, but the process stopped before the next run's start was logged: a marker is left
    // while the log ends with an end event.
    let marked = run(&store, "marked", "r1", 2);
    store
        .set_running("marked", Some("r-next"))
        .expect("running");
    // A packed run, then one that started and did not end: with the run recorded in flight,
    // and without (a process stopped before `set_running`).
    let mut killed = run(&store, "killed", "r1", 2);
    killed.push(append(
        &store,
        "killed",
        "run",
        json!({"status": "started", "run_id": "r2"}),
    ));
    store.set_running("killed", Some("r2")).expect("running");
    killed.push(append(&store, "killed", "updates", update("r2", 0)));
    let mut unmarked = run(&store, "unmarked", "r1", 2);
    unmarked.push(append(
        &store,
        "unmarked",
        "run",
        json!({"status": "started", "run_id": "r7"}),
    ));
    unmarked.push(append(&store, "unmarked", "updates", update("r7", 0)));
    unmarked.push(append(&store, "unmarked", "updates", update("r7", 1)));
    let threads = ["done", "marked", "killed", "unmarked"];

    let store = reopen(store, home, dir.path(), LIMITS, &threads).await;
    let mut closed = store.close_unfinished_runs().expect("close");
    closed.sort();
    assert_eq!(closed, ["killed", "unmarked"]);
    for (thread, before, run_id) in [("killed", &killed, "r2"), ("unmarked", &unmarked, "r7")] {
        let end = before.len() as u64 + 1;
        published(&store, thread, end).await;
        let got = visible(&store, thread, 0).await;
        assert_eq!(got.len(), before.len() + 1, "{thread}: {got:?}");
        assert_eq!(&got[..before.len()], &before[..], "{thread}");
        let Got::Event(id, ev) = &got[before.len()] else {
            panic!("{thread}: {got:?}")
        };
        assert_eq!(*id, end, "{thread}");
        assert_eq!(ev["mode"], "run", "{thread}: {ev}");
        assert_eq!(ev["data"]["status"], "interrupted", "{thread}: {ev}");
        assert_eq!(ev["data"]["run_id"], run_id, "{thread}: {ev}");
    }
    for (thread, before) in [("done", &done), ("marked", &marked)] {
        assert_eq!(
            &visible(&store, thread, 0).await,
            before,
            "{thread} left alone"
        );
        assert_eq!(
            store.next_seq(thread).expect("next"),
            before.len() as u64 + 1
        );
    }

    // The interrupted runs are closed for good: not again on the next start, and the end
    // events are still there.
    let store = reopen(store, home, dir.path(), LIMITS, &threads).await;
    assert_eq!(
        store.close_unfinished_runs().expect("close"),
        Vec::<String>::new()
    );
    for (thread, before) in [("killed", &killed), ("unmarked", &unmarked)] {
        let got = visible(&store, thread, 0).await;
        assert_eq!(got.len(), before.len() + 1, "{thread}: {got:?}");
        assert_eq!(&got[..before.len()], &before[..], "{thread}");
    }
    assert_eq!(&visible(&store, "done", 0).await, &done);
}

in_both_homes!(close_unfinished_runs_reads_through_packs);

/// A live reader gets each event within two seconds of its append, with nothing appended
/// after it to carry it: an event between runs, a run's start, its end.
async fn a_lone_event_reaches_a_live_reader_within_two_seconds(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    let stop = CancellationToken::new();
    let mut live = Box::pin(store.replay("p", Some(0), stop.clone()).expect("replay"));
    let lone = [
        ("updates", update("r0", 0)),
        ("run", json!({"status": "started", "run_id": "r1"})),
        ("messages", json!({"text": "hello"})),
        ("run", json!({"status": "done", "run_id": "r1"})),
        ("custom", json!({"after": "the end"})),
    ];
    for (mode, data) in lone {
        let what = format!("{mode} {data}");
        let want = append(&store, "p", mode, data);
        let got = tokio::time::timeout(Duration::from_secs(2), live.next())
            .await
            .unwrap_or_else(|_| panic!("{what} is not published within 2 s"))
            .map(Got::from);
        assert_eq!(got, Some(want), "{what}");
    }
    // A reader that starts after the append, and events of two threads appended together.
    let a = append(&store, "q1", "updates", update("r9", 1));
    let b = append(&store, "q2", "updates", update("r9", 2));
    for (thread, want) in [("q1", a), ("q2", b)] {
        let mut late = Box::pin(store.replay(thread, Some(0), stop.clone()).expect("replay"));
        let got = tokio::time::timeout(Duration::from_secs(2), late.next())
            .await
            .unwrap_or_else(|_| panic!("the event of {thread} is published within 2 s"))
            .map(Got::from);
        assert_eq!(got, Some(want));
    }
    stop.cancel();
}

in_both_homes!(a_lone_event_reaches_a_live_reader_within_two_seconds);

#[tokio::test]
async fn a_lone_event_reaches_a_live_reader_within_two_seconds_on_a_current_thread_runtime() {
    a_lone_event_reaches_a_live_reader_within_two_seconds(Home::Folder).await;
    a_lone_event_reaches_a_live_reader_within_two_seconds(Home::Beside).await;
}

async fn events_appended_while_a_publication_is_under_way_all_reach_readers_in_order(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    let stop = CancellationToken::new();
    let mut live = Box::pin(
        store
            .replay("burst", Some(0), stop.clone())
            .expect("replay"),
    );
    let mut sent = Vec::new();
    for i in 0..60 {
        sent.push(append(&store, "burst", "updates", update("r1", i)));
        if i % 3 == 0 {
            // Land some appends while the publisher waits for its flush.
            tokio::time::sleep(Duration::from_micros(700)).await;
        }
    }
    let got: Vec<Got> = tokio::time::timeout(
        Duration::from_secs(2),
        live.as_mut()
            .take(sent.len())
            .map(Got::from)
            .collect::<Vec<_>>(),
    )
    .await
    .expect("every event is published within 2 s of the last append");
    assert_eq!(got, sent);
    stop.cancel();
}

in_both_homes!(events_appended_while_a_publication_is_under_way_all_reach_readers_in_order);

async fn a_folder_created_with_compression_opens_and_keeps_it(home: Home) {
    use agentgraph_runtime::checkpoint::sled_folder_compression;
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = sled::Config::new()
            .path(dir.path())
            .use_compression(true)
            .open()
            .expect("sled with compression");
        db.open_tree("other")
            .expect("tree")
            .insert(b"k", b"v")
            .expect("insert");
        db.flush().expect("flush");
    }
    assert_eq!(sled_folder_compression(dir.path()), Some(true));
    let store = open_log(home, dir.path(), LIMITS);
    let sent = run(&store, "c", "r1", 2);
    let store = reopen(store, home, dir.path(), LIMITS, &["c"]).await;
    assert_eq!(visible(&store, "c", 0).await, sent);
    drop(store);
    assert_eq!(sled_folder_compression(dir.path()), Some(true), "kept");

    // A new folder: the checkpoints' database is compressed by default, an events folder of
    // its own is not.
    let fresh = tempfile::tempdir().expect("tempdir");
    assert_eq!(sled_folder_compression(fresh.path()), None);
    let store = open_log(home, fresh.path(), LIMITS);
    drop(store);
    let expected = matches!(home, Home::Beside);
    assert_eq!(sled_folder_compression(fresh.path()), Some(expected));
}

in_both_homes!(a_folder_created_with_compression_opens_and_keeps_it);

fn events_left_by_a_runtime_that_shut_down_are_published_by_the_next_append(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_log(home, dir.path(), LIMITS);
    // The runtime ends before the task that would publish the event ever runs.
    let gone = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let first = gone.block_on(async { append(&store, "x", "updates", update("r1", 0)) });
    drop(gone);
    let next = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    next.block_on(async {
        let second = append(&store, "y", "updates", update("r2", 0));
        for (thread, want) in [("x", first), ("y", second)] {
            let stop = CancellationToken::new();
            let mut live = Box::pin(store.replay(thread, Some(0), stop.clone()).expect("replay"));
            let got = tokio::time::timeout(Duration::from_secs(2), live.next())
                .await
                .unwrap_or_else(|_| panic!("the event of {thread} is published within 2 s"))
                .map(Got::from);
            assert_eq!(got, Some(want), "{thread}");
            stop.cancel();
        }
    });
}

#[test]
fn events_left_by_a_runtime_that_shut_down_are_published_by_the_next_append_in_a_folder() {
    events_left_by_a_runtime_that_shut_down_are_published_by_the_next_append(Home::Folder);
}

#[test]
fn events_left_by_a_runtime_that_shut_down_are_published_by_the_next_append_beside() {
    events_left_by_a_runtime_that_shut_down_are_published_by_the_next_append(Home::Beside);
}

async fn concurrent_runs_and_packs_lose_no_event(home: Home) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = std::sync::Arc::new(open_log(home, dir.path(), LIMITS));
    // Four threads of their own, and one that every task appends to and ends runs on.
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let own = format!("own-{w}");
            let mut mine = Vec::new();
            let mut shared = Vec::new();
            for r in 0..3 {
                let run_id = format!("w{w}-r{r}");
                mine.extend(run(&store, &own, &run_id, 4));
                for step in 0..3 {
                    shared.push(append(&store, "shared", "updates", update(&run_id, step)));
                    tokio::task::yield_now().await;
                }
                store.set_running("shared", None).expect("ended");
            }
            (own, mine, shared)
        }));
    }
    let mut threads = vec!["shared".to_string()];
    let mut want: std::collections::BTreeMap<String, Vec<Got>> = Default::default();
    for t in tasks {
        let (own, mine, shared) = t.await.expect("join");
        assert_eq!(ids(&mine), (1..=18).collect::<Vec<_>>(), "{own}");
        want.entry("shared".into()).or_default().extend(shared);
        threads.push(own.clone());
        want.insert(own, mine);
    }
    let shared = want.get_mut("shared").expect("shared");
    shared.sort_by_key(|g| ids(std::slice::from_ref(g))[0]);
    assert_eq!(ids(shared), (1..=36).collect::<Vec<_>>(), "unique ids");
    let store = std::sync::Arc::into_inner(store).expect("the tasks are done");
    let names: Vec<&str> = threads.iter().map(String::as_str).collect();
    let store = reopen(store, home, dir.path(), LIMITS, &names).await;
    for (thread, events) in &want {
        assert_eq!(&visible(&store, thread, 0).await, events, "{thread}");
    }
}

in_both_homes!(concurrent_runs_and_packs_lose_no_event);
