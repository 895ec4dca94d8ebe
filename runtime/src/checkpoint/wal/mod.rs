//! A write-ahead log in front of the trees of a sled database: the sled checkpointer's fast
//! durable path, shared by every tree opened through it ([`WalTree::sibling`]: the server's
//! events live beside the checkpoints, so one flush makes both durable).
//!
//! sled makes a batch durable by flushing its own log, which on Linux costs a page-cache write
//! of every dirty page plus `sync_file_range` per flush, and its per-key insert path costs tens
//! of microseconds of CPU: with many concurrent runs the CPU, not the disk, became the limit. A
//! [`WalTree`] takes sled off the durable path:
//!
//! 1. **apply** frames the batch (naming its tree) onto an in-memory log buffer and records it
//!    in the tree's active overlay table (reads see it at once), under one lock, so log order
//!    = apply order across trees.
//! 2. **flush** (through a [`GroupCommit`], shared by every concurrent caller) appends the buffer
//!    to the current segment file and `fdatasync`s it: one write and one sync for all of them.
//! 3. A **merger** thread freezes the overlay every [`WalSettings::merge_every`] or when it
//!    holds [`WalSettings::merge_bytes`], syncs the log up to it, applies it to sled, flushes
//!    sled, then drops the frozen tables and deletes the segments they covered.
//!
//! The log lives in the database's folder as `wal/`; a `wal-NAME/` folder is the log of an
//! older version (one tree, records without tree names), replayed into tree `NAME` on open
//! and then removed.
//!
//! Reads look in the active table, then the frozen ones (newest first), then sled; data only
//! moves in that direction, and a table is dropped only once sled holds its entries.
//!
//! Crash safety rests on one invariant: **sled only ever receives batches that are durable in
//! the log**, and a segment is deleted only after sled flushed everything in it. So on open,
//! replaying the remaining segments in order over sled's state yields exactly the sequence of
//! durable batches: every key a replayed batch touches ends at its newest durable value, and
//! every other key is as the deleted segments left it. A torn tail of the newest segment (a
//! write the crash cut) was never reported durable and is dropped.

mod codec;
mod frame;
mod merge;
mod overlay;
mod segments;

use super::group_commit::GroupCommit;
use codec::Codec;
use overlay::Table;
use segments::Segments;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Duration;

/// A log buffer larger than this is not kept for reuse after a sync (a burst's buffer is let
/// go rather than held for good).
const MAX_SPARE: usize = 4 << 20;

/// Why the log failed.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// A file operation failed.
    #[error("write-ahead log {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A record before the newest segment's tail does not read back.
    #[error(
        "write-ahead log {path} is damaged at byte {offset} (a record that was synced does not \
         read back); the store cannot be opened safely: restore the folder from a backup, or \
         move the damaged segment away to open the store without its batches"
    )]
    Damaged {
        /// The segment.
        path: PathBuf,
        /// Where the bad record starts.
        offset: u64,
    },
    /// sled failed.
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    /// A value stored in sled does not decode, or the database's value format is unknown.
    #[error(
        "a value stored in the database does not read back ({0}): the database is damaged or \
         was written by a newer version"
    )]
    Value(String),
    /// An earlier failure left the log unusable; the store must be reopened.
    #[error("the store failed earlier and must be reopened: {0}")]
    Broken(String),
}

/// When the merger moves logged batches into sled.
#[derive(Debug, Clone, Copy)]
pub struct WalSettings {
    /// Merge once the active table holds this many bytes.
    pub merge_bytes: usize,
    /// Merge a non-empty active table at least this often.
    pub merge_every: Duration,
    /// Seal a segment file once it grows past this size.
    pub segment_bytes: u64,
    /// Whether a database created by [`WalTree::open`] stores its values compressed (see
    /// `codec.rs`; default off: sled's page compression is the default); a database keeps the
    /// form it was created with.
    pub compress_values: bool,
}

impl Default for WalSettings {
    fn default() -> Self {
        WalSettings {
            merge_bytes: 16 << 20,
            merge_every: Duration::from_secs(1),
            segment_bytes: 64 << 20,
            compress_values: false,
        }
    }
}

/// A sled tree behind the write-ahead log of its database (see the module docs). Trees of one
/// database opened through [`WalTree::sibling`] share the log, its flushes and its merger.
pub struct WalTree {
    log: Arc<Log>,
    /// The tree's index in [`Shared::trees`] and in every table set.
    tag: usize,
    /// The tree's name, written into each record.
    name: Arc<[u8]>,
}

