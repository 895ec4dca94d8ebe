//! Checkpoints out of one store and into another, and a check of what a store can still read.
//!
//! The export is JSON Lines, one record per line, readable by any tool and by any
//! [`Checkpointer`] on import (sled to PostgreSQL, one machine to another):
//!
//! ```text
//! {"kind":"header","format":"agentgraph-checkpoints","version":1}
//! {"kind":"checkpoint","thread":"t1","ns":"","checkpoint":{…},"blobs":{"messages":{…}},"writes":[…]}
//! ```
//!
//! A checkpoint record carries the blobs that checkpoint wrote (one per changed channel; a
//! delta names the blob before it) and its pending writes. Records come newest first per
//! thread and may be imported in any order. Everything streams: a page of checkpoints at a
//! time, never a whole thread.

use super::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PendingWrite,
};
use crate::ids::CheckpointId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};

/// The `format` of an export's header.
pub const FORMAT: &str = "agentgraph-checkpoints";
/// The version of the export format this build writes and reads.
pub const VERSION: u32 = 1;
/// Checkpoints read per page.
const PAGE: usize = 256;

/// One line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The first line.
    Header {
        /// Always [`FORMAT`].
        format: String,
        /// [`VERSION`] when written.
        version: u32,
    },
    /// A checkpoint with the blobs it wrote and its pending writes.
    Checkpoint {
        /// The thread.
        thread: String,
        /// The namespace (`""` at the root).
        ns: String,
        /// The record.
        checkpoint: Box<Checkpoint>,
        /// Channel → the blob this checkpoint wrote.
        blobs: BTreeMap<String, ChannelEntry>,
        /// Its pending writes.
        writes: Vec<PendingWrite>,
    },
}

/// A thread that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Damaged {
    /// The thread.
    pub thread: String,
    /// The first error met.
    pub error: String,
}

/// What an export, an import or a check went through.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PortableStats {
    /// Threads read whole.
    pub threads: usize,
    /// Checkpoints.
    pub checkpoints: usize,
    /// Blobs.
    pub blobs: usize,
    /// Pending writes.
    pub writes: usize,
    /// Threads that could not be read (check; export with `skip_damaged`).
    pub damaged: Vec<Damaged>,
}

/// Why an export, import or check stopped.
#[derive(Debug, thiserror::Error)]
pub enum PortableError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] CheckpointError),
    /// Reading or writing the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A thread could not be read (export without `skip_damaged`).
    #[error(
        "thread {thread:?} cannot be read: {error}; `store check` lists every damaged thread, \
         and an export with --skip-damaged saves the others"
    )]
    Damaged {
        /// The thread.
        thread: String,
        /// Why.
        error: String,
    },
    /// A line of the file is not a record of this format.
    #[error("line {line}: {reason}")]
    BadRecord {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The target store already holds a thread of the file.
    #[error(
        "thread {0:?} already exists in the target store; import into an empty store, or \
         delete the thread there first"
    )]
    ThreadExists(String),
}

/// A thread's checkpoints a page at a time, newest first (every namespace).
#[derive(Default)]
struct Pages {
    before: Option<CheckpointId>,
    done: bool,
}

impl Pages {
    /// The next page, `None` after the last.
    async fn next(
        &mut self,
        cp: &dyn Checkpointer,
        thread: &str,
    ) -> Result<Option<Vec<CheckpointTuple>>, CheckpointError> {
        if self.done {
            return Ok(None);
        }
        let query = ListQuery {
            ns: None,
            before: self.before,
            limit: Some(PAGE),
            ..ListQuery::default()
        };
        let page = cp.list(thread, &query).await?;
        self.done = page.len() < PAGE;
        self.before = page.last().map(|t| t.checkpoint.id);
        Ok((!page.is_empty()).then_some(page))
    }
}

