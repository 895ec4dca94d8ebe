//! A conformance suite that every [`Checkpointer`] implementation runs (memory, sled, and any
//! later backend), modelled on LangGraph's `langgraph-checkpoint-conformance` harness plus the
//! parts that are specific to this runtime (delta blobs, pruning, thread listing).
//!
//! This is test-support code: each check is a plain `async fn` that panics, through `assert!`
//! and `assert_eq!`, with a message saying what the backend got wrong. It writes raw
//! checkpoints, blobs and pending writes directly; no graph runs.
//!
//! [`run_all`] runs every check in [`CHECKS`] against a fresh, empty checkpointer made by the
//! caller's factory, then panics once, listing every check that failed:
//!
//! ```no_run
//! use agentgraph_runtime::checkpoint::{conformance, Checkpointer, MemoryCheckpointer};
//! use std::sync::Arc;
//!
//! # async fn demo() {
//! conformance::run_all(|| async {
//!     Arc::new(MemoryCheckpointer::new()) as Arc<dyn Checkpointer>
//! })
//! .await;
//! # }
//! ```
//!
//! A single check can be run on its own too: `conformance::list_before_and_limit(&*cp).await`.

use super::{
    special, ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PendingTask, PendingWrite, PruneStats, Source,
};
use crate::ids::CheckpointId;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// One check: runs against an empty checkpointer and panics on a violation.
pub type Check = for<'a> fn(&'a dyn Checkpointer) -> BoxFuture<'a, ()>;

macro_rules! checks {
    ($($name:ident),* $(,)?) => {
        /// Every check of the suite with its name, in the order [`run_all`] runs them.
        pub const CHECKS: &[(&str, Check)] = &[$((stringify!($name), |cp| Box::pin($name(cp)))),*];
    };
}

checks![
    put_get_round_trip,
    put_get_every_source,
    get_latest_and_by_id,
    get_missing,
    namespaces_isolated,
    threads_isolated,
    put_writes_round_trip,
    put_writes_ordered_by_task_then_index,
    put_writes_idempotent,
    put_writes_special_channels,
    put_writes_isolated,
    new_checkpoint_has_no_pending_writes,
    list_newest_first,
    list_namespace_filter,
    list_metadata_filter,
    list_before_and_limit,
    channel_entries_set,
    channel_entries_delta_chain,
    channel_entries_chain_starts_at_set_or_clear,
    channel_entries_missing_blob,
    incremental_blobs,
    list_threads_sorted,
    delete_thread_removes_everything,
    delete_thread_leaves_other_threads,
    prune_keeps_newest_per_namespace,
    prune_keeps_needed_blobs,
    prune_every_thread,
    prune_keep_zero_removes_all,
    invalid_keys,
    flush_works,
    null_payload_and_input_round_trip,
    floats_round_trip_exactly,
];

