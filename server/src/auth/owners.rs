//! Who owns each thread: the namespace of the principal that created it through the server,
//! kept in the event database (keys `o thread` of its `server` tree, behind its write-ahead log)
//! so it survives restarts, or in memory when the events are.

use crate::error::ServerError;
use crate::events::EventStore;
use agentgraph_runtime::checkpoint::WalTree;
use agentgraph_runtime::{Checkpointer, ListQuery};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Thread → owner namespace.
pub(crate) struct Owners {
    tree: Option<Arc<WalTree>>,
    /// In memory: the owners. On disk: held while a claim reads and writes, so two claims of
    /// one thread cannot both win.
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

impl Owners {
    /// Owners beside the events (on disk when the events are).
    pub(crate) fn open(events: &EventStore) -> Result<Self, ServerError> {
        Ok(Owners {
            tree: events.tree().cloned(),
            memory: Mutex::new(HashMap::new()),
        })
    }

    /// The namespace owning `thread`, if any.
    pub(crate) fn owner_of(&self, thread: &str) -> Result<Option<String>, ServerError> {
        match &self.tree {
            Some(t) => Ok(t
                .get(&owner_key(thread))
                .map_err(storage)?
                .map(|v| String::from_utf8_lossy(&v).into_owned())),
            None => Ok(self
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
        match &self.tree {
            Some(t) => {
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
            None => {
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
