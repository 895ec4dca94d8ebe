//! Long-term memory shared across threads: JSON items under namespaces (LangGraph's
//! `BaseStore`).
//!
//! A [`Store`] holds items addressed by a namespace (a path such as `["users", "u1"]`) and a
//! key. Items may expire ([`Store::put`] with a TTL: an expired item is invisible at once and
//! removed by [`Store::sweep`]); [`Store::search`] lists the items under a namespace prefix,
//! filtered by equality on top-level value keys, and — when the store was given an
//! [`Embedder`] — ranks them by cosine similarity to a query.
//!
//! Every backend is an [`ItemStore`] over an [`ItemBackend`] (memory, sled; Postgres in
//! `agentgraph-postgres`), so the semantics are written once. A graph gets a store with
//! [`crate::CompiledGraph::with_store`]; its tasks reach it through
//! [`crate::TaskContext::store`], and its subgraphs share it.

mod embed;
mod items;
mod keys;
mod memory;
mod sled_items;

pub use embed::{cosine, Embedder, IndexConfig};
pub use items::{system_clock, Clock, ItemBackend, ItemStore, Record};
pub use keys::{decode_key, encode_key, encode_prefix, validate_namespace};
pub use memory::{InMemoryStore, MemoryItems};
pub use sled_items::{SledItemStore, SledItems, DEFAULT_TREE};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

/// A stored item as readers see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Its namespace, outermost first.
    pub namespace: Vec<String>,
    /// Its key within the namespace.
    pub key: String,
    /// The value (any JSON).
    pub value: Value,
    /// When it was first put, in milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When it was last put, in milliseconds since the Unix epoch.
    pub updated_at: u64,
}

/// An item found by [`Store::search`], with its similarity to the query (when there was one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Cosine similarity to the query, `None` without a query.
    pub score: Option<f32>,
}

/// What [`Store::search`] looks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchQuery {
    /// Items whose namespace starts with this path (empty: every item).
    pub prefix: Vec<String>,
    /// Text ranked by similarity (needs an embedder; see [`StoreError::NoEmbedder`]).
    pub query: Option<String>,
    /// Top-level keys of the value that must equal these values.
    pub filter: Map<String, Value>,
    /// At most this many items (0: no limit).
    pub limit: usize,
    /// Skips this many items first.
    pub offset: usize,
}

impl SearchQuery {
    /// Every item under `prefix`, in namespace then key order.
    pub fn prefix<S: AsRef<str>>(prefix: &[S]) -> Self {
        SearchQuery {
            prefix: prefix.iter().map(|s| s.as_ref().to_string()).collect(),
            ..SearchQuery::default()
        }
    }

    /// Ranks by similarity to `text`.
    pub fn query(mut self, text: impl Into<String>) -> Self {
        self.query = Some(text.into());
        self
    }

    /// Keeps items whose value has `key` equal to `value`.
    pub fn filter(mut self, key: impl Into<String>, value: Value) -> Self {
        self.filter.insert(key.into(), value);
        self
    }

    /// At most `limit` items.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips `offset` items.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// What [`Store::list_namespaces`] lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespaceQuery {
    /// Namespaces starting with this path (empty: all).
    pub prefix: Vec<String>,
    /// Namespaces cut to this many elements (distinct after the cut).
    pub max_depth: Option<usize>,
    /// At most this many (0: no limit).
    pub limit: usize,
    /// Skips this many first.
    pub offset: usize,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The backend failed (I/O, connection, corruption).
    #[error("store: {0}")]
    Backend(String),
    /// A namespace the store cannot hold.
    #[error("invalid store namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The namespace given.
        namespace: Vec<String>,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A search with a query on a store that has no embedder.
    #[error(
        "search with a query needs an embedder: this store has none (give it one with \
         `with_index`, or search without a query)"
    )]
    NoEmbedder,
    /// The embedder failed.
    #[error("embedding failed: {0}")]
    Embed(String),
    /// A stored record could not be read back.
    #[error("store holds an unreadable item at {key}: {reason}")]
    Corrupt {
        /// The item's address, rendered.
        key: String,
        /// The decoder's message.
        reason: String,
    },
}

/// Long-term memory shared across threads.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Puts `value` at `namespace`/`key` (replacing what was there; `created_at` is kept).
    /// With a `ttl`, the item expires that long after this put. Durable when it returns.
    /// Concurrent puts of one key: the last one wins.
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError>;

    /// Puts `value` at `namespace`/`key` only if no live item is there, atomically (of two
    /// concurrent calls, one writes and the other sees its item, also across processes sharing
    /// a PostgreSQL store). Returns the item that was there (nothing written), or `None` when
    /// `value` was written. An expired item counts as absent. Durable when it returns.
    async fn put_if_absent(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        ttl: Option<Duration>,
    ) -> Result<Option<Item>, StoreError>;

    /// The item at `namespace`/`key`, if present and not expired.
    async fn get(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError>;

    /// Deletes the item; `true` if there was one.
    async fn delete(&self, namespace: &[String], key: &str) -> Result<bool, StoreError>;

    /// Items under a namespace prefix: filtered, then ranked by the query (best first) or in
    /// namespace then key order, then `offset` skipped and `limit` kept.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, StoreError>;

    /// The distinct namespaces holding live items, sorted.
    async fn list_namespaces(&self, query: &NamespaceQuery)
        -> Result<Vec<Vec<String>>, StoreError>;

    /// Removes expired items; returns how many.
    async fn sweep(&self) -> Result<usize, StoreError>;
}

/// A namespace from string slices: `ns(&["users", "u1"])`.
pub fn ns(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}
