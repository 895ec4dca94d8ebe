//! The per-node result cache (LangGraph's `CachePolicy` with `compile(cache=…)`): a node with a
//! [`CachePolicy`] whose input was seen before (and has not expired) is not run; its earlier
//! update is applied instead and streamed with `{"__metadata__": {"cached": true}}`.
//!
//! The key is `hash(graph name, node name, input)`, where the input is the task's send payload
//! or, for a normal task, the whole state it sees (the runtime does not know which channels a
//! node reads), or what the policy's key function makes of that input. Only updates of tasks
//! that succeeded are kept: interrupts, failures and caught failures are not.
//!
//! A [`NodeCache`] is any cache; [`StoreCache`] keeps entries in a [`Store`] under the
//! reserved namespace `["__node_cache__", "g:<graph>", "<node>"]`, so every store backend
//! (memory, sled, Postgres) is a cache backend too.

use crate::ids::stable_id;
use crate::store::{InMemoryStore, SearchQuery, Store, StoreError};
use crate::update::{Goto, Send as Push, Update};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Makes a cache key from a task's input (instead of the whole input).
pub type CacheKeyFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// How a node's results are cached.
#[derive(Clone, Default)]
pub struct CachePolicy {
    /// How long an entry is used (`None`: until the cache is cleared).
    pub ttl: Option<Duration>,
    /// What of the input makes the key (`None`: all of it).
    pub key: Option<CacheKeyFn>,
}

impl CachePolicy {
    /// Entries kept for `ttl` (`None`: for ever).
    pub fn new(ttl: Option<Duration>) -> Self {
        CachePolicy { ttl, key: None }
    }

    /// Keys entries by `f(input)` instead of the whole input.
    pub fn key_fn(mut self, f: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        self.key = Some(Arc::new(f));
        self
    }

    /// The key of `node` of `graph` for this task input.
    pub fn key_of(&self, graph: &str, node: &str, input: &Value) -> String {
        let what = match &self.key {
            Some(f) => f(input),
            None => input.to_string(),
        };
        stable_id(&[graph, node, &what])
    }
}

impl std::fmt::Debug for CachePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .field("key", &self.key.as_ref().map(|_| "fn"))
            .finish()
    }
}

/// Where cached node updates are kept.
#[async_trait]
pub trait NodeCache: Send + Sync + 'static {
    /// The update cached for `key` of `node` in `graph`, if any and not expired.
    async fn get(&self, graph: &str, node: &str, key: &str) -> Result<Option<Update>, StoreError>;
    /// Caches `update` for `key` for `ttl` (`None`: for ever).
    async fn set(
        &self,
        graph: &str,
        node: &str,
        key: &str,
        update: &Update,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError>;
    /// Forgets the entries of `node` of `graph` (every node's with `None`); returns how many.
    async fn clear(&self, graph: &str, node: Option<&str>) -> Result<usize, StoreError>;
}

/// The first element of every cache namespace.
pub const CACHE_NAMESPACE: &str = "__node_cache__";

/// A [`NodeCache`] over a [`Store`].
#[derive(Clone)]
pub struct StoreCache {
    store: Arc<dyn Store>,
}

impl StoreCache {
    /// Entries kept in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        StoreCache { store }
    }

    /// Entries kept in memory.
    pub fn in_memory() -> Self {
        StoreCache::new(Arc::new(InMemoryStore::new()))
    }
}

fn namespace(graph: &str, node: Option<&str>) -> Vec<String> {
    let mut ns = vec![CACHE_NAMESPACE.to_string(), format!("g:{graph}")];
    if let Some(n) = node {
        ns.push(n.to_string());
    }
    ns
}

fn encode(update: &Update) -> Value {
    let goto: Vec<Value> = update
        .goto
        .iter()
        .map(|g| match g {
            Goto::Node(n) => json!({ "node": n }),
            Goto::Send(s) => json!({ "send": s }),
            Goto::End => json!("end"),
        })
        .collect();
    json!({ "writes": update.writes, "goto": goto, "to_parent": update.to_parent })
}

fn decode(v: Value) -> Result<Update, String> {
    let writes: Vec<(String, Value)> =
        serde_json::from_value(v.get("writes").cloned().unwrap_or(json!([])))
            .map_err(|e| format!("writes: {e}"))?;
    let mut goto = Vec::new();
    for g in v
        .get("goto")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        goto.push(if let Some(n) = g.get("node").and_then(Value::as_str) {
            Goto::Node(n.to_string())
        } else if let Some(s) = g.get("send") {
            Goto::Send(serde_json::from_value::<Push>(s.clone()).map_err(|e| e.to_string())?)
        } else {
            Goto::End
        });
    }
    Ok(Update {
        writes,
        goto,
        to_parent: v.get("to_parent").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[async_trait]
impl NodeCache for StoreCache {
    async fn get(&self, graph: &str, node: &str, key: &str) -> Result<Option<Update>, StoreError> {
        let ns = namespace(graph, Some(node));
        match self.store.get(&ns, key).await? {
            Some(item) => decode(item.value)
                .map(Some)
                .map_err(|reason| StoreError::Corrupt {
                    key: format!("{}/{key}", ns.join("/")),
                    reason,
                }),
            None => Ok(None),
        }
    }

    async fn set(
        &self,
        graph: &str,
        node: &str,
        key: &str,
        update: &Update,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        let ns = namespace(graph, Some(node));
        self.store.put(&ns, key, encode(update), ttl).await
    }

    async fn clear(&self, graph: &str, node: Option<&str>) -> Result<usize, StoreError> {
        let found = self
            .store
            .search(&SearchQuery::prefix(&namespace(graph, node)))
            .await?;
        let mut n = 0;
        for f in found {
            if self.store.delete(&f.item.namespace, &f.item.key).await? {
                n += 1;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_round_trip() {
        let u = Update::new()
            .set("a", json!(1))
            .goto("next")
            .send("map", json!({"x": 2}))
            .goto(crate::END);
        assert_eq!(decode(encode(&u)), Ok(u));
    }

    #[test]
    fn keys_differ_by_graph_node_and_input() {
        let p = CachePolicy::new(None);
        let k = p.key_of("g", "n", &json!({"x": 1}));
        assert_eq!(k, p.key_of("g", "n", &json!({"x": 1})));
        assert_ne!(k, p.key_of("g", "n", &json!({"x": 2})));
        assert_ne!(k, p.key_of("g", "m", &json!({"x": 1})));
        assert_ne!(k, p.key_of("h", "n", &json!({"x": 1})));
        let by_x = CachePolicy::new(None).key_fn(|v| v["x"].to_string());
        assert_eq!(
            by_x.key_of("g", "n", &json!({"x": 1, "y": 1})),
            by_x.key_of("g", "n", &json!({"x": 1, "y": 2}))
        );
    }
}
