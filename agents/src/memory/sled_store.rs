//! Persistent memory on sled: one ordered key range per session in a dedicated tree.
//!
//! A key is the session id's length (4 bytes, big-endian), the id itself, then a sequence
//! number from [`sled::Db::generate_id`] (8 bytes, big-endian), so a session's messages form
//! one prefix range in append order and no session id can be a prefix of another's range.

use super::{ChatMemory, MemoryError};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The name of the sled tree holding the messages.
const TREE: &str = "chat_memory";

/// Messages persisted in sled, per session id; survives reopening the database.
#[derive(Debug, Clone)]
pub struct SledMemory {
    db: sled::Db,
    tree: sled::Tree,
    /// Keeps the process-wide handle of a database opened by [`SledMemory::open`] alive.
    _shared: Option<Arc<sled::Db>>,
}

/// The databases [`SledMemory::open`] has open in this process, by canonical path. sled
/// locks its folder, so a second `open` of the same folder (a graph recompiled by live reload,
/// two graphs sharing a memory) must reuse the open database instead of failing on the lock.
fn open_dbs() -> &'static Mutex<HashMap<PathBuf, Weak<sled::Db>>> {
    static DBS: OnceLock<Mutex<HashMap<PathBuf, Weak<sled::Db>>>> = OnceLock::new();
    DBS.get_or_init(Default::default)
}

fn backend(e: sled::Error) -> MemoryError {
    MemoryError::Backend(e.to_string())
}

fn prefix(session: &str) -> Result<Vec<u8>, MemoryError> {
    let len = u32::try_from(session.len())
        .map_err(|_| MemoryError::Backend("session id longer than 4 GiB".into()))?;
    let mut key = Vec::with_capacity(4 + session.len() + 8);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(session.as_bytes());
    Ok(key)
}

impl SledMemory {
    /// Opens (or creates) a sled database in the folder `path`. Within one process, every
    /// `open` of the same folder shares one database (sled locks the folder against other
    /// processes); it closes when the last memory using it is dropped.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        let failed = |e: &dyn std::fmt::Display| {
            MemoryError::Backend(format!("opening {}: {e}", path.display()))
        };
        std::fs::create_dir_all(path).map_err(|e| failed(&e))?;
        let key = path.canonicalize().map_err(|e| failed(&e))?;
        let mut dbs = open_dbs().lock().unwrap_or_else(|e| e.into_inner());
        dbs.retain(|_, weak| weak.strong_count() > 0);
        let shared = match dbs.get(&key).and_then(Weak::upgrade) {
            Some(db) => db,
            None => {
                let db = sled::Config::new()
                    .path(&key)
                    .mode(sled::Mode::LowSpace)
                    .open()
                    .map_err(|e| failed(&e))?;
                let db = Arc::new(db);
                dbs.insert(key, Arc::downgrade(&db));
                db
            }
        };
        drop(dbs);
        let mut memory = Self::from_db((*shared).clone())?;
        memory._shared = Some(shared);
        Ok(memory)
    }

    /// Uses an already open database (for example one shared with a checkpointer); the
    /// messages live in their own tree.
    pub fn from_db(db: sled::Db) -> Result<Self, MemoryError> {
        let tree = db.open_tree(TREE).map_err(backend)?;
        Ok(Self {
            db,
            tree,
            _shared: None,
        })
    }

    /// The underlying database.
    pub fn db(&self) -> &sled::Db {
        &self.db
    }
}

#[async_trait]
impl ChatMemory for SledMemory {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        let mut out = Vec::new();
        for item in self.tree.scan_prefix(prefix(session)?) {
            let (_, v) = item.map_err(backend)?;
            out.push(serde_json::from_slice(&v)?);
        }
        Ok(out)
    }

    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        if messages.is_empty() {
            return Ok(());
        }
        let base = prefix(session)?;
        let mut batch = sled::Batch::default();
        for m in messages {
            // Ids from `generate_id` increase monotonically, across restarts too.
            let seq = self.db.generate_id().map_err(backend)?;
            let mut key = base.clone();
            key.extend_from_slice(&seq.to_be_bytes());
            batch.insert(key, serde_json::to_vec(m)?);
        }
        self.tree.apply_batch(batch).map_err(backend)?;
        flush(&self.tree).await?;
        Ok(())
    }

    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        let mut batch = sled::Batch::default();
        for item in self.tree.scan_prefix(prefix(session)?) {
            let (k, _) = item.map_err(backend)?;
            batch.remove(k);
        }
        self.tree.apply_batch(batch).map_err(backend)?;
        flush(&self.tree).await?;
        Ok(())
    }
}

/// Flushes `tree` on the blocking pool (sled 0.34's `flush_async` can deadlock when called
/// concurrently, a known sled bug).
async fn flush(tree: &sled::Tree) -> Result<(), MemoryError> {
    let tree = tree.clone();
    match tokio::task::spawn_blocking(move || tree.flush()).await {
        Ok(r) => r.map(|_| ()).map_err(backend),
        Err(e) => Err(MemoryError::Backend(format!("sled flush task failed: {e}"))),
    }
}
