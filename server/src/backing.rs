//! What every graph the server compiles is given: the checkpointer, and — when the storage has
//! them — the long-term store its nodes and tools reach (`TaskContext::store`) and the cache of
//! its nodes with a cache policy.

use agentgraph_runtime::cache::{NodeCache, StoreCache};
use agentgraph_runtime::checkpoint::Checkpointer;
use agentgraph_runtime::store::{SledItemStore, Store, StoreError};
use agentgraph_runtime::{CompiledGraph, SledCheckpointer};
use std::sync::Arc;

/// The sled tree of the long-term store, beside the checkpoints.
pub const STORE_TREE: &str = "store";
/// The sled tree of the node cache, beside the checkpoints.
pub const CACHE_TREE: &str = "node_cache";

/// The storage a compiled graph is attached to.
#[derive(Clone)]
pub struct GraphStorage {
    /// Where checkpoints go.
    pub checkpointer: Arc<dyn Checkpointer>,
    /// The long-term store, if any.
    pub store: Option<Arc<dyn Store>>,
    /// The node cache, if any.
    pub cache: Option<Arc<dyn NodeCache>>,
}

impl GraphStorage {
    /// Checkpoints only.
    pub fn checkpoints(checkpointer: Arc<dyn Checkpointer>) -> Self {
        GraphStorage {
            checkpointer,
            store: None,
            cache: None,
        }
    }

    /// Checkpoints in a sled database, with the store and the node cache in trees of the same
    /// database ([`STORE_TREE`], [`CACHE_TREE`]).
    pub fn sled(cp: SledCheckpointer) -> Result<Self, StoreError> {
        let db = cp.store().db().clone();
        let store = SledItemStore::open_tree(&db, STORE_TREE)?;
        let cache = SledItemStore::open_tree(&db, CACHE_TREE)?;
        Ok(GraphStorage {
            checkpointer: Arc::new(cp),
            store: Some(Arc::new(store)),
            cache: Some(Arc::new(StoreCache::new(Arc::new(cache)))),
        })
    }

    /// `graph` with this storage.
    pub fn attach(&self, graph: CompiledGraph) -> CompiledGraph {
        let mut g = graph.with_checkpointer(self.checkpointer.clone());
        if let Some(s) = &self.store {
            g = g.with_store(s.clone());
        }
        if let Some(c) = &self.cache {
            g = g.with_cache(c.clone());
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_runtime::store::ns;
    use serde_json::json;

    /// The store lives in the checkpointer's database: what it wrote is there when the
    /// database is opened again, and the cache's tree is apart from it.
    #[tokio::test]
    async fn sled_storage_keeps_the_store_beside_the_checkpoints() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let cp = SledCheckpointer::open(dir.path()).expect("open");
            let storage = GraphStorage::sled(cp).expect("trees");
            let store = storage.store.expect("a store");
            store
                .put(&ns(&["users", "u1"]), "tz", json!("UTC"), None)
                .await
                .expect("put");
        }
        let cp = SledCheckpointer::open(dir.path()).expect("reopen");
        let db = cp.store().db().clone();
        let store = SledItemStore::open_tree(&db, STORE_TREE).expect("tree");
        let item = store
            .get(&ns(&["users", "u1"]), "tz")
            .await
            .expect("get")
            .expect("kept across reopening");
        assert_eq!(item.value, json!("UTC"));
        let cache = SledItemStore::open_tree(&db, CACHE_TREE).expect("tree");
        assert_eq!(
            cache.get(&ns(&["users", "u1"]), "tz").await.expect("get"),
            None
        );
    }
}
