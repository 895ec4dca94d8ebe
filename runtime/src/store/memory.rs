//! The in-process backend: a `BTreeMap` behind a mutex, ordered like the durable ones.

use super::items::{ItemBackend, ItemStore, Record};
use super::keys::{encode_key, encode_prefix};
use super::StoreError;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Records in memory, by encoded key.
#[derive(Default)]
pub struct MemoryItems {
    map: Mutex<BTreeMap<Vec<u8>, Record>>,
}

/// The in-memory store.
pub type InMemoryStore = ItemStore<MemoryItems>;

impl ItemStore<MemoryItems> {
    /// An empty in-memory store.
    pub fn new() -> Self {
        ItemStore::with_backend(MemoryItems::default())
    }
}

impl Default for ItemStore<MemoryItems> {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryItems {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Vec<u8>, Record>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl ItemBackend for MemoryItems {
    async fn write(&self, record: Record) -> Result<(), StoreError> {
        let k = encode_key(&record.namespace, &record.key);
        self.lock().insert(k, record);
        Ok(())
    }

    async fn insert_new(&self, record: Record, now: u64) -> Result<Option<Record>, StoreError> {
        let k = encode_key(&record.namespace, &record.key);
        let mut map = self.lock();
        match map.get(&k) {
            Some(current) if current.live(now) => Ok(Some(current.clone())),
            _ => {
                map.insert(k, record);
                Ok(None)
            }
        }
    }

    async fn read(&self, namespace: &[String], key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.lock().get(&encode_key(namespace, key)).cloned())
    }

    async fn remove(&self, namespace: &[String], key: &str) -> Result<bool, StoreError> {
        Ok(self.lock().remove(&encode_key(namespace, key)).is_some())
    }

    async fn scan(&self, prefix: &[String]) -> Result<Vec<Record>, StoreError> {
        let p = encode_prefix(prefix).into_bytes();
        Ok(self
            .lock()
            .range(p.clone()..)
            .take_while(|(k, _)| k.starts_with(&p))
            .map(|(_, r)| r.clone())
            .collect())
    }

    async fn remove_expired(&self, now: u64) -> Result<usize, StoreError> {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, r| r.live(now));
        Ok(before - map.len())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{ns, InMemoryStore, SearchQuery, Store};
    use serde_json::json;
    use std::sync::Arc;

    /// Puts from many tasks at once all land (one lock, no lost update between keys).
    #[tokio::test]
    async fn concurrent_puts_all_land() {
        let store = Arc::new(InMemoryStore::new());
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    store
                        .put(&ns(&["n"]), &format!("{i:02}"), json!(i), None)
                        .await
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("joins").expect("put");
        }
        let found = store
            .search(&SearchQuery::prefix(&["n"]))
            .await
            .expect("search");
        let values: Vec<i64> = found
            .iter()
            .map(|f| f.item.value.as_i64().unwrap_or(-1))
            .collect();
        assert_eq!(values, (0..64).collect::<Vec<i64>>());
    }
}
