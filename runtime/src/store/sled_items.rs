//! The sled backend: one tree (by default `store`, beside the checkpointer's `checkpoints` in
//! the same database), records as JSON. Every write is flushed before it returns (sled itself
//! syncs only every 500 ms), so a put survives a crash.

use super::items::{ItemBackend, ItemStore, Record};
use super::keys::{decode_key, encode_key, encode_prefix};
use super::StoreError;
use async_trait::async_trait;
use std::path::Path;

/// The tree a store opens by default.
pub const DEFAULT_TREE: &str = "store";

/// Records in a sled tree.
pub struct SledItems {
    tree: sled::Tree,
}

/// The sled store.
pub type SledItemStore = ItemStore<SledItems>;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl ItemStore<SledItems> {
    /// A store in tree `tree` of an open database (the checkpointer's, say).
    pub fn open_tree(db: &sled::Db, tree: &str) -> Result<Self, StoreError> {
        Ok(ItemStore::with_backend(SledItems::open_tree(db, tree)?))
    }

    /// A store in its own database in the folder `path` (tree [`DEFAULT_TREE`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Ok(ItemStore::with_backend(SledItems::open(path)?))
    }
}

impl SledItems {
    /// Records in tree `tree` of an open database.
    pub fn open_tree(db: &sled::Db, tree: &str) -> Result<Self, StoreError> {
        let tree = db.open_tree(tree).map_err(backend)?;
        Ok(SledItems { tree })
    }

    /// Records in tree [`DEFAULT_TREE`] of their own database in the folder `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let db = sled::open(path)
            .map_err(|e| StoreError::Backend(format!("opening {}: {e}", path.display())))?;
        Self::open_tree(&db, DEFAULT_TREE)
    }

    fn decode(&self, k: &[u8], v: &[u8]) -> Result<Record, StoreError> {
        serde_json::from_slice(v).map_err(|e| StoreError::Corrupt {
            key: match decode_key(k) {
                Ok((ns, key)) => format!("{}/{key}", ns.join("/")),
                Err(_) => String::from_utf8_lossy(k).into_owned(),
            },
            reason: e.to_string(),
        })
    }

    async fn flush(&self) -> Result<(), StoreError> {
        // A blocking flush on the blocking pool (sled 0.34's `flush_async` can deadlock when
        // called concurrently).
        let tree = self.tree.clone();
        match tokio::task::spawn_blocking(move || tree.flush()).await {
            Ok(r) => r.map(|_| ()).map_err(backend),
            Err(e) => Err(StoreError::Backend(format!("sled flush task failed: {e}"))),
        }
    }
}

#[async_trait]
impl ItemBackend for SledItems {
    async fn write(&self, record: Record) -> Result<(), StoreError> {
        let k = encode_key(&record.namespace, &record.key);
        let v = serde_json::to_vec(&record).map_err(backend)?;
        self.tree.insert(k, v).map_err(backend)?;
        self.flush().await
    }

    async fn insert_new(&self, record: Record, now: u64) -> Result<Option<Record>, StoreError> {
        let k = encode_key(&record.namespace, &record.key);
        let v = serde_json::to_vec(&record).map_err(backend)?;
        // Compare and swap against what was read: a writer in between makes it read again.
        loop {
            let current = self.tree.get(&k).map_err(backend)?;
            if let Some(bytes) = &current {
                let existing = self.decode(&k, bytes)?;
                if existing.live(now) {
                    return Ok(Some(existing));
                }
            }
            match self
                .tree
                .compare_and_swap(&k, current, Some(v.clone()))
                .map_err(backend)?
            {
                Ok(()) => break,
                Err(_) => continue,
            }
        }
        self.flush().await?;
        Ok(None)
    }

    async fn read(&self, namespace: &[String], key: &str) -> Result<Option<Record>, StoreError> {
        let k = encode_key(namespace, key);
        match self.tree.get(&k).map_err(backend)? {
            Some(v) => Ok(Some(self.decode(&k, &v)?)),
            None => Ok(None),
        }
    }

    async fn remove(&self, namespace: &[String], key: &str) -> Result<bool, StoreError> {
        let removed = self
            .tree
            .remove(encode_key(namespace, key))
            .map_err(backend)?
            .is_some();
        if removed {
            self.flush().await?;
        }
        Ok(removed)
    }

    async fn scan(&self, prefix: &[String]) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::new();
        for kv in self.tree.scan_prefix(encode_prefix(prefix)) {
            let (k, v) = kv.map_err(backend)?;
            out.push(self.decode(&k, &v)?);
        }
        Ok(out)
    }

    async fn remove_expired(&self, now: u64) -> Result<usize, StoreError> {
        let mut batch = sled::Batch::default();
        let mut n = 0;
        for kv in self.tree.iter() {
            let (k, v) = kv.map_err(backend)?;
            if !self.decode(&k, &v)?.live(now) {
                batch.remove(k);
                n += 1;
            }
        }
        if n > 0 {
            self.tree.apply_batch(batch).map_err(backend)?;
            self.flush().await?;
        }
        Ok(n)
    }
}