/// Visits every checkpoint of `thread` (newest first, a page at a time) with its blobs.
async fn each_checkpoint<F>(
    cp: &dyn Checkpointer,
    thread: &str,
    mut visit: F,
) -> Result<(), CheckpointError>
where
    F: FnMut(Record) -> Result<(), CheckpointError>,
{
    let mut pages = Pages::default();
    while let Some(page) = pages.next(cp, thread).await? {
        for t in page {
            let mut blobs = BTreeMap::new();
            for (channel, version) in &t.checkpoint.channel_versions {
                if *version != t.checkpoint.id {
                    continue;
                }
                let entry = cp
                    .blob(thread, &t.ns, channel, *version)
                    .await?
                    .ok_or_else(|| CheckpointError::MissingBlob {
                        thread: thread.to_string(),
                        channel: channel.clone(),
                        version: *version,
                    })?;
                blobs.insert(channel.clone(), entry);
            }
            visit(Record::Checkpoint {
                thread: thread.to_string(),
                ns: t.ns,
                checkpoint: Box::new(t.checkpoint),
                blobs,
                writes: t.pending_writes,
            })?;
        }
    }
    Ok(())
}

fn count(stats: &mut PortableStats, record: &Record) {
    if let Record::Checkpoint { blobs, writes, .. } = record {
        stats.checkpoints += 1;
        stats.blobs += blobs.len();
        stats.writes += writes.len();
    }
}

/// Writes every thread of `cp` to `out`. Each thread is checked ([`check`]) before it is
/// written: a thread that cannot be read stops the export, or, with `skip_damaged`, is left out
/// whole and listed in [`PortableStats::damaged`].
pub async fn export(
    cp: &dyn Checkpointer,
    out: &mut (dyn Write + Send),
    skip_damaged: bool,
) -> Result<PortableStats, PortableError> {
    let mut stats = PortableStats::default();
    let header = Record::Header {
        format: FORMAT.into(),
        version: VERSION,
    };
    writeln!(out, "{}", serde_json::to_string(&header).map_err(io_json)?)?;
    for thread in cp.list_threads().await? {
        // A thread is read whole before its first line is written, so a damaged one leaves no
        // partial thread in the file.
        if let Err(e) = check_thread(cp, &thread, &mut PortableStats::default()).await {
            if skip_damaged {
                stats.damaged.push(Damaged {
                    thread,
                    error: e.to_string(),
                });
                continue;
            }
            return Err(PortableError::Damaged {
                thread,
                error: e.to_string(),
            });
        }
        let mut io_error = None;
        let mut thread_stats = PortableStats::default();
        let read = each_checkpoint(cp, &thread, |record| {
            count(&mut thread_stats, &record);
            let line = serde_json::to_string(&record).map_err(|e| {
                CheckpointError::Backend(format!("cannot encode a checkpoint: {e}"))
            })?;
            if let Err(e) = writeln!(out, "{line}") {
                io_error = Some(e);
                return Err(CheckpointError::Backend("write failed".into()));
            }
            Ok(())
        })
        .await;
        if let Some(e) = io_error {
            return Err(PortableError::Io(e));
        }
        stats.checkpoints += thread_stats.checkpoints;
        stats.blobs += thread_stats.blobs;
        stats.writes += thread_stats.writes;
        match read {
            Ok(()) => stats.threads += 1,
            Err(e) if skip_damaged => stats.damaged.push(Damaged {
                thread,
                error: e.to_string(),
            }),
            Err(e) => {
                return Err(PortableError::Damaged {
                    thread,
                    error: e.to_string(),
                })
            }
        }
    }
    out.flush()?;
    Ok(stats)
}

