//! In-process store: a `BTreeMap` behind a mutex. Same layout and behaviour as sled, not durable.

use super::kv::{KvCheckpointer, KvStore};
use super::CheckpointError;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Mutex;

/// An in-memory ordered store.
#[derive(Default)]
pub struct MemoryStore {
    map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl MemoryStore {
    /// Total bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.iter().map(|(k, v)| k.len() + v.len()).sum()
    }
}

/// The in-memory checkpointer.
pub type MemoryCheckpointer = KvCheckpointer<MemoryStore>;

impl KvCheckpointer<MemoryStore> {
    /// An empty in-memory checkpointer.
    pub fn new() -> Self {
        KvCheckpointer::with_store(MemoryStore::default())
    }
}

impl Default for KvCheckpointer<MemoryStore> {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl KvStore for MemoryStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError> {
        Ok(self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CheckpointError> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let range = map.range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        if reverse {
            for (k, v) in range.rev() {
                if !visit(k, v) {
                    break;
                }
            }
        } else {
            for (k, v) in range {
                if !visit(k, v) {
                    break;
                }
            }
        }
        Ok(())
    }

    fn apply(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        for k in deletes {
            map.remove(&k);
        }
        map.extend(puts);
        Ok(())
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        Ok(())
    }
}
