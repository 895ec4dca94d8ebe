//! Checkpoints: what is saved after every step, and the [`Checkpointer`] trait that stores them.
//!
//! Storage grows with what a step changed, not with the state: a checkpoint record holds only
//! small bookkeeping (channel versions, the next tasks, barriers), and each changed channel gets
//! one blob keyed by `(channel, checkpoint id)`. A channel whose reducer stores deltas
//! ([`crate::reducer::Storage::Deltas`]) keeps only the step's writes plus a link to its previous
//! blob, so appending one message to a long history stores that message alone.

mod group_commit;
mod keys;
pub(crate) mod kv;
mod memory;
pub mod portable;
mod run_leases;
mod sled_store;
mod thread_locks;
mod wal;

pub use group_commit::{FlushFn, GroupCommit};
pub use kv::{AsyncKvStore, KvCheckpointer, KvStore, KvVisitor};
pub use memory::{MemoryCheckpointer, MemoryStore};
pub use run_leases::{ClaimedRun, RunLeases, RunOutcome, RunRecord};
pub use sled_store::{
    open_sled, sled_config, sled_folder_compression, SledCheckpointer, SledCompression,
    SledOptions, SledStore,
};
pub use thread_locks::{LocalThreadLocks, ReleaseFn, ThreadLease, ThreadLocks};
pub use wal::{WalError, WalSettings, WalTree};

use crate::ids::CheckpointId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Why a checkpoint was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The run's input, before it is applied.
    Input,
    /// After a step of the run loop.
    Loop,
    /// Written by `update_state`.
    Update,
    /// A copy of an older checkpoint that a run continues from (time travel).
    Fork,
}

impl Source {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::Loop => "loop",
            Source::Update => "update",
            Source::Fork => "fork",
        }
    }
}

/// Reads a field that is present as `Some`, even when its value is `null` (serde's default
/// reads a present `null` as `None`); an absent field falls back to `None` via `default`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A task planned for the next step: a node (pull task) or a node with a payload (push task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingTask {
    /// The node to run.
    pub node: String,
    /// The `send` payload of a push task (`Some(null)` is a push task whose payload is null).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub payload: Option<Value>,
}

/// One saved step boundary of a thread (in one namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Time-sortable id.
    pub id: CheckpointId,
    /// The checkpoint this one follows.
    pub parent: Option<CheckpointId>,
    /// Super-step number (-1 for the first input checkpoint).
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// For each channel with a value: the id of the checkpoint holding its newest blob.
    pub channel_versions: BTreeMap<String, CheckpointId>,
    /// Tasks of the next step, in order.
    pub next: Vec<PendingTask>,
    /// Waiting edges: join key → sources that have finished since the join last ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub barriers: BTreeMap<String, Vec<String>>,
    /// The input of an `input` checkpoint, applied by the next step.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub input: Option<Value>,
    /// Hash of the state schema that wrote it.
    pub schema_version: String,
    /// The next stream sequence number of the thread.
    #[serde(default)]
    pub event_seq: u64,
    /// `writes` (node → channels it wrote), `run_id`, and caller-supplied keys.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

impl Checkpoint {
    /// Whether `filter` (equality on top-level keys; `source` and `step` included) matches.
    pub fn matches(&self, filter: &Map<String, Value>) -> bool {
        filter.iter().all(|(k, v)| match k.as_str() {
            "source" => v.as_str() == Some(self.source.as_str()),
            "step" => v.as_i64() == Some(self.step),
            _ => self.metadata.get(k) == Some(v),
        })
    }
}

/// What a checkpoint stores for one changed channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelEntry {
    /// The whole value.
    Set(Value),
    /// Writes to fold (through the channel's reducer) onto the value at `prev`.
    Delta {
        /// The previous blob of this channel, `None` to start from the channel's default.
        prev: Option<CheckpointId>,
        /// The writes, in application order.
        writes: Vec<Value>,
    },
    /// The channel became empty.
    Clear,
}

/// A write saved against a checkpoint for a task of the step after it (LangGraph's pending
/// writes): results of tasks that succeeded while a sibling failed, interrupts, resume values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// The task that made it.
    pub task_id: String,
    /// Position within the task's writes; negative for the special channels.
    pub idx: i64,
    /// The channel (or `__error__`, `__interrupt__`, `__resume__`, `__done__`, …).
    pub channel: String,
    /// The value.
    pub value: Value,
}