/// Runs every check in [`CHECKS`], each on a fresh checkpointer from `make`, and panics at the
/// end with the list of the checks that failed (each failure's own panic message is printed
/// as it happens).
pub async fn run_all<F, Fut>(mut make: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Arc<dyn Checkpointer>>,
{
    let mut failed = Vec::new();
    for (name, check) in CHECKS {
        let cp = make().await;
        let outcome = AssertUnwindSafe(check(&*cp)).catch_unwind().await;
        drop(cp);
        if let Err(panic) = outcome {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".into());
            failed.push(format!("{name}: {msg}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} checkpointer conformance checks failed:\n{}",
        failed.len(),
        CHECKS.len(),
        failed.join("\n---\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const THREAD: &str = "thread-1";
const OTHER: &str = "thread-2";
const ROOT: &str = "";
const CHILD: &str = "child:abc";
const NESTED: &str = "a:1|b:2";
const SCHEMA: &str = "conformance-schema-v1";

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("test bug: {other} is not an object"),
    }
}

/// A bare checkpoint: no channels, no tasks.
fn ckpt(parent: Option<CheckpointId>, step: i64, source: Source) -> Checkpoint {
    Checkpoint {
        id: CheckpointId::new(),
        parent,
        step,
        source,
        channel_versions: BTreeMap::new(),
        next: Vec::new(),
        barriers: BTreeMap::new(),
        input: None,
        schema_version: SCHEMA.into(),
        event_seq: 0,
        metadata: Map::new(),
    }
}

/// A checkpoint with every field set to something non-default.
fn full_checkpoint(parent: Option<CheckpointId>) -> Checkpoint {
    let v1 = CheckpointId::new();
    let mut c = ckpt(parent, 3, Source::Loop);
    c.channel_versions = BTreeMap::from([
        ("messages".to_string(), v1),
        ("count".to_string(), c.id),
        ("ключ ✓".to_string(), c.id),
    ]);
    c.next = vec![
        PendingTask {
            node: "agent".into(),
            payload: None,
        },
        PendingTask {
            node: "worker".into(),
            payload: Some(json!({"item": 1, "tags": ["a", "b"]})),
        },
        PendingTask {
            node: "worker".into(),
            payload: Some(json!([1, "two", 3.5])),
        },
        PendingTask {
            node: "worker".into(),
            payload: Some(json!(0)),
        },
        PendingTask {
            node: "worker".into(),
            payload: Some(json!("")),
        },
        PendingTask {
            node: "worker".into(),
            payload: Some(json!(false)),
        },
    ];
    c.barriers = BTreeMap::from([
        (
            "join:a+b".to_string(),
            vec!["a".to_string(), "b".to_string()],
        ),
        ("join:c".to_string(), Vec::new()),
    ]);
    c.input = Some(json!({"messages": [{"type": "human", "content": "hi"}], "n": 2}));
    c.schema_version = "schema-ä-0123456789abcdef".into();
    c.event_seq = 1 << 40;
    c.metadata = obj(json!({
        "writes": {"agent": ["messages", "count"]},
        "run_id": "run-42",
        "parents": {"": "00000000000000000000000000000001"},
        "score": 1.5,
        "flag": true,
        "nothing": null,
        "big": u64::MAX,
        "negative": -7,
        "unicode ключ": "värde ✓ 🦀",
        "nested": {"deep": [[1], [2, {"x": null}]]},
    }));
    c
}

fn ids(tuples: &[CheckpointTuple]) -> Vec<CheckpointId> {
    tuples.iter().map(|t| t.checkpoint.id).collect()
}

fn newest_first(cs: &[Checkpoint]) -> Vec<CheckpointId> {
    cs.iter().rev().map(|c| c.id).collect()
}

async fn put(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    c: &Checkpoint,
    blobs: &[(&str, ChannelEntry)],
) {
    let blobs: Vec<(String, ChannelEntry)> = blobs
        .iter()
        .map(|(ch, e)| (ch.to_string(), e.clone()))
        .collect();
    cp.put(thread, ns, c, &blobs)
        .await
        .unwrap_or_else(|e| panic!("put {} in {thread:?}/{ns:?} failed: {e}", c.id));
}

async fn put_writes(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    id: CheckpointId,
    task: &str,
    writes: &[(&str, Value)],
) {
    let writes: Vec<(String, Value)> = writes
        .iter()
        .map(|(ch, v)| (ch.to_string(), v.clone()))
        .collect();
    cp.put_writes(thread, ns, id, task, &writes)
        .await
        .unwrap_or_else(|e| panic!("put_writes on {id} in {thread:?}/{ns:?} failed: {e}"));
}

async fn get(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    id: Option<CheckpointId>,
) -> Option<CheckpointTuple> {
    cp.get(thread, ns, id)
        .await
        .unwrap_or_else(|e| panic!("get {id:?} in {thread:?}/{ns:?} failed: {e}"))
}

async fn must_get(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    id: Option<CheckpointId>,
) -> CheckpointTuple {
    get(cp, thread, ns, id)
        .await
        .unwrap_or_else(|| panic!("get {id:?} in {thread:?}/{ns:?} found nothing"))
}

async fn list(cp: &dyn Checkpointer, thread: &str, query: ListQuery) -> Vec<CheckpointTuple> {
    cp.list(thread, &query)
        .await
        .unwrap_or_else(|e| panic!("list {thread:?} with {query:?} failed: {e}"))
}

fn query(ns: Option<&str>) -> ListQuery {
    ListQuery {
        ns: ns.map(str::to_string),
        ..ListQuery::default()
    }
}

async fn entries(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    channel: &str,
    version: CheckpointId,
) -> Vec<(CheckpointId, ChannelEntry)> {
    cp.channel_entries(thread, ns, channel, version)
        .await
        .unwrap_or_else(|e| {
            panic!("channel_entries {channel:?}@{version} in {thread:?}/{ns:?} failed: {e}")
        })
}

/// Folds a channel's entries the way the engine does, with "append" as the delta reducer.
async fn channel_value(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    channel: &str,
    version: CheckpointId,
) -> Option<Value> {
    let mut cur: Option<Value> = None;
    for (_, e) in entries(cp, thread, ns, channel, version).await {
        match e {
            ChannelEntry::Set(v) => cur = Some(v),
            ChannelEntry::Clear => cur = None,
            ChannelEntry::Delta { writes, .. } => {
                let mut list = match cur.take() {
                    Some(Value::Array(l)) => l,
                    None => Vec::new(),
                    Some(other) => panic!("test bug: delta onto {other}"),
                };
                list.extend(writes);
                cur = Some(Value::Array(list));
            }
        }
    }
    cur
}

/// Every channel value of a checkpoint, rebuilt from its blobs.
async fn values_of(
    cp: &dyn Checkpointer,
    thread: &str,
    ns: &str,
    c: &Checkpoint,
) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (ch, v) in &c.channel_versions {
        if let Some(value) = channel_value(cp, thread, ns, ch, *v).await {
            out.insert(ch.clone(), value);
        }
    }
    out
}

/// `n` checkpoints of one namespace, each the child of the one before, oldest first: an
/// `input` checkpoint at step -1, then `loop` checkpoints.
async fn chain(cp: &dyn Checkpointer, thread: &str, ns: &str, n: usize) -> Vec<Checkpoint> {
    let mut out: Vec<Checkpoint> = Vec::new();
    for i in 0..n {
        let (step, source) = if i == 0 {
            (-1, Source::Input)
        } else {
            (i as i64 - 1, Source::Loop)
        };
        let c = ckpt(out.last().map(|p| p.id), step, source);
        put(cp, thread, ns, &c, &[]).await;
        out.push(c);
    }
    out
}

fn writes_summary(ws: &[PendingWrite]) -> Vec<(String, i64, String, Value)> {
    ws.iter()
        .map(|w| (w.task_id.clone(), w.idx, w.channel.clone(), w.value.clone()))
        .collect()
}

fn w(task: &str, idx: i64, channel: &str, value: Value) -> (String, i64, String, Value) {
    (task.to_string(), idx, channel.to_string(), value)
}

fn assert_invalid_key<T: std::fmt::Debug>(r: Result<T, CheckpointError>, what: &str, op: &str) {
    match r {
        Err(CheckpointError::InvalidKey { what: got, .. }) => assert_eq!(
            got, what,
            "{op}: InvalidKey names the wrong part of the key"
        ),
        other => panic!(
            "{op}: expected CheckpointError::InvalidKey for a {what} with NUL, got {other:?}"
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// get / put
// ---------------------------------------------------------------------------------------------

/// Every field of a checkpoint comes back from `get` unchanged, by id and as the newest, with
/// the thread and namespace it was put under and no pending writes; a root checkpoint (no
/// parent, empty maps, no input) round-trips too.
pub async fn put_get_round_trip(cp: &dyn Checkpointer) {
    let root = ckpt(None, -1, Source::Input);
    put(cp, THREAD, ROOT, &root, &[]).await;
    let t = must_get(cp, THREAD, ROOT, Some(root.id)).await;
    assert_eq!(
        t.checkpoint, root,
        "bare root checkpoint did not round-trip"
    );
    assert_eq!(t.checkpoint.parent, None, "root checkpoint grew a parent");

    let c = full_checkpoint(Some(root.id));
    put(
        cp,
        THREAD,
        ROOT,
        &c,
        &[("count", ChannelEntry::Set(json!(7)))],
    )
    .await;
    for id in [Some(c.id), None] {
        let t = must_get(cp, THREAD, ROOT, id).await;
        assert_eq!(
            t.checkpoint, c,
            "checkpoint fields differ after get({id:?})"
        );
        assert_eq!(t.thread_id, THREAD, "tuple names the wrong thread");
        assert_eq!(t.ns, ROOT, "tuple names the wrong namespace");
        assert!(t.pending_writes.is_empty(), "fresh checkpoint has writes");
    }

    let mut in_child = full_checkpoint(Some(c.id));
    in_child.source = Source::Update;
    put(cp, THREAD, CHILD, &in_child, &[]).await;
    let t = must_get(cp, THREAD, CHILD, None).await;
    assert_eq!(t.checkpoint, in_child, "child-namespace checkpoint differs");
    assert_eq!(t.ns, CHILD, "tuple names the wrong namespace");
}

/// Each [`Source`] and both signs of `step` round-trip, and `get` and `list` report them.
pub async fn put_get_every_source(cp: &dyn Checkpointer) {
    let mut put_order = Vec::new();
    let mut parent = None;
    for (step, source) in [
        (-1, Source::Input),
        (0, Source::Loop),
        (1, Source::Update),
        (2, Source::Fork),
        (i64::MAX, Source::Loop),
    ] {
        let mut c = ckpt(parent, step, source);
        if source == Source::Input {
            c.input = Some(json!("start"));
        }
        put(cp, THREAD, ROOT, &c, &[]).await;
        let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
        assert_eq!(
            t.checkpoint, c,
            "{source:?} checkpoint at step {step} differs"
        );
        parent = Some(c.id);
        put_order.push(c);
    }
    let listed = list(cp, THREAD, query(None)).await;
    let got: Vec<(i64, Source)> = listed
        .iter()
        .map(|t| (t.checkpoint.step, t.checkpoint.source))
        .collect();
    let want: Vec<(i64, Source)> = put_order.iter().rev().map(|c| (c.step, c.source)).collect();
    assert_eq!(got, want, "list reports the wrong steps or sources");
}

/// `get(None)` is the newest checkpoint of the namespace; `get(Some(id))` is exactly that one,
/// with its parent link.
pub async fn get_latest_and_by_id(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 4).await;
    let latest = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(
        latest.checkpoint, cs[3],
        "get(None) is not the newest checkpoint"
    );
    for (i, c) in cs.iter().enumerate() {
        let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
        assert_eq!(&t.checkpoint, c, "get(Some) returned another checkpoint");
        let want_parent = if i == 0 { None } else { Some(cs[i - 1].id) };
        assert_eq!(t.checkpoint.parent, want_parent, "parent link lost");
    }
    // A newer checkpoint put later becomes the latest.
    let newer = ckpt(Some(cs[3].id), 3, Source::Loop);
    put(cp, THREAD, ROOT, &newer, &[]).await;
    assert_eq!(
        must_get(cp, THREAD, ROOT, None).await.checkpoint.id,
        newer.id,
        "get(None) did not move to the checkpoint put last"
    );
}

/// Missing threads, namespaces and ids read as `None` (not errors); listing them is empty.
pub async fn get_missing(cp: &dyn Checkpointer) {
    assert!(
        get(cp, "nobody", ROOT, None).await.is_none(),
        "missing thread"
    );
    assert!(
        get(cp, "nobody", ROOT, Some(CheckpointId::new()))
            .await
            .is_none(),
        "missing thread by id"
    );
    assert!(
        list(cp, "nobody", query(None)).await.is_empty(),
        "list of missing thread"
    );

    let cs = chain(cp, THREAD, ROOT, 2).await;
    assert!(
        get(cp, THREAD, ROOT, Some(CheckpointId::new()))
            .await
            .is_none(),
        "an id never put was found"
    );
    assert!(
        get(cp, THREAD, CHILD, None).await.is_none(),
        "missing namespace"
    );
    assert!(
        get(cp, THREAD, CHILD, Some(cs[0].id)).await.is_none(),
        "a root checkpoint was found under a child namespace"
    );
    assert!(
        get(cp, OTHER, ROOT, Some(cs[0].id)).await.is_none(),
        "a checkpoint was found under another thread"
    );
}

/// The root namespace, a child namespace and a nested one (and prefixes of each other) hold
/// separate checkpoints and blobs.
pub async fn namespaces_isolated(cp: &dyn Checkpointer) {
    let namespaces = [ROOT, CHILD, NESTED, "a:1", "child"];
    let mut by_ns = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        let mut c = ckpt(None, i as i64, Source::Loop);
        c.channel_versions.insert("x".into(), c.id);
        c.metadata = obj(json!({"ns": ns}));
        put(cp, THREAD, ns, &c, &[("x", ChannelEntry::Set(json!(ns)))]).await;
        by_ns.push(c);
    }
    for (ns, c) in namespaces.iter().zip(&by_ns) {
        let t = must_get(cp, THREAD, ns, None).await;
        assert_eq!(
            &t.checkpoint, c,
            "namespace {ns:?} returned another namespace's newest"
        );
        assert_eq!(t.ns, *ns, "tuple names the wrong namespace");
        assert_eq!(
            channel_value(cp, THREAD, ns, "x", c.id).await,
            Some(json!(ns)),
            "blob of namespace {ns:?} differs"
        );
        for (other_ns, other) in namespaces.iter().zip(&by_ns) {
            if other_ns != ns {
                assert!(
                    get(cp, THREAD, ns, Some(other.id)).await.is_none(),
                    "checkpoint of {other_ns:?} visible under {ns:?}"
                );
                assert!(
                    cp.channel_entries(THREAD, ns, "x", other.id).await.is_err(),
                    "blob of {other_ns:?} visible under {ns:?}"
                );
            }
        }
        let listed = list(cp, THREAD, query(Some(ns))).await;
        assert_eq!(
            ids(&listed),
            vec![c.id],
            "list of {ns:?} is not exactly its checkpoint"
        );
    }
}

/// Threads (including one whose id is a prefix of another's) hold separate checkpoints.
pub async fn threads_isolated(cp: &dyn Checkpointer) {
    let threads = ["t", "t2", "t:1", "T", "t 1"];
    let mut by_thread = Vec::new();
    for t in threads {
        by_thread.push(chain(cp, t, ROOT, 2).await);
    }
    for (t, cs) in threads.iter().zip(&by_thread) {
        assert_eq!(
            must_get(cp, t, ROOT, None).await.checkpoint,
            cs[1],
            "thread {t:?} returned another thread's newest"
        );
        let listed = list(cp, t, query(None)).await;
        assert_eq!(ids(&listed), newest_first(cs), "list of thread {t:?}");
        assert!(
            listed.iter().all(|x| x.thread_id == *t),
            "tuple names the wrong thread"
        );
        for (other_t, other) in threads.iter().zip(&by_thread) {
            if other_t != t {
                assert!(
                    get(cp, t, ROOT, Some(other[0].id)).await.is_none(),
                    "checkpoint of {other_t:?} visible under {t:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// put_writes
// ---------------------------------------------------------------------------------------------

/// Writes of one call come back in order, numbered from 0, with task id, channel and value
/// intact (every JSON kind, null included), on `get` by id, `get(None)` and `list`.
pub async fn put_writes_round_trip(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let values = [
        json!("text"),
        json!(42),
        json!(-1.25),
        json!([1, [2, 3], {"a": null}]),
        json!({"k": {"nested": true}}),
        Value::Null,
        json!(false),
        json!(""),
    ];
    let writes: Vec<(&str, Value)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (if i % 2 == 0 { "a" } else { "b" }, v.clone()))
        .collect();
    put_writes(cp, THREAD, ROOT, c.id, "task-1", &writes).await;
    let want: Vec<_> = writes
        .iter()
        .enumerate()
        .map(|(i, (ch, v))| w("task-1", i as i64, ch, v.clone()))
        .collect();
    for id in [Some(c.id), None] {
        let t = must_get(cp, THREAD, ROOT, id).await;
        assert_eq!(
            writes_summary(&t.pending_writes),
            want,
            "pending writes differ on get({id:?})"
        );
    }
    let listed = list(cp, THREAD, query(None)).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        writes_summary(&listed[0].pending_writes),
        want,
        "list does not carry pending writes"
    );
}

/// Writes are ordered by task id, then index, whatever order the tasks wrote in.
pub async fn put_writes_ordered_by_task_then_index(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    put_writes(
        cp,
        THREAD,
        ROOT,
        c.id,
        "b",
        &[("x", json!("b0")), ("y", json!("b1"))],
    )
    .await;
    put_writes(cp, THREAD, ROOT, c.id, "ab", &[("x", json!("ab0"))]).await;
    let many: Vec<(&str, Value)> = (0..12).map(|i| ("x", json!(i))).collect();
    put_writes(cp, THREAD, ROOT, c.id, "a", &many).await;
    let got = writes_summary(&must_get(cp, THREAD, ROOT, None).await.pending_writes);
    let mut want: Vec<_> = (0..12).map(|i| w("a", i, "x", json!(i))).collect();
    want.push(w("ab", 0, "x", json!("ab0")));
    want.push(w("b", 0, "x", json!("b0")));
    want.push(w("b", 1, "y", json!("b1")));
    assert_eq!(got, want, "writes are not ordered by task id then index");
}

/// Putting the same writes of a task again (a retried save) leaves one copy of each.
pub async fn put_writes_idempotent(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let writes = [
        ("a", json!(1)),
        ("b", json!(2)),
        (special::DONE.0, json!(true)),
    ];
    for _ in 0..3 {
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &writes).await;
    }
    let got = writes_summary(&must_get(cp, THREAD, ROOT, None).await.pending_writes);
    assert_eq!(
        got,
        vec![
            w("task-1", special::DONE.1, special::DONE.0, json!(true)),
            w("task-1", 0, "a", json!(1)),
            w("task-1", 1, "b", json!(2)),
        ],
        "re-putting the same (task, idx) duplicated writes"
    );
}

/// `__error__`, `__interrupt__`, `__resume__`, `__done__` and `__seq__` keep one value per task (the
/// last), at their fixed negative indexes; they do not use up the normal indexes, and another
/// task's special writes are kept apart.
pub async fn put_writes_special_channels(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let specials = [
        special::ERROR,
        special::INTERRUPT,
        special::RESUME,
        special::DONE,
        special::SEQ,
    ];
    for (name, _) in specials {
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &[(name, json!({"v": 1}))]).await;
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &[(name, json!({"v": 2}))]).await;
    }
    put_writes(
        cp,
        THREAD,
        ROOT,
        c.id,
        "task-2",
        &[(special::ERROR.0, json!("boom"))],
    )
    .await;
    let got = must_get(cp, THREAD, ROOT, None).await.pending_writes;
    for (name, idx) in specials {
        let mine: Vec<_> = got
            .iter()
            .filter(|x| x.task_id == "task-1" && x.channel == name)
            .collect();
        assert_eq!(mine.len(), 1, "{name} kept {} values, not one", mine.len());
        assert_eq!(
            mine[0].value,
            json!({"v": 2}),
            "{name} did not keep the last value"
        );
        assert_eq!(mine[0].idx, idx, "{name} is not at its fixed index");
    }
    let other: Vec<_> = got.iter().filter(|x| x.task_id == "task-2").collect();
    assert_eq!(other.len(), 1, "another task's error was lost or merged");
    assert_eq!(other[0].value, json!("boom"));
    assert_eq!(got.len(), specials.len() + 1, "unexpected writes: {got:?}");

    // Special writes mixed with normal ones: normal indexes stay non-negative and in order.
    let c2 = ckpt(Some(c.id), 1, Source::Loop);
    put(cp, THREAD, ROOT, &c2, &[]).await;
    put_writes(
        cp,
        THREAD,
        ROOT,
        c2.id,
        "task-1",
        &[
            ("x", json!(1)),
            (special::INTERRUPT.0, json!(["ask"])),
            ("y", json!(2)),
            (special::DONE.0, json!(null)),
            ("x", json!(3)),
        ],
    )
    .await;
    let got = must_get(cp, THREAD, ROOT, None).await.pending_writes;
    let normal: Vec<_> = got
        .iter()
        .filter(|x| !x.channel.starts_with("__"))
        .collect();
    let order: Vec<(&str, &Value)> = normal
        .iter()
        .map(|x| (x.channel.as_str(), &x.value))
        .collect();
    assert_eq!(
        order,
        vec![("x", &json!(1)), ("y", &json!(2)), ("x", &json!(3))],
        "normal writes out of order"
    );
    assert!(
        normal.windows(2).all(|p| p[0].idx < p[1].idx) && normal[0].idx >= 0,
        "normal indexes are not increasing and non-negative: {normal:?}"
    );
    let specials_got: Vec<(&str, i64)> = got
        .iter()
        .filter(|x| x.channel.starts_with("__"))
        .map(|x| (x.channel.as_str(), x.idx))
        .collect();
    assert_eq!(
        specials_got,
        vec![special::DONE, special::INTERRUPT],
        "special writes among normal ones"
    );
}

/// Writes belong to one checkpoint of one namespace of one thread.
pub async fn put_writes_isolated(cp: &dyn Checkpointer) {
    let c1 = ckpt(None, 0, Source::Loop);
    let c2 = ckpt(Some(c1.id), 1, Source::Loop);
    for ns in [ROOT, CHILD] {
        put(cp, THREAD, ns, &c1, &[]).await;
        put(cp, THREAD, ns, &c2, &[]).await;
    }
    put(cp, OTHER, ROOT, &c1, &[]).await;
    put_writes(cp, THREAD, ROOT, c1.id, "t", &[("x", json!("root-c1"))]).await;
    put_writes(cp, THREAD, CHILD, c1.id, "t", &[("x", json!("child-c1"))]).await;
    put_writes(cp, THREAD, CHILD, c2.id, "t", &[("x", json!("child-c2"))]).await;

    let values = |t: CheckpointTuple| -> Vec<Value> {
        t.pending_writes.into_iter().map(|x| x.value).collect()
    };
    assert_eq!(
        values(must_get(cp, THREAD, ROOT, Some(c1.id)).await),
        vec![json!("root-c1")],
        "root c1"
    );
    assert!(
        values(must_get(cp, THREAD, ROOT, Some(c2.id)).await).is_empty(),
        "root c2 sees writes of another checkpoint or namespace"
    );
    assert_eq!(
        values(must_get(cp, THREAD, CHILD, Some(c1.id)).await),
        vec![json!("child-c1")],
        "child c1"
    );
    assert_eq!(
        values(must_get(cp, THREAD, CHILD, Some(c2.id)).await),
        vec![json!("child-c2")],
        "child c2"
    );
    assert!(
        values(must_get(cp, OTHER, ROOT, Some(c1.id)).await).is_empty(),
        "another thread sees the writes"
    );
}

/// A checkpoint put after one with writes starts with none; the older one keeps its own.
pub async fn new_checkpoint_has_no_pending_writes(cp: &dyn Checkpointer) {
    let c1 = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c1, &[]).await;
    put_writes(cp, THREAD, ROOT, c1.id, "t", &[("x", json!(1))]).await;
    let c2 = ckpt(Some(c1.id), 1, Source::Loop);
    put(cp, THREAD, ROOT, &c2, &[]).await;
    let latest = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(latest.checkpoint.id, c2.id);
    assert!(
        latest.pending_writes.is_empty(),
        "new checkpoint inherited writes"
    );
    assert_eq!(
        must_get(cp, THREAD, ROOT, Some(c1.id))
            .await
            .pending_writes
            .len(),
        1,
        "older checkpoint lost its writes"
    );
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

/// `list` returns every checkpoint of the thread, newest first, with pending writes.
pub async fn list_newest_first(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 6).await;
    put_writes(cp, THREAD, ROOT, cs[2].id, "t", &[("x", json!(2))]).await;
    chain(cp, OTHER, ROOT, 2).await;
    let listed = list(cp, THREAD, query(None)).await;
    assert_eq!(
        ids(&listed),
        newest_first(&cs),
        "not every checkpoint, newest first"
    );
    for t in &listed {
        let c = cs.iter().find(|c| c.id == t.checkpoint.id).expect("listed");
        assert_eq!(
            &t.checkpoint, c,
            "listed checkpoint differs from the one put"
        );
        let want = usize::from(c.id == cs[2].id);
        assert_eq!(t.pending_writes.len(), want, "listed pending writes");
    }
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(ROOT))).await),
        newest_first(&cs),
        "list with ns Some(\"\")"
    );
}

