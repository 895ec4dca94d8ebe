//! [`ItemStore`]: the store's semantics (TTL, filters, ranking, namespaces) written once over
//! an [`ItemBackend`], which only keeps records by key.

use super::embed::{cosine, IndexConfig};
use super::keys::validate_namespace;
use super::{Item, NamespaceQuery, SearchItem, SearchQuery, Store, StoreError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An item as a backend keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its namespace.
    pub namespace: Vec<String>,
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: Value,
    /// First put, ms since the epoch.
    pub created_at: u64,
    /// Last put, ms since the epoch.
    pub updated_at: u64,
    /// When it expires, ms since the epoch (`None`: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Its vector, when the store embeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
}

impl Record {
    /// Not expired at `now`.
    pub fn live(&self, now: u64) -> bool {
        self.expires_at.is_none_or(|t| t > now)
    }

    /// The item readers see.
    pub fn into_item(self) -> Item {
        Item {
            namespace: self.namespace,
            key: self.key,
            value: self.value,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// Where an [`ItemStore`] keeps its records. Namespaces are already validated.
#[async_trait]
pub trait ItemBackend: Send + Sync + 'static {
    /// Inserts or replaces the record at its namespace and key; durable when it returns.
    async fn write(&self, record: Record) -> Result<(), StoreError>;
    /// Inserts the record unless a record live at `now` is at its namespace and key; returns
    /// that record (nothing written) or `None` (written). Atomic against concurrent writers of
    /// the same backend; durable when it returns.
    async fn insert_new(&self, record: Record, now: u64) -> Result<Option<Record>, StoreError>;
    /// The record at `namespace`/`key`, expired or not.
    async fn read(&self, namespace: &[String], key: &str) -> Result<Option<Record>, StoreError>;
    /// Removes the record; `true` if there was one.
    async fn remove(&self, namespace: &[String], key: &str) -> Result<bool, StoreError>;
    /// Every record whose namespace starts with `prefix`, in namespace then key order (see
    /// [`super::encode_key`]), expired ones included.
    async fn scan(&self, prefix: &[String]) -> Result<Vec<Record>, StoreError>;
    /// Removes the records expired at `now`; returns how many.
    async fn remove_expired(&self, now: u64) -> Result<usize, StoreError>;
}

/// The time in ms since the epoch (replaceable in tests).
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    })
}

/// A [`Store`] over a backend, with an optional embedder.
pub struct ItemStore<B> {
    backend: B,
    index: Option<IndexConfig>,
    clock: Clock,
}

impl<B: ItemBackend> ItemStore<B> {
    /// A store over `backend`, without an embedder, on the system clock.
    pub fn with_backend(backend: B) -> Self {
        ItemStore {
            backend,
            index: None,
            clock: system_clock(),
        }
    }

    /// Embeds items as `index` says and allows searches with a query.
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Reads the time from `clock` (tests of expiry).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn now(&self) -> u64 {
        (self.clock)()
    }

    async fn embed_one(&self, index: &IndexConfig, text: String) -> Result<Vec<f32>, StoreError> {
        let mut vectors = index.embedder.embed(&[text]).await?;
        match vectors.pop() {
            Some(v) if vectors.is_empty() => Ok(v),
            _ => Err(StoreError::Embed(
                "the embedder did not return one vector for one text".into(),
            )),
        }
    }
}

fn matches(value: &Value, filter: &serde_json::Map<String, Value>) -> bool {
    filter.iter().all(|(k, want)| value.get(k) == Some(want))
}

fn window<T>(items: Vec<T>, offset: usize, limit: usize) -> Vec<T> {
    let rest = items.into_iter().skip(offset);
    if limit == 0 {
        rest.collect()
    } else {
        rest.take(limit).collect()
    }
}

