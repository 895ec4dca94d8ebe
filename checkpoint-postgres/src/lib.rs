//! A PostgreSQL checkpointer for agentgraph.
//!
//! It stores exactly the key-value layout of the memory and sled checkpointers (see the runtime's
//! `checkpoint::kv`): one table `(key bytea primary key, value bytea)` holding checkpoint
//! records, per-channel blobs keyed by (channel, checkpoint id), deltas, pending writes and thread
//! markers. The checkpoint logic (puts, delta chains, listing, pruning) is the runtime's own
//! [`KvCheckpointer`]; this crate only supplies the ordered store ([`PostgresStore`]), so every
//! backend behaves the same and passes the same conformance suite.
//!
//! Several processes can share one database: each batch of writes (all the blobs, the record and
//! the thread marker of one checkpoint; one task's pending writes; one prune) is a single SQL
//! statement, hence one transaction, committed with `synchronous_commit = on` before `put`
//! returns. A run started by one process can be resumed by another.
//!
//! ```no_run
//! use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
//! # async fn demo() -> Result<(), agentgraph_postgres::PostgresError> {
//! let cp = PostgresCheckpointer::connect_with(
//!     "postgres://agentgraph:secret@localhost/agentgraph",
//!     PostgresOptions::default().table_prefix("myapp_"),
//! )
//! .await?;
//! # let _ = cp; Ok(()) }
//! ```
//!
//! Connections are plain TCP or Unix sockets (no TLS yet).
//!
//! [`PostgresCheckpointer::thread_locks`] gives the processes a shared "one active run per
//! thread" rule ([`PostgresThreadLocks`], on advisory locks), and
//! [`PostgresCheckpointer::run_leases`] records runs so that another process continues those
//! of a process that died ([`PostgresRunLeases`]).
//!
//! The crate's parts: [`PostgresStore`] (the table, connection and queries), [`PostgresOptions`],
//! [`PostgresError`], [`PostgresThreadLocks`] and [`PostgresRunLeases`]; beside the checkpoints,
//! the long-term store's table ([`PostgresItems`], [`connect_store`]: the runtime's `Store` on
//! PostgreSQL, which also backs the node cache).

use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, KvCheckpointer,
    ListQuery, PruneStats,
};
use agentgraph_runtime::CheckpointId;
use async_trait::async_trait;
use serde_json::Value;

mod batch;
mod error;
mod item_store;
mod options;
mod runs;
mod store;
mod thread_locks;

pub use error::PostgresError;
use error::{connection_lost, describe};
pub use item_store::{connect_store, PostgresItemStore, PostgresItems};
pub use options::PostgresOptions;
pub use runs::PostgresRunLeases;
pub use store::PostgresStore;
pub use thread_locks::PostgresThreadLocks;

/// The PostgreSQL checkpointer: the runtime's key-value checkpointer over a [`PostgresStore`].
pub struct PostgresCheckpointer {
    inner: KvCheckpointer<PostgresStore>,
}

impl PostgresCheckpointer {
    /// Connects with the default options (table `agentgraph_checkpoints` on the connection's
    /// `search_path`), creating the table if it is missing. `url` is a libpq-style connection
    /// string, either `postgres://user:password@host:port/db` or `host=/run/postgresql user=me`.
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects with explicit options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, PostgresError> {
        let store = PostgresStore::open(url, &options).await?;
        Ok(PostgresCheckpointer {
            inner: KvCheckpointer::with_store(store),
        })
    }

    /// The underlying store.
    pub fn store(&self) -> &PostgresStore {
        self.inner.store()
    }

    /// Thread leases shared by every process using this database and table (one extra
    /// connection): give them to a server so that a thread runs on one process at a time.
    pub async fn thread_locks(&self) -> Result<PostgresThreadLocks, PostgresError> {
        let store = self.inner.store();
        PostgresThreadLocks::open(store.config.clone(), store.table.clone()).await
    }

    /// Run leases (table `{prefix}runs` next to the checkpoints, created if missing; one
    /// extra connection) under the name `owner`: give them to a server so that its runs are
    /// picked up by another one when it dies ([`PostgresRunLeases`]).
    pub async fn run_leases(&self, owner: &str) -> Result<PostgresRunLeases, PostgresError> {
        let store = self.inner.store();
        let table = match store.table.strip_suffix("checkpoints\"") {
            Some(head) => format!("{head}runs\""),
            None => format!("{}_runs", store.table),
        };
        PostgresRunLeases::open(store.config.clone(), table, owner.to_string()).await
    }
}

#[async_trait]
impl Checkpointer for PostgresCheckpointer {
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError> {
        self.inner.put(thread, ns, checkpoint, blobs).await
    }

    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError> {
        self.inner.put_writes(thread, ns, id, task_id, writes).await
    }

    async fn get(
        &self,
        thread: &str,
        ns: &str,
        id: Option<CheckpointId>,
    ) -> Result<Option<CheckpointTuple>, CheckpointError> {
        self.inner.get(thread, ns, id).await
    }

    async fn list(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError> {
        self.inner.list(thread, query).await
    }

    async fn channel_entries(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError> {
        self.inner
            .channel_entries(thread, ns, channel, version)
            .await
    }

    async fn blob(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        id: CheckpointId,
    ) -> Result<Option<ChannelEntry>, CheckpointError> {
        self.inner.blob(thread, ns, channel, id).await
    }

    async fn list_threads(&self) -> Result<Vec<String>, CheckpointError> {
        self.inner.list_threads().await
    }

    async fn delete_thread(&self, thread: &str) -> Result<(), CheckpointError> {
        self.inner.delete_thread(thread).await
    }

    async fn prune(
        &self,
        thread: Option<&str>,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        self.inner.prune(thread, keep).await
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.inner.flush().await
    }
}