/// `ns: Some("")` lists only the root, `Some(ns)` only that namespace, `None` every namespace
/// merged newest first.
pub async fn list_namespace_filter(cp: &dyn Checkpointer) {
    let mut all: Vec<(String, CheckpointId)> = Vec::new();
    let mut parents: BTreeMap<&str, CheckpointId> = BTreeMap::new();
    // Interleave namespaces so that "newest first" has to merge them.
    for ns in [ROOT, CHILD, ROOT, NESTED, CHILD, ROOT, NESTED] {
        let c = ckpt(parents.get(ns).copied(), 0, Source::Loop);
        put(cp, THREAD, ns, &c, &[]).await;
        parents.insert(ns, c.id);
        all.push((ns.to_string(), c.id));
    }
    all.reverse();
    for ns in [ROOT, CHILD, NESTED] {
        let listed = list(cp, THREAD, query(Some(ns))).await;
        let want: Vec<CheckpointId> = all.iter().filter(|(n, _)| n == ns).map(|x| x.1).collect();
        assert_eq!(ids(&listed), want, "list of namespace {ns:?}");
        assert!(
            listed.iter().all(|t| t.ns == ns),
            "tuple names the wrong namespace"
        );
    }
    let listed = list(cp, THREAD, query(None)).await;
    let got: Vec<(String, CheckpointId)> = listed
        .iter()
        .map(|t| (t.ns.clone(), t.checkpoint.id))
        .collect();
    assert_eq!(got, all, "ns None must list every namespace, newest first");
    let limited = list(
        cp,
        THREAD,
        ListQuery {
            limit: Some(3),
            ..query(None)
        },
    )
    .await;
    assert_eq!(
        ids(&limited),
        all.iter().take(3).map(|x| x.1).collect::<Vec<_>>(),
        "limit over every namespace"
    );
    assert!(
        list(cp, THREAD, query(Some("missing"))).await.is_empty(),
        "a missing namespace lists checkpoints"
    );
}

