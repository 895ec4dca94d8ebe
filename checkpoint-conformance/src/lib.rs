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
//! use agentgraph_checkpoint_conformance as conformance;
//! use agentgraph_runtime::checkpoint::{Checkpointer, MemoryCheckpointer};
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
//!
//! The long-term [`agentgraph_runtime::store::Store`] backends have their own suite
//! ([`store::run_store_suite`], with a deterministic test embedder, [`store::HashEmbedder`]),
//! and the node cache over each of them another ([`node_cache::run_cache_suite`]).

use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PendingTask, PendingWrite, Source,
};
use agentgraph_runtime::CheckpointId;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

// The checks, one file per topic, re-exported so each stays at `conformance::<check>`.
mod blobs;
mod keys;
mod list;
pub mod node_cache;
mod put_get;
pub mod store;
mod threads;
mod writes;

pub use blobs::{
    blob_reads_one_entry, channel_entries_chain_starts_at_set_or_clear,
    channel_entries_delta_chain, channel_entries_missing_blob, channel_entries_set,
    incremental_blobs,
};
pub use keys::{
    floats_round_trip_exactly, flush_works, invalid_keys, null_payload_and_input_round_trip,
};
pub use list::{
    list_before_and_limit, list_metadata_filter, list_namespace_filter, list_newest_first,
};
pub use put_get::{
    get_latest_and_by_id, get_missing, namespaces_isolated, put_get_every_source,
    put_get_round_trip, threads_isolated,
};
pub use threads::{
    delete_thread_leaves_other_threads, delete_thread_removes_everything, list_threads_sorted,
    prune_every_thread, prune_keep_zero_removes_all, prune_keeps_needed_blobs,
    prune_keeps_newest_per_namespace, prune_long_history,
};
pub use writes::{
    new_checkpoint_has_no_pending_writes, put_writes_idempotent, put_writes_isolated,
    put_writes_ordered_by_task_then_index, put_writes_round_trip, put_writes_special_channels,
};

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
    blob_reads_one_entry,
    list_threads_sorted,
    delete_thread_removes_everything,
    delete_thread_leaves_other_threads,
    prune_keeps_newest_per_namespace,
    prune_keeps_needed_blobs,
    prune_every_thread,
    prune_keep_zero_removes_all,
    prune_long_history,
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

/// The message of a caught panic.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(non-string panic)".into())
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
