//! The embedded default: sled 0.34. Each checkpoint is one atomic batch; durability comes from
//! explicit flushes (sled itself syncs only every 500 ms), which the engine issues according to
//! the run's durability mode. Flushes go through a [`GroupCommit`], so concurrent runs share
//! them.

use super::group_commit::GroupCommit;
use super::kv::{KvCheckpointer, KvStore};
use super::CheckpointError;
use async_trait::async_trait;
use std::path::{Path, PathBuf};

/// A sled tree used as the ordered store.
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    path: PathBuf,
    commit: GroupCommit,
}

/// The sled checkpointer.
pub type SledCheckpointer = KvCheckpointer<SledStore>;

fn backend(e: sled::Error) -> CheckpointError {
    CheckpointError::Backend(e.to_string())
}

impl KvCheckpointer<SledStore> {
    /// Opens (or creates) a sled store in the folder `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let path = path.as_ref().to_path_buf();
        let db = sled::Config::new()
            .path(&path)
            .mode(sled::Mode::LowSpace)
            .use_compression(true)
            .compression_factor(1)
            .open()
            .map_err(|e| match &e {
                // sled takes an exclusive file lock on the folder; it reports a failure to
                // take it as an `Other` I/O error with this text.
                sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
                    CheckpointError::Backend(format!(
                        "opening {}: the store is in use by another process (sled allows one \
                         process per folder); stop that process, or use another folder",
                        path.display()
                    ))
                }
                _ => CheckpointError::Backend(format!("opening {}: {e}", path.display())),
            })?;
        let tree = db.open_tree("checkpoints").map_err(backend)?;
        // sled's own flush writes its log with `sync_file_range` on Linux, which survives a
        // killed process but neither flushes the disk's write cache nor the file's metadata: a
        // power loss could still lose the checkpoint. An `fdatasync` of the log file after it
        // makes the flush durable on the disk (any descriptor of the file will do). Not
        // `flush_async`: in sled 0.34 concurrent `flush_async` calls can deadlock (a known sled
        // bug, fixed only on its unreleased main branch). The group commit runs the blocking
        // flush on the blocking pool, one at a time, shared by every writer waiting for it.
        let log_path = path.join("db");
        let log = std::fs::File::open(&log_path).map_err(|e| {
            CheckpointError::Backend(format!("opening {}: {e}", log_path.display()))
        })?;
        let flushed = tree.clone();
        let commit = GroupCommit::new(move || {
            flushed.flush().map_err(|e| e.to_string())?;
            log.sync_data().map_err(|e| format!("fdatasync: {e}"))
        });
        Ok(KvCheckpointer::with_store(SledStore {
            db,
            tree,
            path,
            commit,
        }))
    }
}

impl SledStore {
    /// The folder holding the database.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, for other trees beside the checkpoints (the long-term store's).
    pub fn db(&self) -> &sled::Db {
        &self.db
    }

    /// sled's own estimate of its size on disk.
    pub fn size_on_disk(&self) -> Result<u64, CheckpointError> {
        self.db.size_on_disk().map_err(backend)
    }

    /// How many flushes (each at least one fsync) the store has issued since it was opened.
    pub fn flushes(&self) -> u64 {
        self.commit.flushes()
    }
}

#[async_trait]
impl KvStore for SledStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError> {
        Ok(self.tree.get(key).map_err(backend)?.map(|v| v.to_vec()))
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CheckpointError> {
        let range = self.tree.range(start..end);
        if reverse {
            for item in range.rev() {
                let (k, v) = item.map_err(backend)?;
                if !visit(&k, &v) {
                    break;
                }
            }
        } else {
            for item in range {
                let (k, v) = item.map_err(backend)?;
                if !visit(&k, &v) {
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
        let mut batch = sled::Batch::default();
        for k in deletes {
            batch.remove(k);
        }
        for (k, v) in puts {
            batch.insert(k, v);
        }
        self.tree.apply_batch(batch).map_err(backend)
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.commit
            .flush()
            .await
            .map_err(|e| CheckpointError::Backend(format!("flushing {}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_in_use_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _first = SledCheckpointer::open(dir.path()).expect("first open");
        let err = SledCheckpointer::open(dir.path())
            .err()
            .expect("sled locks the folder");
        let msg = err.to_string();
        assert!(msg.contains("in use by another process"), "{msg}");
        assert!(!msg.contains("WouldBlock"), "{msg}");
    }
}