/// Filters on `source`, `step` and custom metadata keys, ANDed; no match gives an empty list.
pub async fn list_metadata_filter(cp: &dyn Checkpointer) {
    let plan = [
        (-1, Source::Input, "run-1", "alice"),
        (0, Source::Loop, "run-1", "alice"),
        (1, Source::Loop, "run-1", "bob"),
        (1, Source::Update, "run-2", "bob"),
        (2, Source::Loop, "run-2", "alice"),
        (3, Source::Fork, "run-3", "carol"),
    ];
    let mut cs = Vec::new();
    let mut parent = None;
    for (step, source, run, user) in plan {
        let mut c = ckpt(parent, step, source);
        c.metadata = obj(json!({"run_id": run, "user": user, "score": step * 10}));
        put(cp, THREAD, ROOT, &c, &[]).await;
        parent = Some(c.id);
        cs.push(c);
    }
    let filtered = |f: Value| {
        let filter = obj(f);
        async move {
            ids(&list(
                cp,
                THREAD,
                ListQuery {
                    filter,
                    ..ListQuery::default()
                },
            )
            .await)
        }
    };
    let want = |pred: &dyn Fn(&Checkpoint) -> bool| -> Vec<CheckpointId> {
        cs.iter().rev().filter(|c| pred(c)).map(|c| c.id).collect()
    };
    assert_eq!(
        filtered(json!({"source": "loop"})).await,
        want(&|c| c.source == Source::Loop),
        "filter on source"
    );
    assert_eq!(
        filtered(json!({"source": "input"})).await,
        want(&|c| c.source == Source::Input),
        "filter on source input"
    );
    assert_eq!(
        filtered(json!({"step": 1})).await,
        want(&|c| c.step == 1),
        "filter on step"
    );
    assert_eq!(
        filtered(json!({"step": -1})).await,
        want(&|c| c.step == -1),
        "filter on a negative step"
    );
    assert_eq!(
        filtered(json!({"run_id": "run-1"})).await,
        want(&|c| c.metadata["run_id"] == "run-1"),
        "filter on a custom key"
    );
    assert_eq!(
        filtered(json!({"score": 20})).await,
        want(&|c| c.step == 2),
        "filter on a numeric custom key"
    );
    assert_eq!(
        filtered(json!({"source": "loop", "user": "alice", "run_id": "run-2"})).await,
        vec![cs[4].id],
        "several keys are ANDed"
    );
    assert_eq!(
        filtered(json!({"step": 1, "user": "bob"})).await,
        vec![cs[3].id, cs[2].id],
        "step and custom key"
    );
    assert!(
        filtered(json!({"user": "dave"})).await.is_empty(),
        "no match"
    );
    assert!(
        filtered(json!({"source": "loop", "user": "carol"}))
            .await
            .is_empty(),
        "AND with no match"
    );
    assert!(
        filtered(json!({"absent": 1})).await.is_empty(),
        "missing key matched"
    );
    assert_eq!(
        filtered(json!({})).await,
        want(&|_| true),
        "an empty filter matches everything"
    );
}