/// The log of one database: what every [`WalTree`] of it shares. Dropping the last one stops
/// the merger, which drains the log into sled first.
struct Log {
    shared: Arc<Shared>,
    commit: GroupCommit,
    merger: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// One overlay table per tree, indexed by tag (a tree opened later has none in older sets).
type Tables = Vec<Table>;

struct Shared {
    db: sled::Db,
    /// The trees by tag, with their names. Never held while `state` is taken.
    trees: RwLock<Vec<(Arc<[u8]>, sled::Tree)>>,
    state: Mutex<State>,
    /// Wakes the merger (work to do, or closing) and writers held back by a full overlay.
    wake: Condvar,
    /// Table sets frozen for merging, oldest first. Lock order: `state`, then `frozen`.
    frozen: RwLock<Vec<Arc<Tables>>>,
    log: Mutex<Segments>,
    /// Held by a merge from freezing a table to dropping it, so tables reach sled in order.
    merging: Mutex<()>,
    /// sled's log file, synced after each sled flush (see the sled checkpointer's docs).
    sled_file: std::fs::File,
    sled_path: PathBuf,
    /// fdatasyncs of the log plus sled flushes issued since open.
    syncs: AtomicU64,
    /// How values are stored in sled.
    codec: Codec,
    settings: WalSettings,
}

struct State {
    next_seq: u64,
    /// Framed batches not yet written to the segment file.
    pending: Vec<u8>,
    pending_max: u64,
    active: Tables,
    active_bytes: usize,
    closing: bool,
    /// Set by a failure that leaves the log out of step with the tables.
    broken: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl WalTree {
    /// Opens tree `name` of `db`, the sled database in folder `sled_dir`, with the database's
    /// log in `sled_dir/wal`: replays what a crash left in the log (and in an older version's
    /// `sled_dir/wal-NAME`) into sled, makes sled durable, starts an empty log and the merger.
    /// Other trees of the database join the log with [`WalTree::sibling`].
    pub fn open(
        db: sled::Db,
        name: &str,
        sled_dir: &Path,
        settings: WalSettings,
    ) -> Result<Self, WalError> {
        let dir = &sled_dir.join("wal");
        let legacy = &sled_dir.join(format!("wal-{name}"));
        let sled_path = sled_dir.join("db");
        let sled_file = std::fs::File::open(&sled_path).map_err(|source| WalError::Io {
            path: sled_path.clone(),
            source,
        })?;
        let codec = Codec::open(&db, !db.was_recovered(), settings.compress_values)?;
        let tree = db.open_tree(name)?;
        let mut trees: Vec<(Arc<[u8]>, sled::Tree)> =
            vec![(Arc::from(name.as_bytes()), tree.clone())];
        // Key by key (see `merge.rs` on sled batches); a replay cut short is replayed again.
        // The older log first: a current log only exists once it was replayed and removed.
        let mut replayed = segments::replay(legacy, frame::Format::OneTree, &mut |record| {
            replay_into(&tree, codec, record)
        })?;
        replayed += segments::replay(dir, frame::Format::Named, &mut |record| {
            let at = match trees.iter().position(|(n, _)| **n == *record.tree) {
                Some(at) => at,
                None => {
                    trees.push((
                        Arc::from(record.tree.as_slice()),
                        db.open_tree(&record.tree)?,
                    ));
                    trees.len() - 1
                }
            };
            replay_into(&trees[at].1, codec, record)
        })?;
        if replayed > 0 {
            tracing::info!(batches = replayed, dir = %dir.display(), "write-ahead log replayed into sled");
            db.flush()?;
            sled_file.sync_data().map_err(|source| WalError::Io {
                path: sled_path.clone(),
                source,
            })?;
        }
        segments::remove_folder(legacy)?;
        segments::remove_all(dir)?;
        let log = Segments::create(dir, 1, settings.segment_bytes)?;
        // Only the opened tree is served; trees met in the replay are opened again by their
        // users through `sibling`.
        trees.truncate(1);
        let shared = Arc::new(Shared {
            db,
            trees: RwLock::new(trees),
            state: Mutex::new(State {
                next_seq: 1,
                pending: Vec::new(),
                pending_max: 0,
                active: vec![Table::new()],
                active_bytes: 0,
                closing: false,
                broken: None,
            }),
            wake: Condvar::new(),
            frozen: RwLock::new(Vec::new()),
            log: Mutex::new(log),
            merging: Mutex::new(()),
            sled_file,
            sled_path,
            syncs: AtomicU64::new(0),
            codec,
            settings,
        });
        let flushed = shared.clone();
        let commit = GroupCommit::new(move || flushed.sync_log().map_err(|e| e.to_string()));
        let merging = shared.clone();
        let merger = std::thread::Builder::new()
            .name("agentgraph-wal-merge".into())
            .spawn(move || merge::run(&merging))
            .map_err(|source| WalError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(WalTree {
            log: Arc::new(Log {
                shared,
                commit,
                merger: Mutex::new(Some(merger)),
            }),
            tag: 0,
            name: Arc::from(name.as_bytes()),
        })
    }

    /// Tree `name` of the same database behind the same log: its batches share this tree's
    /// flushes and merges, so one flush makes the writes of both durable.
    pub fn sibling(&self, name: &str) -> Result<WalTree, WalError> {
        let shared = &self.log.shared;
        let tag = {
            let mut trees = shared.trees.write().unwrap_or_else(|p| p.into_inner());
            match trees.iter().position(|(n, _)| **n == *name.as_bytes()) {
                Some(tag) => tag,
                None => {
                    trees.push((Arc::from(name.as_bytes()), shared.db.open_tree(name)?));
                    trees.len() - 1
                }
            }
        };
        Ok(WalTree {
            log: self.log.clone(),
            tag,
            name: Arc::from(name.as_bytes()),
        })
    }

    /// The sled tree underneath (what the merges have moved so far).
    #[cfg(test)]
    fn sled_tree(&self) -> sled::Tree {
        self.log.shared.tree(self.tag)
    }

    /// One value.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, WalError> {
        let shared = &self.log.shared;
        {
            let s = lock(&shared.state);
            if let Some(v) = s.active.get(self.tag).and_then(|t| t.get(key)) {
                return Ok(v.value().cloned());
            }
        }
        {
            let frozen = shared.read_frozen();
            for set in frozen.iter().rev() {
                if let Some(v) = set.get(self.tag).and_then(|t| t.get(key)) {
                    return Ok(v.value().cloned());
                }
            }
        }
        match shared.tree(self.tag).get(key)? {
            Some(v) => Ok(Some(shared.codec.decode(v)?.into_vec())),
            None => Ok(None),
        }
    }

    /// Visits keys in `[start, end)` in order (or reverse) until `visit` returns false.
    pub fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), WalError> {
        if start >= end {
            return Ok(());
        }
        let shared = &self.log.shared;
        let mut top = Table::new();
        {
            let s = lock(&shared.state);
            let frozen = shared.read_frozen();
            for set in frozen.iter() {
                if let Some(t) = set.get(self.tag) {
                    overlay::copy_range(t, start, end, &mut top);
                }
            }
            if let Some(t) = s.active.get(self.tag) {
                overlay::copy_range(t, start, end, &mut top);
            }
        }
        let tree = shared.tree(self.tag);
        let codec = shared.codec;
        let decoded = |row: sled::Result<(sled::IVec, sled::IVec)>| {
            let (k, v) = row?;
            Ok::<_, WalError>((k, codec.decode(v)?))
        };
        let range = tree.range(start..end);
        if reverse {
            overlay::merged_scan(&top, range.rev().map(decoded), true, visit)?;
        } else {
            overlay::merged_scan(&top, range.map(decoded), false, visit)?;
        }
        Ok(())
    }