#[async_trait]
impl<B: ItemBackend> Store for ItemStore<B> {
    async fn put(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        ttl: Option<Duration>,
    ) -> Result<(), StoreError> {
        validate_namespace(namespace)?;
        let now = self.now();
        let embedding = match &self.index {
            Some(index) => match index.text_of(&value) {
                Some(text) => Some(self.embed_one(index, text).await?),
                None => None,
            },
            None => None,
        };
        let created_at = match self.backend.read(namespace, key).await? {
            Some(old) if old.live(now) => old.created_at,
            _ => now,
        };
        let expires_at = ttl.map(|t| now.saturating_add(t.as_millis() as u64));
        self.backend
            .write(Record {
                namespace: namespace.to_vec(),
                key: key.to_string(),
                value,
                created_at,
                updated_at: now,
                expires_at,
                embedding,
            })
            .await
    }

    async fn put_if_absent(
        &self,
        namespace: &[String],
        key: &str,
        value: Value,
        ttl: Option<Duration>,
    ) -> Result<Option<Item>, StoreError> {
        validate_namespace(namespace)?;
        let now = self.now();
        let embedding = match &self.index {
            Some(index) => match index.text_of(&value) {
                Some(text) => Some(self.embed_one(index, text).await?),
                None => None,
            },
            None => None,
        };
        let record = Record {
            namespace: namespace.to_vec(),
            key: key.to_string(),
            value,
            created_at: now,
            updated_at: now,
            expires_at: ttl.map(|t| now.saturating_add(t.as_millis() as u64)),
            embedding,
        };
        Ok(self
            .backend
            .insert_new(record, now)
            .await?
            .map(Record::into_item))
    }

    async fn get(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError> {
        validate_namespace(namespace)?;
        let now = self.now();
        Ok(self
            .backend
            .read(namespace, key)
            .await?
            .filter(|r| r.live(now))
            .map(Record::into_item))
    }

    async fn delete(&self, namespace: &[String], key: &str) -> Result<bool, StoreError> {
        validate_namespace(namespace)?;
        let now = self.now();
        let live = matches!(self.backend.read(namespace, key).await?, Some(r) if r.live(now));
        let removed = self.backend.remove(namespace, key).await?;
        Ok(removed && live)
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<SearchItem>, StoreError> {
        if !q.prefix.is_empty() {
            validate_namespace(&q.prefix)?;
        }
        let target = match (&q.query, &self.index) {
            (Some(text), Some(index)) => Some(self.embed_one(index, text.clone()).await?),
            (Some(_), None) => return Err(StoreError::NoEmbedder),
            (None, _) => None,
        };
        let now = self.now();
        let records = self
            .backend
            .scan(&q.prefix)
            .await?
            .into_iter()
            .filter(|r| r.live(now) && matches(&r.value, &q.filter));
        let found: Vec<SearchItem> = match target {
            Some(target) => {
                let mut scored: Vec<(f32, Record)> = records
                    .filter_map(|r| Some((cosine(r.embedding.as_deref()?, &target), r)))
                    .collect();
                // A stable sort: equal scores keep namespace then key order.
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                scored
                    .into_iter()
                    .map(|(s, r)| SearchItem {
                        item: r.into_item(),
                        score: Some(s),
                    })
                    .collect()
            }
            None => records
                .map(|r| SearchItem {
                    item: r.into_item(),
                    score: None,
                })
                .collect(),
        };
        Ok(window(found, q.offset, q.limit))
    }

    async fn list_namespaces(&self, q: &NamespaceQuery) -> Result<Vec<Vec<String>>, StoreError> {
        if !q.prefix.is_empty() {
            validate_namespace(&q.prefix)?;
        }
        let now = self.now();
        let mut seen = BTreeSet::new();
        for r in self.backend.scan(&q.prefix).await? {
            if r.live(now) {
                let mut ns = r.namespace;
                if let Some(d) = q.max_depth {
                    ns.truncate(d);
                }
                seen.insert(ns);
            }
        }
        Ok(window(seen.into_iter().collect(), q.offset, q.limit))
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        self.backend.remove_expired(self.now()).await
    }
}