/// `before` is a cursor (strictly older), `limit` caps the count, and both combine for paging.
pub async fn list_before_and_limit(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 7).await;
    let all = newest_first(&cs);
    let q = |before: Option<CheckpointId>, limit: Option<usize>| ListQuery {
        ns: Some(ROOT.into()),
        before,
        limit,
        ..ListQuery::default()
    };
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(cs[4].id), None)).await),
        all[3..].to_vec(),
        "before is not 'strictly older than'"
    );
    assert!(
        list(cp, THREAD, q(Some(cs[0].id), None)).await.is_empty(),
        "before the oldest"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(CheckpointId::new()), None)).await),
        all,
        "before an id newer than every checkpoint"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(None, Some(3))).await),
        all[..3].to_vec(),
        "limit"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(None, Some(100))).await),
        all,
        "limit above the count"
    );
    assert!(
        list(cp, THREAD, q(None, Some(0))).await.is_empty(),
        "limit 0"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(cs[5].id), Some(2))).await),
        vec![cs[4].id, cs[3].id],
        "limit with before"
    );
    // Page through with limit + before.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = ids(&list(cp, THREAD, q(cursor, Some(3))).await);
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3, "page larger than limit");
        cursor = page.last().copied();
        paged.extend(page);
        assert!(paged.len() <= all.len(), "paging does not terminate");
    }
    assert_eq!(paged, all, "paging with limit + before");
    // before + filter + limit together.
    let filtered = list(
        cp,
        THREAD,
        ListQuery {
            filter: obj(json!({"source": "loop"})),
            ..q(Some(cs[6].id), Some(2))
        },
    )
    .await;
    assert_eq!(
        ids(&filtered),
        vec![cs[5].id, cs[4].id],
        "before + filter + limit"
    );
}

// ---------------------------------------------------------------------------------------------
// channel blobs
// ---------------------------------------------------------------------------------------------

/// A `Set` blob reads back as one entry with its checkpoint id, for any JSON value.
pub async fn channel_entries_set(cp: &dyn Checkpointer) {
    let values = [
        json!(1),
        json!("s"),
        Value::Null,
        json!([1, {"a": [null]}]),
        json!({"big": "x".repeat(10_000)}),
    ];
    let mut c = ckpt(None, 0, Source::Loop);
    let blobs: Vec<(String, ChannelEntry)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("ch{i}"), ChannelEntry::Set(v.clone())))
        .collect();
    for (ch, _) in &blobs {
        c.channel_versions.insert(ch.clone(), c.id);
    }
    cp.put(THREAD, ROOT, &c, &blobs).await.expect("put");
    for (ch, e) in &blobs {
        assert_eq!(
            entries(cp, THREAD, ROOT, ch, c.id).await,
            vec![(c.id, e.clone())],
            "Set blob of {ch} differs"
        );
    }
}

/// A chain of `Delta` blobs reads back oldest first, each with the id that wrote it, from any
/// point of the chain.
pub async fn channel_entries_delta_chain(cp: &dyn Checkpointer) {
    let mut prev: Option<CheckpointId> = None;
    let mut written: Vec<(CheckpointId, ChannelEntry)> = Vec::new();
    let mut parent = None;
    for i in 0..5 {
        let mut c = ckpt(parent, i, Source::Loop);
        let e = ChannelEntry::Delta {
            prev,
            writes: (0..=i).map(|j| json!({"step": i, "j": j})).collect(),
        };
        c.channel_versions.insert("log".into(), c.id);
        put(cp, THREAD, ROOT, &c, &[("log", e.clone())]).await;
        written.push((c.id, e));
        prev = Some(c.id);
        parent = Some(c.id);
    }
    for (i, (id, _)) in written.iter().enumerate() {
        assert_eq!(
            entries(cp, THREAD, ROOT, "log", *id).await,
            written[..=i].to_vec(),
            "delta chain at link {i} is not oldest-first with ids"
        );
    }
    let value = channel_value(cp, THREAD, ROOT, "log", written[4].0).await;
    assert_eq!(
        value.and_then(|v| v.as_array().map(Vec::len)),
        Some(15),
        "folded delta chain"
    );
}

