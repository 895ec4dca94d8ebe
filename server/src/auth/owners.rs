//! Who owns each thread: the namespace of the principal that created it through the server.
//! Kept in the event database (keys `o thread` of its `server` tree, behind its write-ahead log)
//! so it survives restarts, or in memory when the events are — or, when the application gives
//! the server a long-term store ([`crate::ServerConfig::store`], as `serve --postgres` does), in
//! that store under [`OWNERS_NAMESPACE`], so servers sharing it agree on every thread's owner.

use crate::error::ServerError;
use crate::events::EventStore;
use agentgraph_runtime::checkpoint::WalTree;
use agentgraph_runtime::store::Store;
use agentgraph_runtime::{Checkpointer, ListQuery};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The store namespace of thread owners (key: the thread id, value: the owner's namespace).
pub const OWNERS_NAMESPACE: [&str; 2] = ["agentgraph", "thread_owners"];

/// Where the owners are kept.
enum Kept {
    /// The event database's tree.
    Tree(Arc<WalTree>),
    /// A long-term store (shared between servers when the store is).
    Store(Arc<dyn Store>),
    /// This process's memory.
    Memory,
}

/// Thread → owner namespace.
pub(crate) struct Owners {
    kept: Kept,
    /// In memory: the owners. In the tree: held while a claim reads and writes, so two claims
    /// of one thread cannot both win (the store's `put_if_absent` is atomic itself).
    memory: Mutex<HashMap<String, String>>,
}

fn storage(e: impl std::fmt::Display) -> ServerError {
    ServerError::Storage(e.to_string())
}

fn owner_key(thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 1);
    k.push(b'o');
    k.extend_from_slice(thread.as_bytes());
    k
}

fn namespace() -> Vec<String> {
    OWNERS_NAMESPACE.iter().map(|s| s.to_string()).collect()
}

fn owner_in(item: Value) -> String {
    match item {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

impl Owners {
    /// Owners in `store` when given, else beside the events (on disk when the events are).
    pub(crate) fn open(
        events: &EventStore,
        store: Option<Arc<dyn Store>>,
    ) -> Result<Self, ServerError> {
        let kept = match (store, events.tree()) {
            (Some(s), _) => Kept::Store(s),
            (None, Some(t)) => Kept::Tree(t.clone()),
            (None, None) => Kept::Memory,
        };
        Ok(Owners {
            kept,
            memory: Mutex::new(HashMap::new()),
        })
    }

    /// The namespace owning `thread`, if any.
    pub(crate) async fn owner_of(&self, thread: &str) -> Result<Option<String>, ServerError> {
        match &self.kept {
            Kept::Tree(t) => Ok(t
                .get(&owner_key(thread))
                .map_err(storage)?
                .map(|v| String::from_utf8_lossy(&v).into_owned())),
            Kept::Store(s) => Ok(s
                .get(&namespace(), thread)
                .await
                .map_err(storage)?
                .map(|item| owner_in(item.value))),
            Kept::Memory => Ok(self
                .memory
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(thread)
                .cloned()),
        }
    }

    /// Makes `owner` the owner of `thread` unless the thread has one already; returns whether
    /// `owner` owns it now. Durable before it returns.
    pub(crate) async fn claim(&self, thread: &str, owner: &str) -> Result<bool, ServerError> {
        match &self.kept {
            Kept::Tree(t) => {
                let claimed = {
                    let _one_claim_at_a_time =
                        self.memory.lock().unwrap_or_else(|p| p.into_inner());
                    let key = owner_key(thread);
                    match t.get(&key).map_err(storage)? {
                        Some(current) => return Ok(current == owner.as_bytes()),
                        None => {
                            t.apply(vec![(key, owner.as_bytes().to_vec())], Vec::new())
                                .map_err(storage)?;
                            true
                        }
                    }
                };
                t.flush().await.map_err(storage)?;
                Ok(claimed)
            }
            Kept::Store(s) => {
                let there = s
                    .put_if_absent(&namespace(), thread, Value::String(owner.to_string()), None)
                    .await
                    .map_err(storage)?;
                Ok(there.is_none_or(|item| owner_in(item.value) == owner))
            }
            Kept::Memory => {
                let mut m = self.memory.lock().unwrap_or_else(|p| p.into_inner());
                Ok(m.entry(thread.to_string())
                    .or_insert_with(|| owner.to_string())
                    == owner)
            }
        }
    }
}

/// Whether `thread` holds anything already (events, a recorded graph, or checkpoints, such as
/// those `agentgraph run` wrote into the same database): such a thread without an owner was
/// made before authentication was on, and only `admin` may use it.
pub(crate) async fn thread_exists(
    events: &EventStore,
    checkpointer: &dyn Checkpointer,
    thread: &str,
) -> Result<bool, ServerError> {
    if events.graph_of(thread)?.is_some() || events.next_seq(thread)? > 1 {
        return Ok(true);
    }
    let query = ListQuery {
        limit: Some(1),
        ..ListQuery::default()
    };
    let found = checkpointer
        .list(thread, &query)
        .await
        .map_err(|e| ServerError::Storage(e.to_string()))?;
    Ok(!found.is_empty())
}
