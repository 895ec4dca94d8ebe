//! The sled checkpointer's folder settings (a folder keeps the compression it was created with)
//! and the group commit's flush on every kind of caller: a current-thread runtime, a
//! multi-thread one (where the flush runs on the caller's thread), outside any runtime.

use agentgraph_runtime::checkpoint::{
    open_sled, sled_config, sled_folder_compression, ChannelEntry, Checkpoint, Checkpointer,
    GroupCommit, PendingTask, SledCheckpointer, SledCompression, SledOptions, Source,
};
use agentgraph_runtime::CheckpointId;
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

fn sample(step: i64) -> Checkpoint {
    let id = CheckpointId::new();
    Checkpoint {
        id,
        parent: None,
        step,
        source: Source::Loop,
        channel_versions: BTreeMap::from([("answer".to_string(), id)]),
        next: vec![PendingTask {
            node: "worker".into(),
            payload: None,
        }],
        barriers: BTreeMap::new(),
        input: None,
        schema_version: "v1".into(),
        event_seq: 7,
        metadata: Map::from_iter([("run_id".to_string(), json!("r1"))]),
    }
}

/// Puts a checkpoint on `thread` and reads it back.
async fn put_and_get(cp: &SledCheckpointer, thread: &str) -> Checkpoint {
    let c = sample(1);
    cp.put(
        thread,
        "",
        &c,
        &[("answer".to_string(), ChannelEntry::Set(json!("forty-two")))],
    )
    .await
    .expect("put");
    cp.flush().await.expect("flush");
    let got = cp.get(thread, "", Some(c.id)).await.expect("get");
    assert_eq!(got.map(|t| t.checkpoint), Some(c.clone()));
    c
}

/// Creates a sled database in `dir` with compression, holding one key in tree `probe`.
fn compressed_folder(dir: &Path) {
    let db = sled::Config::new()
        .path(dir)
        .use_compression(true)
        .open()
        .expect("sled with compression");
    db.open_tree("probe")
        .expect("tree")
        .insert(b"k", b"written before")
        .expect("insert");
    db.flush().expect("flush");
}

#[tokio::test]
async fn a_folder_created_with_compression_opens_and_its_checkpoints_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    compressed_folder(dir.path());
    assert_eq!(sled_folder_compression(dir.path()), Some(true));
    let c = {
        let cp = SledCheckpointer::open(dir.path()).expect("a compressed folder opens");
        let probe = cp.store().db().open_tree("probe").expect("tree");
        assert_eq!(
            probe.get(b"k").expect("get").as_deref(),
            Some(&b"written before"[..])
        );
        put_and_get(&cp, "t").await
    };
    assert_eq!(sled_folder_compression(dir.path()), Some(true), "kept");
    // Asking for no compression changes nothing either; the checkpoint is still there.
    let cp = SledCheckpointer::open_with(
        dir.path(),
        SledOptions {
            compression: SledCompression::Off,
            ..SledOptions::default()
        },
    )
    .expect("reopens");
    let got = cp.get("t", "", Some(c.id)).await.expect("get");
    assert_eq!(got.map(|t| t.checkpoint), Some(c));
    put_and_get(&cp, "t2").await;
}

#[tokio::test]
async fn a_new_folder_is_created_without_compression_when_asked_and_keeps_that() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(sled_folder_compression(dir.path()), None, "an empty folder");
    let c = {
        let cp = SledCheckpointer::open_with(
            dir.path(),
            SledOptions {
                compression: SledCompression::Off,
                ..SledOptions::default()
            },
        )
        .expect("open");
        put_and_get(&cp, "t").await
    };
    assert_eq!(sled_folder_compression(dir.path()), Some(false));
    // The default asks for compression: an existing folder without it still opens as it is.
    let cp = SledCheckpointer::open(dir.path()).expect("open");
    assert!(
        cp.store().db().get(VALUE_CODEC).expect("get").is_none(),
        "values of a store created without compression stay as they are"
    );
    drop(cp);
    let cp = SledCheckpointer::open(dir.path())
        .expect("asking for compression does not break an existing folder");
    let got = cp.get("t", "", Some(c.id)).await.expect("get");
    assert_eq!(got.map(|t| t.checkpoint), Some(c));
    drop(cp);
    assert_eq!(sled_folder_compression(dir.path()), Some(false), "kept");
}

/// The key of sled's default tree that says a database stores its values compressed.
const VALUE_CODEC: &[u8] = b"agentgraph.wal.value-codec";