/// A delta chain stops at the nearest `Set` or `Clear` before it.
pub async fn channel_entries_chain_starts_at_set_or_clear(cp: &dyn Checkpointer) {
    let vids: Vec<CheckpointId> = (0..6).map(|_| CheckpointId::new()).collect();
    let plan = [
        ChannelEntry::Delta {
            prev: None,
            writes: vec![json!(0)],
        },
        ChannelEntry::Set(json!([10, 11])),
        ChannelEntry::Delta {
            prev: Some(vids[1]),
            writes: vec![json!(2)],
        },
        ChannelEntry::Delta {
            prev: Some(vids[2]),
            writes: vec![json!(3), json!(4)],
        },
        ChannelEntry::Clear,
        ChannelEntry::Delta {
            prev: Some(vids[4]),
            writes: vec![json!(5)],
        },
    ];
    for (i, e) in plan.iter().enumerate() {
        let mut c = ckpt(i.checked_sub(1).map(|p| vids[p]), i as i64, Source::Loop);
        c.id = vids[i];
        c.channel_versions.insert("ch".into(), c.id);
        put(cp, THREAD, ROOT, &c, &[("ch", e.clone())]).await;
    }
    let at = |i: usize| (vids[i], plan[i].clone());
    assert_eq!(entries(cp, THREAD, ROOT, "ch", vids[0]).await, vec![at(0)]);
    assert_eq!(entries(cp, THREAD, ROOT, "ch", vids[1]).await, vec![at(1)]);
    assert_eq!(
        entries(cp, THREAD, ROOT, "ch", vids[3]).await,
        vec![at(1), at(2), at(3)],
        "chain after a Set must start at the Set"
    );
    assert_eq!(
        entries(cp, THREAD, ROOT, "ch", vids[5]).await,
        vec![at(4), at(5)],
        "chain after a Clear must start at the Clear"
    );
    assert_eq!(
        channel_value(cp, THREAD, ROOT, "ch", vids[3]).await,
        Some(json!([10, 11, 2, 3, 4]))
    );
    assert_eq!(
        channel_value(cp, THREAD, ROOT, "ch", vids[5]).await,
        Some(json!([5]))
    );
}

/// A version with no blob, or a chain whose `prev` is missing, is a `MissingBlob` error naming
/// the thread, channel and the missing version.
pub async fn channel_entries_missing_blob(cp: &dyn Checkpointer) {
    let missing = CheckpointId::new();
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("ch".into(), c.id);
    let e = ChannelEntry::Delta {
        prev: Some(missing),
        writes: vec![json!(1)],
    };
    put(cp, THREAD, ROOT, &c, &[("ch", e)]).await;
    for (channel, version, want_missing) in [
        ("ch", missing, missing),
        ("ch", c.id, missing),
        ("other", c.id, c.id),
    ] {
        match cp.channel_entries(THREAD, ROOT, channel, version).await {
            Err(CheckpointError::MissingBlob {
                thread,
                channel: ch,
                version: v,
            }) => {
                assert_eq!(thread, THREAD, "MissingBlob names the wrong thread");
                assert_eq!(ch, channel, "MissingBlob names the wrong channel");
                assert_eq!(v, want_missing, "MissingBlob names the wrong version");
            }
            other => panic!("{channel}@{version}: expected MissingBlob, got {other:?}"),
        }
    }
    match cp.channel_entries("nobody", ROOT, "ch", c.id).await {
        Err(CheckpointError::MissingBlob { .. }) => {}
        other => panic!("missing thread: expected MissingBlob, got {other:?}"),
    }
}

/// Only changed channels get a blob: unchanged channels are read from older versions, an old
/// checkpoint still reads its old values after newer ones are written, and a channel added
/// later is read where it exists and absent before.
pub async fn incremental_blobs(cp: &dyn Checkpointer) {
    let mut c1 = ckpt(None, 0, Source::Loop);
    c1.channel_versions = BTreeMap::from([("a".into(), c1.id), ("b".into(), c1.id)]);
    put(
        cp,
        THREAD,
        ROOT,
        &c1,
        &[
            ("a", ChannelEntry::Set(json!(1))),
            ("b", ChannelEntry::Set(json!("b1"))),
        ],
    )
    .await;
    let mut c2 = ckpt(Some(c1.id), 1, Source::Loop);
    c2.channel_versions = BTreeMap::from([("a".into(), c2.id), ("b".into(), c1.id)]);
    put(cp, THREAD, ROOT, &c2, &[("a", ChannelEntry::Set(json!(2)))]).await;
    let mut c3 = ckpt(Some(c2.id), 2, Source::Loop);
    c3.channel_versions = BTreeMap::from([
        ("a".into(), c2.id),
        ("b".into(), c3.id),
        ("c".into(), c3.id),
    ]);
    put(
        cp,
        THREAD,
        ROOT,
        &c3,
        &[
            ("b", ChannelEntry::Set(json!("b3"))),
            (
                "c",
                ChannelEntry::Delta {
                    prev: None,
                    writes: vec![json!("c3")],
                },
            ),
        ],
    )
    .await;
    // Channel "a" dropped from the version map: must not be loaded any more.
    let mut c4 = ckpt(Some(c3.id), 3, Source::Loop);
    c4.channel_versions = BTreeMap::from([("b".into(), c3.id), ("c".into(), c4.id)]);
    put(
        cp,
        THREAD,
        ROOT,
        &c4,
        &[(
            "c",
            ChannelEntry::Delta {
                prev: Some(c3.id),
                writes: vec![json!("c4")],
            },
        )],
    )
    .await;

    let load = |c: Checkpoint| async move {
        let stored = must_get(cp, THREAD, ROOT, Some(c.id)).await.checkpoint;
        values_of(cp, THREAD, ROOT, &stored).await
    };
    let expect = |v: Value| -> BTreeMap<String, Value> { obj(v).into_iter().collect() };
    assert_eq!(
        load(c1).await,
        expect(json!({"a": 1, "b": "b1"})),
        "c1 values"
    );
    assert_eq!(
        load(c2).await,
        expect(json!({"a": 2, "b": "b1"})),
        "c2 values"
    );
    assert_eq!(
        load(c3).await,
        expect(json!({"a": 2, "b": "b3", "c": ["c3"]})),
        "c3 values"
    );
    assert_eq!(
        load(c4).await,
        expect(json!({"b": "b3", "c": ["c3", "c4"]})),
        "c4 values"
    );
}

// ---------------------------------------------------------------------------------------------
// threads, deletion, pruning
// ---------------------------------------------------------------------------------------------

/// `list_threads` lists each thread once (whatever its namespaces), sorted.
pub async fn list_threads_sorted(cp: &dyn Checkpointer) {
    assert!(
        cp.list_threads().await.expect("list_threads").is_empty(),
        "empty store"
    );
    for t in ["b", "a", "c:1", "a b", "a"] {
        chain(cp, t, ROOT, 1).await;
    }
    chain(cp, "b", CHILD, 2).await;
    chain(cp, "d", NESTED, 1).await;
    assert_eq!(
        cp.list_threads().await.expect("list_threads"),
        vec!["a", "a b", "b", "c:1", "d"],
        "threads not listed once each, sorted"
    );
}

/// Puts one thread's data in three namespaces: checkpoints, writes and a delta chain each.
async fn populate(cp: &dyn Checkpointer, thread: &str) -> Vec<(&'static str, Vec<Checkpoint>)> {
    let mut out = Vec::new();
    for ns in [ROOT, CHILD, NESTED] {
        let mut cs: Vec<Checkpoint> = Vec::new();
        for i in 0..3 {
            let mut c = ckpt(cs.last().map(|p| p.id), i, Source::Loop);
            c.channel_versions.insert("log".into(), c.id);
            let e = ChannelEntry::Delta {
                prev: cs.last().map(|p| p.id),
                writes: vec![json!(i)],
            };
            put(cp, thread, ns, &c, &[("log", e)]).await;
            put_writes(cp, thread, ns, c.id, "task", &[("log", json!(i))]).await;
            cs.push(c);
        }
        out.push((ns, cs));
    }
    out
}

