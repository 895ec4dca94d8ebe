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

/// How a *new* sled store compresses what it stores. A folder keeps the form it was created
/// with, whatever is asked later (sled cannot change its page compression; a store's value
/// form is recorded in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SledCompression {
    /// sled compresses its pages with zstd (the default of [`SledOptions`], so of the CLI and
    /// embedded stores): the smallest files (chain 1000: 0.83 MB, 2.6 MB without), but sled
    /// 0.34 builds a zstd context for every message it logs, over half of the log's merge CPU
    /// on a loaded server, most of it the `cpuid` each context asks for, which traps in a
    /// virtual machine (see `wal/codec.rs` and `docs/benchmarks.md`).
    #[default]
    Pages,
    /// sled's pages are left as they are and values of 128 bytes or more are compressed by the
    /// write-ahead log's merge, lz4 below 1 KB and zstd above with one context per merge
    /// (`wal/codec.rs`): less CPU under load, more disk for small values (chain 1000:
    /// 2.1 MB). The server's default ([`SledOptions::from_env_or`]).
    Values,
    /// Nothing is compressed.
    Off,
}

/// How a sled store is opened.
#[derive(Debug, Clone, Copy)]
pub struct SledOptions {
    /// Bytes of sled's page cache (sled's own default is 1 GiB per database, which a long
    /// run fills: its RSS grew by about 1 KB per step). Default 64 MiB.
    pub cache_bytes: u64,
    /// When the write-ahead log's batches move into sled.
    pub wal: WalSettings,
    /// How a new store compresses (see [`SledCompression`]).
    pub compression: SledCompression,
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions {
            cache_bytes: 64 << 20,
            wal: WalSettings::default(),
            compression: SledCompression::Pages,
        }
    }
}

impl SledOptions {
    /// The defaults, with the cache size taken from `AGENTGRAPH_SLED_CACHE_MB` when it is set
    /// to a whole number of MiB, and the compression of a new store from
    /// `AGENTGRAPH_SLED_COMPRESSION`: `pages` (or `on`), `values`, `off` (the CLI and the
    /// server open their stores with this).
    pub fn from_env() -> Self {
        SledOptions::from_env_or(SledCompression::Pages)
    }

    /// [`SledOptions::from_env`] with another compression for a new store when
    /// `AGENTGRAPH_SLED_COMPRESSION` is unset: the server passes [`SledCompression::Values`]
    /// (many concurrent runs: the merge's CPU competes with them, see docs/runtime.md).
    pub fn from_env_or(compression: SledCompression) -> Self {
        let mut o = SledOptions {
            compression,
            ..SledOptions::default()
        };
        if let Ok(v) = std::env::var("AGENTGRAPH_SLED_COMPRESSION") {
            match v.trim().to_ascii_lowercase().as_str() {
                "off" | "0" | "false" | "no" => o.compression = SledCompression::Off,
                "on" | "1" | "true" | "yes" | "pages" => o.compression = SledCompression::Pages,
                "values" => o.compression = SledCompression::Values,
                other => tracing::warn!(
                    value = other,
                    default = ?compression,
                    "AGENTGRAPH_SLED_COMPRESSION is not pages, values or off; keeping the default"
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
/// would write anyway. sled's page compression as the folder was created with, else `pages`.
pub fn sled_config(dir: &Path, cache_bytes: u64, pages: bool) -> sled::Config {
    sled::Config::new()
        .path(dir)
        .cache_capacity(cache_bytes)
        .mode(sled::Mode::LowSpace)
        .flush_every_ms(None)
        .use_compression(sled_folder_compression(dir).unwrap_or(pages))
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
        let pages = options.compression == SledCompression::Pages;
        let config = sled_config(&path, options.cache_bytes, pages);
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
            compress_values: options.compression == SledCompression::Values,
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