#[tokio::test]
async fn a_new_folder_compresses_sled_pages_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = {
        let cp = SledCheckpointer::open(dir.path()).expect("open");
        assert!(
            cp.store().db().get(VALUE_CODEC).expect("get").is_none(),
            "values as they are"
        );
        put_and_get(&cp, "t").await
    };
    assert_eq!(sled_folder_compression(dir.path()), Some(true));
    let cp = SledCheckpointer::open(dir.path()).expect("the default options reopen it");
    let got = cp.get("t", "", Some(c.id)).await.expect("get");
    assert_eq!(got.map(|t| t.checkpoint), Some(c));
}

#[tokio::test]
async fn a_new_folder_asked_for_value_compression_keeps_it_when_reopened_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let values = SledOptions {
        compression: SledCompression::Values,
        ..SledOptions::default()
    };
    let c = {
        let cp = SledCheckpointer::open_with(dir.path(), values).expect("open");
        assert!(cp.store().db().get(VALUE_CODEC).expect("get").is_some());
        put_and_get(&cp, "t").await
    };
    assert_eq!(
        sled_folder_compression(dir.path()),
        Some(false),
        "sled's page compression (a zstd context per message) is off"
    );
    let cp = SledCheckpointer::open(dir.path()).expect("reopened with the default options");
    assert!(
        cp.store().db().get(VALUE_CODEC).expect("get").is_some(),
        "the value form is kept"
    );
    let got = cp.get("t", "", Some(c.id)).await.expect("get");
    assert_eq!(got.map(|t| t.checkpoint), Some(c));
}

#[test]
fn folders_without_a_sled_conf_have_no_compression_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(sled_folder_compression(dir.path()), None);
    assert_eq!(sled_folder_compression(&dir.path().join("missing")), None);
    std::fs::write(dir.path().join("conf"), "segment_size: 524288\n").expect("write");
    assert_eq!(
        sled_folder_compression(dir.path()),
        None,
        "a conf that does not say"
    );
}

#[test]
fn the_sled_config_opens_folders_of_either_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    compressed_folder(dir.path());
    let db = open_sled(&sled_config(dir.path(), 1 << 20, false)).expect("compressed folder");
    assert_eq!(
        db.open_tree("probe")
            .expect("tree")
            .get(b"k")
            .expect("get")
            .as_deref(),
        Some(&b"written before"[..])
    );
    drop(db);
    let plain = tempfile::tempdir().expect("tempdir");
    drop(
        sled::Config::new()
            .path(plain.path())
            .open()
            .expect("plain"),
    );
    assert_eq!(sled_folder_compression(plain.path()), Some(false));
    drop(open_sled(&sled_config(plain.path(), 1 << 20, true)).expect("plain folder"));
}

/// A group commit whose flush counts its runs and the threads it ran on.
fn counted() -> (
    GroupCommit,
    Arc<AtomicUsize>,
    Arc<Mutex<Vec<std::thread::ThreadId>>>,
) {
    let runs = Arc::new(AtomicUsize::new(0));
    let threads = Arc::new(Mutex::new(Vec::new()));
    let (r, t) = (runs.clone(), threads.clone());
    let gc = GroupCommit::new(move || {
        r.fetch_add(1, Ordering::SeqCst);
        t.lock().expect("lock").push(std::thread::current().id());
        Ok(())
    });
    (gc, runs, threads)
}