/// `delete_thread` removes checkpoints, writes and blobs of every namespace; deleting a missing
/// thread is a no-op.
pub async fn delete_thread_removes_everything(cp: &dyn Checkpointer) {
    let data = populate(cp, THREAD).await;
    cp.delete_thread(THREAD).await.expect("delete_thread");
    assert!(
        list(cp, THREAD, query(None)).await.is_empty(),
        "checkpoints left"
    );
    assert!(
        !cp.list_threads()
            .await
            .expect("list_threads")
            .iter()
            .any(|t| t == THREAD),
        "thread still listed"
    );
    for (ns, cs) in &data {
        assert!(
            get(cp, THREAD, ns, None).await.is_none(),
            "{ns:?} still has a checkpoint"
        );
        for c in cs {
            assert!(
                cp.channel_entries(THREAD, ns, "log", c.id).await.is_err(),
                "blob {} of {ns:?} left",
                c.id
            );
        }
        // Put the record back without writes: no pending writes may survive.
        put(cp, THREAD, ns, &cs[0], &[]).await;
        assert!(
            must_get(cp, THREAD, ns, Some(cs[0].id))
                .await
                .pending_writes
                .is_empty(),
            "pending writes of {ns:?} left after delete"
        );
    }
    cp.delete_thread(THREAD).await.expect("delete_thread again");
    cp.delete_thread("never-existed")
        .await
        .expect("delete a missing thread");
    assert!(list(cp, THREAD, query(None)).await.is_empty());
}

/// Deleting a thread leaves other threads (even ones whose id it prefixes) intact.
pub async fn delete_thread_leaves_other_threads(cp: &dyn Checkpointer) {
    let keep = ["t2", "t:", "u"];
    populate(cp, "t").await;
    let mut kept = Vec::new();
    for t in keep {
        kept.push((t, populate(cp, t).await));
    }
    cp.delete_thread("t").await.expect("delete_thread");
    assert_eq!(
        cp.list_threads().await.expect("list_threads"),
        vec!["t2", "t:", "u"],
        "remaining threads"
    );
    for (t, data) in kept {
        assert_eq!(
            list(cp, t, query(None)).await.len(),
            9,
            "{t:?} lost checkpoints"
        );
        for (ns, cs) in data {
            let last = cs.last().expect("populated");
            let tuple = must_get(cp, t, ns, None).await;
            assert_eq!(&tuple.checkpoint, last, "{t:?}/{ns:?} newest");
            assert_eq!(tuple.pending_writes.len(), 1, "{t:?}/{ns:?} lost writes");
            assert_eq!(
                channel_value(cp, t, ns, "log", last.id).await,
                Some(json!([0, 1, 2])),
                "{t:?}/{ns:?} lost blobs"
            );
        }
    }
}

/// `prune(thread, keep)` keeps the newest `keep` checkpoints of each namespace with their
/// pending writes, removes the rest with their writes, and reports the counts.
pub async fn prune_keeps_newest_per_namespace(cp: &dyn Checkpointer) {
    let root = chain(cp, THREAD, ROOT, 5).await;
    let child = chain(cp, THREAD, CHILD, 3).await;
    let nested = chain(cp, THREAD, NESTED, 1).await;
    chain(cp, OTHER, ROOT, 5).await;
    for (ns, cs) in [(ROOT, &root), (CHILD, &child), (NESTED, &nested)] {
        for c in cs {
            put_writes(
                cp,
                THREAD,
                ns,
                c.id,
                "task",
                &[("x", json!(1)), ("y", json!(2))],
            )
            .await;
        }
    }
    let stats = cp.prune(Some(THREAD), 2).await.expect("prune");
    assert_eq!(
        (stats.checkpoints, stats.writes),
        (3 + 1, 2 * (3 + 1)),
        "prune counts: {stats:?}"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(ROOT))).await),
        vec![root[4].id, root[3].id],
        "root keeps its newest 2"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(CHILD))).await),
        vec![child[2].id, child[1].id],
        "child keeps its newest 2"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(NESTED))).await),
        vec![nested[0].id],
        "a namespace with fewer than keep is untouched"
    );
    for t in list(cp, THREAD, query(None)).await {
        assert_eq!(
            t.pending_writes.len(),
            2,
            "a kept checkpoint lost its writes"
        );
    }
    assert_eq!(
        cp.prune(Some(THREAD), 2).await.expect("prune again"),
        PruneStats::default(),
        "a second prune to the same size removed more"
    );
    for c in &root[..3] {
        assert!(
            get(cp, THREAD, ROOT, Some(c.id)).await.is_none(),
            "pruned checkpoint left"
        );
        put(cp, THREAD, ROOT, c, &[]).await;
        assert!(
            must_get(cp, THREAD, ROOT, Some(c.id))
                .await
                .pending_writes
                .is_empty(),
            "writes of a pruned checkpoint left"
        );
    }
    assert_eq!(
        list(cp, OTHER, query(None)).await.len(),
        5,
        "prune of one thread touched another"
    );
    assert_eq!(
        cp.prune(Some("nobody"), 1).await.expect("prune missing"),
        PruneStats::default(),
        "prune of a missing thread"
    );
}

/// Pruning keeps every blob a kept checkpoint's channels still need (whole delta chains back to
/// their `Set`, and unchanged channels' older blobs) and removes the rest.
pub async fn prune_keeps_needed_blobs(cp: &dyn Checkpointer) {
    // Five steps: "log" is a delta chain with a Set at step 2; "count" is Set every step;
    // "static" is written once at step 0 and never again; "gone" only at step 1 then dropped.
    let mut cs: Vec<Checkpoint> = Vec::new();
    for i in 0..5i64 {
        let mut c = ckpt(cs.last().map(|p| p.id), i, Source::Loop);
        let prev = cs.last().map(|p| p.channel_versions["log"]);
        let log = if i == 2 {
            ChannelEntry::Set(json!(["reset"]))
        } else {
            ChannelEntry::Delta {
                prev,
                writes: vec![json!(i)],
            }
        };
        let mut blobs = vec![("log", log), ("count", ChannelEntry::Set(json!(i)))];
        c.channel_versions.insert("log".into(), c.id);
        c.channel_versions.insert("count".into(), c.id);
        if i == 0 {
            blobs.push(("static", ChannelEntry::Set(json!("s"))));
            c.channel_versions.insert("static".into(), c.id);
        } else {
            c.channel_versions.insert("static".into(), cs[0].id);
        }
        if i == 1 {
            blobs.push(("gone", ChannelEntry::Set(json!("g"))));
            c.channel_versions.insert("gone".into(), c.id);
        }
        put(cp, THREAD, ROOT, &c, &blobs).await;
        cs.push(c);
    }
    let before: Vec<BTreeMap<String, Value>> = {
        let mut v = Vec::new();
        for c in &cs {
            v.push(values_of(cp, THREAD, ROOT, c).await);
        }
        v
    };
    let stats = cp.prune(Some(THREAD), 2).await.expect("prune");
    // Kept: steps 3 and 4. They need log@2,3,4, count@3,4, static@0. Removed: log@0,1,
    // count@0,1,2, gone@1.
    assert_eq!(stats.checkpoints, 3, "checkpoints removed: {stats:?}");
    assert_eq!(stats.blobs, 6, "blobs removed: {stats:?}");
    for i in [3, 4] {
        let stored = must_get(cp, THREAD, ROOT, Some(cs[i].id)).await.checkpoint;
        assert_eq!(
            values_of(cp, THREAD, ROOT, &stored).await,
            before[i],
            "kept checkpoint {i} cannot be rebuilt after prune"
        );
    }
    assert_eq!(
        entries(cp, THREAD, ROOT, "log", cs[4].id)
            .await
            .into_iter()
            .map(|x| x.0)
            .collect::<Vec<_>>(),
        vec![cs[2].id, cs[3].id, cs[4].id],
        "delta chain of a kept checkpoint"
    );
    for (ch, i) in [
        ("log", 0),
        ("log", 1),
        ("count", 0),
        ("count", 2),
        ("gone", 1),
    ] {
        match cp.channel_entries(THREAD, ROOT, ch, cs[i].id).await {
            Err(CheckpointError::MissingBlob { .. }) => {}
            other => panic!("unreachable blob {ch}@{i} was not removed: {other:?}"),
        }
    }
    let again = cp.prune(Some(THREAD), 2).await.expect("prune again");
    assert_eq!(again, PruneStats::default(), "a second prune removed more");
}