    /// Logs a batch (deletes first, then puts) and makes it visible; durable after
    /// [`WalTree::flush`].
    pub fn apply(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), WalError> {
        self.apply_new(Vec::new(), puts, deletes)
    }

    /// [`WalTree::apply`] with puts of keys the caller knows exist nowhere yet (`new`: ids
    /// never given out before), logged like the others. Such a key deleted before the log's
    /// next merge costs sled nothing; a key that does exist must not be passed here, or a
    /// delete of it could leave its old value in sled.
    pub fn apply_new(
        &self,
        new: Vec<(Vec<u8>, Vec<u8>)>,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), WalError> {
        let new_count = new.len();
        // The plain `apply` (every checkpoint) passes no new keys: its puts are used as they are.
        let puts = if new.is_empty() {
            puts
        } else {
            let mut all = new;
            all.extend(puts);
            all
        };
        let shared = &self.log.shared;
        let mut s = lock(&shared.state);
        // A merger far behind holds writers back rather than letting the overlay grow
        // without bound (it only happens when sled cannot keep up for seconds).
        while s.active_bytes >= 4 * shared.settings.merge_bytes && s.broken.is_none() {
            shared.wake.notify_all();
            s = shared
                .wake
                .wait_timeout(s, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        if let Some(e) = &s.broken {
            return Err(WalError::Broken(e.clone()));
        }
        let seq = s.next_seq;
        s.next_seq += 1;
        frame::append(&mut s.pending, seq, &self.name, &puts, &deletes);
        s.pending_max = seq;
        if s.active.len() <= self.tag {
            s.active.resize_with(self.tag + 1, Table::new);
        }
        let added = overlay::record(&mut s.active[self.tag], puts, new_count, deletes);
        s.active_bytes += added;
        if s.active_bytes >= shared.settings.merge_bytes {
            shared.wake.notify_all();
        }
        Ok(())
    }

    /// Returns once every batch applied before the call is durable (group commit).
    pub async fn flush(&self) -> Result<(), String> {
        self.log.commit.flush().await
    }

    /// Returns once every batch applied before the call is durable, sharing any flush that
    /// starts within `delay` and starting one only when none has (see
    /// [`GroupCommit::flush_within`]).
    pub async fn flush_within(&self, delay: Duration) -> Result<(), String> {
        self.log.commit.flush_within(delay).await
    }

    /// [`WalTree::flush`] for a caller outside an async runtime: syncs the log on this thread
    /// (waiting for a sync in progress first).
    pub fn flush_blocking(&self) -> Result<(), WalError> {
        self.log.shared.sync_log()
    }

    /// Syncs of the log and flushes of sled issued since open (shared by the siblings).
    pub fn syncs(&self) -> u64 {
        self.log.shared.syncs.load(Ordering::Relaxed)
    }

    /// The sled database.
    pub fn db(&self) -> &sled::Db {
        &self.log.shared.db
    }

    /// Moves everything logged into sled, flushes sled and empties the log, then returns; the
    /// tree stays usable. A clean close does this, so the next open replays nothing.
    pub fn drain(&self) -> Result<(), WalError> {
        merge::merge_now(&self.log.shared)
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        {
            let mut s = lock(&self.shared.state);
            s.closing = true;
        }
        self.shared.wake.notify_all();
        let merger = lock(&self.merger).take();
        if let Some(merger) = merger {
            // The merger drains what is left before it ends; a panic there was already
            // reported by the panic hook, and the log still holds every durable batch.
            let _ = merger.join();
        }
    }
}

/// Applies a replayed record to `tree`, key by key, its values encoded as `codec` stores them.
fn replay_into(tree: &sled::Tree, codec: Codec, record: frame::Record) -> Result<(), WalError> {
    for k in record.deletes {
        tree.remove(k)?;
    }
    let mut encoder = codec.encoder();
    for (k, v) in record.puts {
        tree.insert(k, encoder.encode(&v).as_ref())?;
    }
    Ok(())
}

impl Shared {
    fn read_frozen(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Tables>>> {
        self.frozen.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_frozen(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<Tables>>> {
        self.frozen.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The sled tree of `tag` (every tag handed out has one).
    fn tree(&self, tag: usize) -> sled::Tree {
        let trees = self.trees.read().unwrap_or_else(|p| p.into_inner());
        trees[tag].1.clone()
    }

    /// Writes the pending batches to the segment file and syncs it. One writer at a time (the
    /// `log` lock), and the buffer is taken under it, so batches reach the file in log order.
    fn sync_log(&self) -> Result<(), WalError> {
        let mut log = lock(&self.log);
        // The two buffers take turns (writers fill one while this writes the other), so a
        // buffer's capacity is kept instead of grown again from empty after every sync.
        let mut buf = std::mem::take(&mut log.spare);
        let max = {
            let mut s = lock(&self.state);
            if let Some(e) = &s.broken {
                return Err(WalError::Broken(e.clone()));
            }
            std::mem::swap(&mut buf, &mut s.pending);
            s.pending_max
        };
        let written = (|| {
            if !buf.is_empty() {
                log.write(&buf, max)?;
            }
            log.sync()
        })();
        buf.clear();
        if buf.capacity() <= MAX_SPARE {
            log.spare = buf;
        }
        match written {
            Ok(true) => {
                self.syncs.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => {
                // The batches are visible in the tables but maybe not on disk: refuse to go on
                // rather than merge them into sled unlogged.
                self.fail(&e);
                Err(e)
            }
        }
    }

    fn fail(&self, e: &WalError) {
        let mut s = lock(&self.state);
        if s.broken.is_none() {
            s.broken = Some(e.to_string());
        }
        drop(s);
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests;