fn io_json(e: serde_json::Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// Reads an export into `cp`, which must not hold any of its threads already. Returns what was
/// imported; the store is flushed at the end.
pub async fn import(
    cp: &dyn Checkpointer,
    input: &mut (dyn BufRead + Send),
) -> Result<PortableStats, PortableError> {
    let mut stats = PortableStats::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut line = String::new();
    let mut n = 0usize;
    let mut header = false;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        n += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(text).map_err(|e| PortableError::BadRecord {
            line: n,
            reason: format!("not a record of an agentgraph export: {e}"),
        })?;
        match record {
            Record::Header { format, version } => {
                if format != FORMAT || version > VERSION {
                    return Err(PortableError::BadRecord {
                        line: n,
                        reason: format!(
                            "format {format:?} version {version}; this build reads {FORMAT:?} up \
                             to version {VERSION}"
                        ),
                    });
                }
                header = true;
            }
            Record::Checkpoint { .. } if !header => {
                return Err(PortableError::BadRecord {
                    line: n,
                    reason: format!("a checkpoint before the header line ({FORMAT:?})"),
                });
            }
            Record::Checkpoint {
                thread,
                ns,
                checkpoint,
                blobs,
                writes,
            } => {
                if !seen.contains(&thread) {
                    if !cp
                        .list(
                            &thread,
                            &ListQuery {
                                limit: Some(1),
                                ..ListQuery::default()
                            },
                        )
                        .await?
                        .is_empty()
                    {
                        return Err(PortableError::ThreadExists(thread));
                    }
                    seen.insert(thread.clone());
                }
                let blobs: Vec<(String, ChannelEntry)> = blobs.into_iter().collect();
                cp.put(&thread, &ns, &checkpoint, &blobs).await?;
                stats.checkpoints += 1;
                stats.blobs += blobs.len();
                let mut by_task: BTreeMap<&str, Vec<&PendingWrite>> = BTreeMap::new();
                for w in &writes {
                    by_task.entry(w.task_id.as_str()).or_default().push(w);
                }
                for (task, mut ws) in by_task {
                    ws.sort_by_key(|w| w.idx);
                    let pairs: Vec<(String, serde_json::Value)> = ws
                        .iter()
                        .map(|w| (w.channel.clone(), w.value.clone()))
                        .collect();
                    cp.put_writes(&thread, &ns, checkpoint.id, task, &pairs)
                        .await?;
                }
                stats.writes += writes.len();
            }
        }
    }
    if !header && n > 0 {
        return Err(PortableError::BadRecord {
            line: 1,
            reason: format!("no header line ({FORMAT:?})"),
        });
    }
    stats.threads = seen.len();
    cp.flush().await?;
    Ok(stats)
}

/// Reads every thread of `cp` as a run would: each checkpoint, its pending writes, and every
/// blob its channels' chains reach, each blob read once. Threads that fail are listed in
/// [`PortableStats::damaged`]; the others are counted as readable.
pub async fn check(cp: &dyn Checkpointer) -> Result<PortableStats, PortableError> {
    let mut stats = PortableStats::default();
    for thread in cp.list_threads().await? {
        match check_thread(cp, &thread, &mut stats).await {
            Ok(()) => stats.threads += 1,
            Err(e) => stats.damaged.push(Damaged {
                thread,
                error: e.to_string(),
            }),
        }
    }
    Ok(stats)
}

async fn check_thread(
    cp: &dyn Checkpointer,
    thread: &str,
    stats: &mut PortableStats,
) -> Result<(), CheckpointError> {
    // Blobs already followed, by (namespace, channel, id): each chain link is read once.
    let mut reached: HashSet<(String, String, CheckpointId)> = HashSet::new();
    let mut pages = Pages::default();
    while let Some(page) = pages.next(cp, thread).await? {
        for t in &page {
            stats.checkpoints += 1;
            stats.writes += t.pending_writes.len();
            for (channel, version) in &t.checkpoint.channel_versions {
                let mut at = Some(*version);
                while let Some(id) = at {
                    if !reached.insert((t.ns.clone(), channel.clone(), id)) {
                        break;
                    }
                    let entry = cp.blob(thread, &t.ns, channel, id).await?.ok_or_else(|| {
                        CheckpointError::MissingBlob {
                            thread: thread.to_string(),
                            channel: channel.clone(),
                            version: id,
                        }
                    })?;
                    stats.blobs += 1;
                    at = match entry {
                        ChannelEntry::Delta { prev, .. } => prev,
                        _ => None,
                    };
                }
            }
        }
    }
    Ok(())
}