/// `prune(None, keep)` covers every thread and sums the counts.
pub async fn prune_every_thread(cp: &dyn Checkpointer) {
    let a = chain(cp, "a", ROOT, 4).await;
    let b = chain(cp, "b", ROOT, 2).await;
    let b_child = chain(cp, "b", CHILD, 3).await;
    let c = chain(cp, "c", ROOT, 1).await;
    let stats = cp.prune(None, 1).await.expect("prune all");
    assert_eq!(
        stats.checkpoints,
        3 + 1 + 2,
        "checkpoints removed: {stats:?}"
    );
    assert_eq!(
        ids(&list(cp, "a", query(None)).await),
        vec![a[3].id],
        "thread a"
    );
    assert_eq!(
        ids(&list(cp, "b", query(None)).await),
        vec![b_child[2].id, b[1].id],
        "thread b"
    );
    assert_eq!(
        ids(&list(cp, "c", query(None)).await),
        vec![c[0].id],
        "thread c"
    );
}

/// `prune(thread, 0)` removes every checkpoint, write and blob of the thread.
pub async fn prune_keep_zero_removes_all(cp: &dyn Checkpointer) {
    populate(cp, THREAD).await;
    populate(cp, OTHER).await;
    let stats = cp.prune(Some(THREAD), 0).await.expect("prune 0");
    assert_eq!(
        stats,
        PruneStats {
            checkpoints: 9,
            blobs: 9,
            writes: 9
        },
        "prune to zero counts"
    );
    assert!(
        list(cp, THREAD, query(None)).await.is_empty(),
        "checkpoints left"
    );
    assert_eq!(
        list(cp, OTHER, query(None)).await.len(),
        9,
        "other thread touched"
    );
}

/// Ids the store cannot key (a NUL in a thread id, namespace, channel or task id) are an
/// `InvalidKey` error and write nothing.
pub async fn invalid_keys(cp: &dyn Checkpointer) {
    let bad = "a\0b";
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("x".into(), c.id);
    let blobs = vec![("x".to_string(), ChannelEntry::Set(json!(1)))];
    let writes = vec![("x".to_string(), json!(1))];
    assert_invalid_key(cp.put(bad, ROOT, &c, &blobs).await, "thread id", "put");
    assert_invalid_key(cp.put(THREAD, bad, &c, &blobs).await, "namespace", "put");
    let bad_blob = vec![
        ("x".to_string(), ChannelEntry::Set(json!(1))),
        (bad.to_string(), ChannelEntry::Set(json!(2))),
    ];
    assert_invalid_key(cp.put(THREAD, ROOT, &c, &bad_blob).await, "channel", "put");
    assert!(
        get(cp, THREAD, ROOT, None).await.is_none(),
        "a put that failed on a bad channel wrote the checkpoint"
    );
    assert!(
        cp.channel_entries(THREAD, ROOT, "x", c.id).await.is_err(),
        "a put that failed on a bad channel wrote a blob"
    );
    assert_invalid_key(
        cp.put_writes(bad, ROOT, c.id, "t", &writes).await,
        "thread id",
        "put_writes",
    );
    assert_invalid_key(
        cp.put_writes(THREAD, bad, c.id, "t", &writes).await,
        "namespace",
        "put_writes",
    );
    assert_invalid_key(
        cp.put_writes(THREAD, ROOT, c.id, bad, &writes).await,
        "task id",
        "put_writes",
    );
    assert_invalid_key(cp.get(bad, ROOT, None).await, "thread id", "get");
    assert_invalid_key(cp.get(THREAD, bad, Some(c.id)).await, "namespace", "get");
    assert_invalid_key(cp.list(bad, &query(None)).await, "thread id", "list");
    assert_invalid_key(
        cp.list(THREAD, &query(Some(bad))).await,
        "namespace",
        "list",
    );
    assert_invalid_key(
        cp.channel_entries(bad, ROOT, "x", c.id).await,
        "thread id",
        "channel_entries",
    );
    assert_invalid_key(
        cp.channel_entries(THREAD, bad, "x", c.id).await,
        "namespace",
        "channel_entries",
    );
    assert_invalid_key(cp.delete_thread(bad).await, "thread id", "delete_thread");
    assert_invalid_key(cp.prune(Some(bad), 1).await, "thread id", "prune");
    assert!(
        cp.list_threads().await.expect("list_threads").is_empty(),
        "failed calls created a thread"
    );
}

/// `flush` succeeds on an empty store and after writes, and what was written stays readable.
pub async fn flush_works(cp: &dyn Checkpointer) {
    cp.flush().await.expect("flush of an empty store");
    let cs = chain(cp, THREAD, ROOT, 3).await;
    put_writes(cp, THREAD, ROOT, cs[2].id, "t", &[("x", json!(1))]).await;
    cp.flush().await.expect("flush");
    let t = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(t.checkpoint, cs[2]);
    assert_eq!(t.pending_writes.len(), 1);
    cp.flush().await.expect("second flush");
}

/// A push task whose `send` payload is JSON `null`, and an input checkpoint whose input is
/// `null`, round-trip as `Some(Value::Null)` (a plain `Option<Value>` field would read them
/// back as `None`, turning a push task into a pull task).
pub async fn null_payload_and_input_round_trip(cp: &dyn Checkpointer) {
    let mut c = ckpt(None, -1, Source::Input);
    c.input = Some(Value::Null);
    c.next = vec![PendingTask {
        node: "worker".into(),
        payload: Some(Value::Null),
    }];
    put(cp, THREAD, ROOT, &c, &[]).await;
    let got = must_get(cp, THREAD, ROOT, Some(c.id)).await.checkpoint;
    assert_eq!(got.next, c.next, "a null send payload did not round-trip");
    assert_eq!(got.input, c.input, "a null input did not round-trip");
}

/// Floats in checkpoint fields, blobs and pending writes read back bit for bit (serde_json
/// needs its `float_roundtrip` feature for this: without it 130586.53403353193 reads back as
/// 130586.53403353192, and a value rebuilt from storage differs from the live one).
pub async fn floats_round_trip_exactly(cp: &dyn Checkpointer) {
    let floats = [
        130586.53403353193,
        -987765.3163121423,
        0.1 + 0.2,
        1.0e-300,
        f64::MAX,
        std::f64::consts::PI,
    ];
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("f".into(), c.id);
    c.metadata = obj(json!({"floats": floats}));
    c.input = Some(json!(floats));
    put(
        cp,
        THREAD,
        ROOT,
        &c,
        &[("f", ChannelEntry::Set(json!(floats)))],
    )
    .await;
    put_writes(cp, THREAD, ROOT, c.id, "t", &[("f", json!(floats))]).await;
    let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
    assert_eq!(t.checkpoint, c, "floats in checkpoint fields");
    assert_eq!(
        t.pending_writes[0].value,
        json!(floats),
        "floats in pending writes"
    );
    assert_eq!(
        entries(cp, THREAD, ROOT, "f", c.id).await,
        vec![(c.id, ChannelEntry::Set(json!(floats)))],
        "floats in blobs"
    );
}
