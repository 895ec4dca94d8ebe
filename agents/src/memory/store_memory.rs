//! Conversation memory on the graph's long-term [`Store`]: each message one item under a
//! namespace (`["users", user_id]`, say), so every thread of that user shares the
//! conversation. The store is the graph's own ([`agentgraph_runtime::TaskContext::store`]), and
//! the namespace is computed per task from its state ([`StoreMemorySpec`]).

use super::{ChatMemory, MemoryError, WindowMemory};
use agentgraph_runtime::store::{SearchQuery, Store, StoreError};
use agentgraph_runtime::{CheckpointId, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Messages kept as items of a [`Store`] under one namespace, in append order.
///
/// A session, when not empty, is one more namespace element (`namespace + [session]`); the
/// `llm` node passes none, the namespace already names the conversation. Keys are
/// time-ordered ids, so threads appending to one namespace never overwrite each other.
pub struct StoreMemory {
    store: Arc<dyn Store>,
    namespace: Vec<String>,
}

impl StoreMemory {
    /// Messages under `namespace` of `store`.
    pub fn new(store: Arc<dyn Store>, namespace: Vec<String>) -> Self {
        StoreMemory { store, namespace }
    }

    fn namespace_of(&self, session: &str) -> Vec<String> {
        let mut ns = self.namespace.clone();
        if !session.is_empty() {
            ns.push(session.to_string());
        }
        ns
    }

    /// The items of exactly this namespace (the prefix search also finds deeper ones).
    async fn items(&self, ns: &[String]) -> Result<Vec<(String, Value)>, MemoryError> {
        let found = self
            .store
            .search(&SearchQuery::prefix(ns))
            .await
            .map_err(backend)?;
        Ok(found
            .into_iter()
            .filter(|f| f.item.namespace == ns)
            .map(|f| (f.item.key, f.item.value))
            .collect())
    }
}

fn backend(e: StoreError) -> MemoryError {
    MemoryError::Backend(e.to_string())
}

#[async_trait]
impl ChatMemory for StoreMemory {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        let ns = self.namespace_of(session);
        Ok(self.items(&ns).await?.into_iter().map(|(_, v)| v).collect())
    }

    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        let ns = self.namespace_of(session);
        for m in messages {
            let key = CheckpointId::new().to_string();
            self.store
                .put(&ns, &key, m.clone(), None)
                .await
                .map_err(backend)?;
        }
        Ok(())
    }

    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        let ns = self.namespace_of(session);
        for (key, _) in self.items(&ns).await? {
            self.store.delete(&ns, &key).await.map_err(backend)?;
        }
        Ok(())
    }
}

/// Computes a task's namespace (from its state and send payload).
pub type NamespaceFn = Arc<dyn Fn(&TaskContext) -> Result<Vec<String>, NodeError> + Send + Sync>;

/// An `llm` node's memory on the graph's store: where (per task) and how much to load.
#[derive(Clone)]
pub struct StoreMemorySpec {
    /// The conversation's namespace for a task.
    pub namespace: NamespaceFn,
    /// Load only the last N messages (see [`WindowMemory`]).
    pub window: Option<usize>,
}

impl StoreMemorySpec {
    /// The memory of this task: the graph's store under the task's namespace. Fails when the
    /// graph has no store.
    pub fn open(&self, ctx: &TaskContext) -> Result<Arc<dyn ChatMemory>, NodeError> {
        let store = ctx.store().ok_or_else(|| {
            NodeError::fatal(
                "this node's memory is on the graph's store, but the graph has none (give it \
                 one: `CompiledGraph::with_store`; `agentgraph run` and `serve` always do)",
            )
            .with_code("NO_STORE")
        })?;
        let namespace = (self.namespace)(ctx)?;
        agentgraph_runtime::store::validate_namespace(&namespace)
            .map_err(|e| NodeError::fatal(format!("memory namespace: {e}")).with_code("MEMORY"))?;
        let memory = StoreMemory::new(store.clone(), namespace);
        Ok(match self.window {
            Some(n) => Arc::new(WindowMemory::new(memory, n)),
            None => Arc::new(memory),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_runtime::store::Store;
    use agentgraph_runtime::store::{ns, InMemoryStore};
    use serde_json::json;

    #[tokio::test]
    async fn messages_keep_their_order_and_namespaces_do_not_mix() {
        let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
        let u1 = StoreMemory::new(store.clone(), ns(&["users", "u1"]));
        let deeper = StoreMemory::new(store.clone(), ns(&["users", "u1", "x"]));
        let msgs: Vec<Value> = (0..12)
            .map(|i| json!({"type": "human", "content": i}))
            .collect();
        u1.append("", &msgs[..5]).await.expect("append");
        u1.append("", &msgs[5..]).await.expect("append");
        deeper
            .append("", &[json!({"type": "ai"})])
            .await
            .expect("append");
        assert_eq!(u1.load("").await.expect("load"), msgs);
        assert_eq!(u1.load("s").await.expect("load"), Vec::<Value>::new());
        u1.clear("").await.expect("clear");
        assert!(u1.load("").await.expect("load").is_empty());
        assert_eq!(deeper.load("").await.expect("load").len(), 1);
    }
}