#[tokio::test]
async fn a_flush_from_a_current_thread_runtime_works() {
    let (gc, runs, threads) = counted();
    gc.flush().await.expect("flush");
    gc.flush_within(Duration::from_millis(2))
        .await
        .expect("flush_within");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(gc.flushes(), 2);
    // The only thread of this runtime must not block on the disk.
    assert!(
        !threads
            .lock()
            .expect("lock")
            .contains(&std::thread::current().id()),
        "flushed on the runtime's own thread"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_from_a_multi_thread_runtime_works_from_every_kind_of_caller() {
    let (gc, runs, _) = counted();
    // The test's own future (`block_on`), a worker's task, a blocking thread entering the
    // runtime, and a delayed flush.
    gc.flush().await.expect("from block_on");
    let on_worker = gc.clone();
    tokio::spawn(async move { on_worker.flush().await })
        .await
        .expect("join")
        .expect("from a worker");
    let blocking = gc.clone();
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Handle::current().block_on(blocking.flush())
    })
    .await
    .expect("join")
    .expect("from a blocking thread");
    let within = gc.clone();
    tokio::spawn(async move { within.flush_within(Duration::from_millis(2)).await })
        .await
        .expect("join")
        .expect("delayed, from a worker");
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

#[test]
fn a_flush_outside_any_runtime_works() {
    let (gc, runs, _) = counted();
    futures::executor::block_on(gc.flush()).expect("flush");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_caller_that_cannot_block_in_place_still_gets_its_flush() {
    // A current-thread runtime's future that entered a multi-thread runtime: the handle is a
    // multi-thread one, but this thread is not one of its workers and may not block in place.
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (gc, runs, _) = counted();
    let result = current.block_on(async {
        let _entered = multi.handle().enter();
        tokio::time::timeout(Duration::from_secs(5), gc.flush()).await
    });
    assert_eq!(result, Ok(Ok(())), "flushed, in time");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A flush that blocks until it is let go (5 s at most), and tells when each one starts.
struct Gated {
    gc: GroupCommit,
    started: tokio::sync::mpsc::UnboundedReceiver<usize>,
    release: mpsc::Sender<()>,
    runs: Arc<AtomicUsize>,
}

fn gated() -> Gated {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let gc = GroupCommit::new(move || {
        let n = r.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = started_tx.send(n);
        match released
            .lock()
            .expect("lock")
            .recv_timeout(Duration::from_secs(5))
        {
            Ok(()) => Ok(()),
            Err(_) => Err(format!("flush {n} was never let go")),
        }
    });
    Gated {
        gc,
        started,
        release,
        runs,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_inline_flush_lets_the_other_tasks_of_its_worker_run() {
    // One worker: the flush blocks it until a task spawned on the same runtime lets it go.
    let Gated {
        gc,
        mut started,
        release,
        runs,
    } = gated();
    let flusher = tokio::spawn({
        let gc = gc.clone();
        async move { gc.flush().await }
    });
    let releaser = tokio::spawn(async move {
        let n = started.recv().await;
        release.send(()).expect("release");
        n
    });
    let (flushed, let_go) = tokio::time::timeout(Duration::from_secs(10), async {
        (flusher.await, releaser.await)
    })
    .await
    .expect("not blocked");
    assert_eq!(let_go.expect("join"), Some(1));
    flushed
        .expect("join")
        .expect("the flush was let go by the other task");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_of_an_inline_flush_and_one_waiting_for_the_next_all_return() {
    let Gated {
        gc,
        mut started,
        release,
        runs,
    } = gated();
    let first = tokio::spawn({
        let gc = gc.clone();
        async move { gc.flush().await }
    });
    let wait = Duration::from_secs(10);
    assert_eq!(
        tokio::time::timeout(wait, started.recv()).await,
        Ok(Some(1))
    );
    // While flush 1 runs: a caller that needs the next flush, and one sharing any flush.
    let second = tokio::spawn({
        let gc = gc.clone();
        async move { gc.flush().await }
    });
    let delayed = tokio::spawn({
        let gc = gc.clone();
        async move { gc.flush_within(Duration::from_millis(2)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!first.is_finished(), "returned before its flush ended");
    release.send(()).expect("release 1");
    tokio::time::timeout(wait, first)
        .await
        .expect("the first caller returns once its flush ends")
        .expect("join")
        .expect("flush 1");
    // The waiting callers need a flush that started after their call: the second one.
    assert_eq!(
        tokio::time::timeout(wait, started.recv()).await,
        Ok(Some(2))
    );
    assert!(!second.is_finished(), "returned before a flush covered it");
    release.send(()).expect("release 2");
    tokio::time::timeout(wait, second)
        .await
        .expect("the waiting caller returns")
        .expect("join")
        .expect("flush 2");
    tokio::time::timeout(wait, delayed)
        .await
        .expect("the delayed caller returns")
        .expect("join")
        .expect("covered by flush 2");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one flush for both waiters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_callers_on_a_multi_thread_runtime_share_flushes_and_all_return() {
    let overlap = Arc::new(AtomicUsize::new(0));
    let active = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let (o, a, r) = (overlap.clone(), active.clone(), runs.clone());
    let gc = GroupCommit::new(move || {
        let now = a.fetch_add(1, Ordering::SeqCst) + 1;
        o.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        r.fetch_add(1, Ordering::SeqCst);
        a.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    });
    let mut tasks = Vec::new();
    for i in 0..200 {
        let gc = gc.clone();
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                gc.flush().await
            } else {
                gc.flush_within(Duration::from_millis(2)).await
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(20), async {
        for t in tasks {
            t.await.expect("join").expect("flush");
        }
    })
    .await
    .expect("every caller returns");
    assert_eq!(overlap.load(Ordering::SeqCst), 1, "flushes overlapped");
    let n = runs.load(Ordering::SeqCst);
    assert!((1..200).contains(&n), "{n} flushes for 200 callers");
}
