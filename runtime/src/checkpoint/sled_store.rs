//! The embedded default: sled 0.34 behind the write-ahead log of [`super::wal`]. Each
//! checkpoint is one atomic batch, visible at once and durable once a flush returns; the engine
//! flushes according to the run's durability mode, and concurrent runs share each flush (group
//! commit: one write and one `fdatasync` of the log for all of them). sled receives the batches
//! later, in the background, and only ones the log already holds durably.

use super::kv::{KvCheckpointer, KvStore};
use super::wal::{WalSettings, WalTree};
use super::CheckpointError;
use async_trait::async_trait;
use std::path::{Path, PathBuf};

/// A sled tree used as the ordered store, behind a write-ahead log.
pub struct SledStore {
    tree: WalTree,
    path: PathBuf,
}

/// The sled checkpointer.
pub type SledCheckpointer = KvCheckpointer<SledStore>;

/// How a sled store is opened.
#[derive(Debug, Clone, Copy)]
pub struct SledOptions {
    /// Bytes of sled's page cache (sled's own default is 1 GiB per database, which a long
    /// run fills: its RSS grew by about 1 KB per step). Default 64 MiB.
    pub cache_bytes: u64,
    /// When the write-ahead log's batches move into sled.
    pub wal: WalSettings,
    /// Whether a *new* store compresses its values (zstd, value by value, in the write-ahead
    /// log's merge: see `wal/codec.rs`). Default on. sled's own page compression is off for
    /// new stores: sled 0.34 builds a fresh zstd context for every message it logs, which was
    /// most of the merge's CPU on a loaded server (see `docs/benchmarks.md`). A folder keeps
    /// the form it was created with, whatever this says: an older store with sled's
    /// compression keeps it, and its values stay as they are.
    pub compression: bool,
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions {
            cache_bytes: 64 << 20,
            wal: WalSettings::default(),
            compression: true,
        }
    }
}

impl SledOptions {
    /// The defaults, with the cache size taken from `AGENTGRAPH_SLED_CACHE_MB` when it is set
    /// to a whole number of MiB, and compression of a new store turned off by
    /// `AGENTGRAPH_SLED_COMPRESSION=off` (or `0`, `false`) (the CLI and the server open their
    /// stores with this).
    pub fn from_env() -> Self {
        let mut o = SledOptions::default();
        if let Ok(v) = std::env::var("AGENTGRAPH_SLED_COMPRESSION") {
            match v.trim().to_ascii_lowercase().as_str() {
                "off" | "0" | "false" | "no" => o.compression = false,
                "on" | "1" | "true" | "yes" => o.compression = true,
                other => tracing::warn!(
                    value = other,
                    "AGENTGRAPH_SLED_COMPRESSION is not on/off; keeping the default (on)"
                ),
            }
        }
        if let Some(mb) = std::env::var("AGENTGRAPH_SLED_CACHE_MB")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            o.cache_bytes = mb.max(1) << 20;
        }
        o
    }
}

fn backend(e: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Backend(e.to_string())
}

/// Whether the sled database in folder `dir` was created with compression: `Some` from its
/// `conf` file (sled refuses to open a folder with the other setting), `None` for a new folder
/// or a `conf` that does not say.
pub fn sled_folder_compression(dir: &Path) -> Option<bool> {
    let text = std::fs::read(dir.join("conf")).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines().find_map(|line| {
        let value = line.strip_prefix("use_compression:")?.trim();
        value.parse::<bool>().ok()
    })
}

/// A sled configuration for a database whose writers make their own data durable (the
/// write-ahead log's merges, the long-term store and chat memory flush what they write): no
/// background flush every 500 ms, which only rewrote (and compressed) pages a flush of ours
/// would write anyway. sled's page compression as the folder was created with, else off: a new
/// store's values are compressed by the write-ahead log instead (see [`SledOptions`]).
pub fn sled_config(dir: &Path, cache_bytes: u64) -> sled::Config {
    sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .mode(sled::Mode::LowSpace)
        .flush_every_ms(None)
        .use_compression(sled_folder_compression(dir).unwrap_or(false))
        .compression_factor(1)
}

/// Opens the sled database `config` describes. A database of this process that was just
/// dropped may still be held for a moment by background work that keeps a handle until it
/// returns (a flush handed to a blocking thread), so a folder found locked is tried again for
/// up to two seconds before the error is returned: a restart in one process then waits for
/// its previous store instead of failing.
pub fn open_sled(config: &sled::Config) -> sled::Result<sled::Db> {
    let mut tries = 0;
    loop {
        match config.open() {
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock") && tries < 40 =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

impl KvCheckpointer<SledStore> {
    /// Opens (or creates) a sled store in the folder `path`, replaying what a crash left in its
    /// write-ahead log.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::open_with(path, SledOptions::default())
    }

    /// [`Self::open`] with explicit options.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SledOptions,
    ) -> Result<Self, CheckpointError> {
        let path = path.as_ref().to_path_buf();
        let config = sled_config(&path, options.cache_bytes);
        let db = open_sled(&config).map_err(|e| match &e {
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
        // sled's own flush writes its log with `sync_file_range` on Linux, which survives a
        // killed process but neither flushes the disk's write cache nor the file's metadata;
        // the write-ahead log follows each sled flush with an `fdatasync` of sled's log file,
        // and syncs its own segments with `fdatasync`, so a flushed checkpoint survives a
        // power loss too.
        let wal = WalSettings {
            compress_values: options.compression,
            ..options.wal
        };
        let tree = WalTree::open(db, "checkpoints", &path, wal)
            .map_err(|e| CheckpointError::Backend(format!("opening {}: {e}", path.display())))?;
        Ok(KvCheckpointer::with_store(SledStore { tree, path }))
    }
}

impl SledStore {
    /// The folder holding the database.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, for other trees beside the checkpoints (the long-term store's).
    pub fn db(&self) -> &sled::Db {
        self.tree.db()
    }

    /// sled's own estimate of its size on disk.
    pub fn size_on_disk(&self) -> Result<u64, CheckpointError> {
        self.tree.db().size_on_disk().map_err(backend)
    }

    /// How many syncs the store has issued since it was opened: `fdatasync`s of the
    /// write-ahead log and sled flushes of the background merge.
    pub fn flushes(&self) -> u64 {
        self.tree.syncs()
    }

    /// Tree `name` of the same database behind the same write-ahead log: its writes share the
    /// checkpoints' flushes (the server keeps its event log there).
    pub fn tree_beside(&self, name: &str) -> Result<WalTree, CheckpointError> {
        self.tree.sibling(name).map_err(backend)
    }

    /// Moves every logged checkpoint into sled and empties the log (a clean close does this).
    pub fn drain(&self) -> Result<(), CheckpointError> {
        self.tree.drain().map_err(backend)
    }
}

#[async_trait]
impl KvStore for SledStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError> {
        self.tree.get(key).map_err(backend)
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CheckpointError> {
        self.tree.scan(start, end, reverse, visit).map_err(backend)
    }

    fn apply(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        self.tree.apply(puts, deletes).map_err(backend)
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.tree
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