/// Special pending-write channels and their fixed indexes (written again, never appended).
pub mod special {
    /// A task's failure.
    pub const ERROR: (&str, i64) = ("__error__", -1);
    /// A task's pending interrupts.
    pub const INTERRUPT: (&str, i64) = ("__interrupt__", -3);
    /// Resume values by interrupt id.
    pub const RESUME: (&str, i64) = ("__resume__", -4);
    /// Marks a task as finished (its other writes follow).
    pub const DONE: (&str, i64) = ("__done__", -5);
    /// The next stream sequence number, after events emitted past the last checkpoint.
    pub const SEQ: (&str, i64) = ("__seq__", -6);
}

/// A checkpoint with where it lives and its pending writes.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointTuple {
    /// The thread.
    pub thread_id: String,
    /// The namespace (`""` for the root graph).
    pub ns: String,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Writes saved for the step after it, ordered by task id then index.
    pub pending_writes: Vec<PendingWrite>,
}

/// Which checkpoints [`Checkpointer::list`] returns (newest first).
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only this namespace (`Some("")` for the root); `None` for every namespace.
    pub ns: Option<String>,
    /// Equality on `source`, `step` and metadata keys, all of which must match.
    pub filter: Map<String, Value>,
    /// Only checkpoints older than this one.
    pub before: Option<CheckpointId>,
    /// At most this many.
    pub limit: Option<usize>,
}

/// What [`Checkpointer::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PruneStats {
    /// Checkpoint records removed.
    pub checkpoints: usize,
    /// Channel blobs removed (those no kept checkpoint still needs).
    pub blobs: usize,
    /// Pending writes removed.
    pub writes: usize,
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The backend failed (I/O, corruption).
    #[error("checkpoint store: {0}")]
    Backend(String),
    /// A stored record could not be decoded.
    #[error("checkpoint store holds an unreadable record at {key}: {reason}")]
    Corrupt {
        /// The key, rendered.
        key: String,
        /// The decoder's message.
        reason: String,
    },
    /// A thread id or namespace the store cannot key.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidKey {
        /// `thread id` or `namespace`.
        what: &'static str,
        /// The offending value.
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// A blob a checkpoint refers to is missing (pruned or never written).
    #[error("channel `{channel}` of thread {thread:?} refers to missing blob {version}")]
    MissingBlob {
        /// The thread.
        thread: String,
        /// The channel.
        channel: String,
        /// The missing version.
        version: CheckpointId,
    },
}

/// Where checkpoints are kept. One conformance suite (the `agentgraph-checkpoint-conformance`
/// crate) runs against every implementation.
#[async_trait]
pub trait Checkpointer: Send + Sync + 'static {
    /// Saves a checkpoint with the blobs of the channels it changed (atomically).
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError>;

    /// Saves writes of `task_id` against checkpoint `id`. Normal channels are numbered in order;
    /// the [`special`] channels keep one value each. Writing the same index again replaces it.
    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError>;

    /// The checkpoint `id`, or the newest one of the namespace when `id` is `None`.
    async fn get(
        &self,
        thread: &str,
        ns: &str,
        id: Option<CheckpointId>,
    ) -> Result<Option<CheckpointTuple>, CheckpointError>;

    /// Checkpoints of a thread, newest first.
    async fn list(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError>;

    /// The blobs needed to rebuild `channel` at `version`, oldest first, each with the id of the
    /// checkpoint that wrote it: a `Set`/`Clear` or the first delta, then the deltas after it.
    async fn channel_entries(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError>;

    /// The one blob checkpoint `id` wrote for `channel` (not the chain before it); `None` when
    /// there is none. The default reads the chain through [`Checkpointer::channel_entries`];
    /// stores that can read one blob directly override it (export and check use it per blob).
    async fn blob(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        id: CheckpointId,
    ) -> Result<Option<ChannelEntry>, CheckpointError> {
        match self.channel_entries(thread, ns, channel, id).await {
            Ok(chain) => Ok(chain
                .into_iter()
                .rev()
                .find(|(at, _)| *at == id)
                .map(|(_, e)| e)),
            Err(CheckpointError::MissingBlob { version, .. }) if version == id => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every thread id, sorted.
    async fn list_threads(&self) -> Result<Vec<String>, CheckpointError>;

    /// Removes a thread: checkpoints, blobs, writes of every namespace. No-op when missing.
    async fn delete_thread(&self, thread: &str) -> Result<(), CheckpointError>;

    /// Keeps the newest `keep` checkpoints per namespace of `thread` (or of every thread) and the
    /// blobs they need; removes the rest.
    async fn prune(&self, thread: Option<&str>, keep: usize)
        -> Result<PruneStats, CheckpointError>;

    /// Makes everything written so far durable.
    async fn flush(&self) -> Result<(), CheckpointError>;
}
