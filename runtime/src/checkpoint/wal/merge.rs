//! The merger: moves frozen overlay tables (one per tree) into sled, then lets the log forget
//! them.

use super::{lock, Shared, WalError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// The merger thread: waits for a full table, a due interval or the close, merges, repeats.
/// On close it drains what is left. A failure marks the store broken and ends the thread.
pub(super) fn run(shared: &Shared) {
    let every = shared.settings.merge_every;
    let mut last = Instant::now();
    loop {
        let closing = {
            let mut s = lock(&shared.state);
            loop {
                if s.broken.is_some() {
                    return;
                }
                let empty = s.active.iter().all(|t| t.is_empty());
                let due = !empty && last.elapsed() >= every;
                if s.closing || s.active_bytes >= shared.settings.merge_bytes || due {
                    break;
                }
                let wait = if empty {
                    every
                } else {
                    every.saturating_sub(last.elapsed())
                };
                s = shared
                    .wake
                    .wait_timeout(s, wait)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
            s.closing
        };
        if let Err(e) = merge_now(shared) {
            tracing::error!(error = %e, "write-ahead log: merging into sled failed; the store must be reopened");
            return;
        }
        last = Instant::now();
        if closing {
            return;
        }
    }
}

/// Freezes the active table, syncs the log up to it, applies it to sled, flushes sled, then
/// drops the table and deletes the segments it covered. Does nothing when nothing is logged.
///
/// The log is synced *before* sled sees a batch, so sled never holds a batch the log could
/// lose; a merge is therefore safe to cut by a crash at any key: replay re-applies every batch
/// of the log in order over whatever part reached sled.
pub(super) fn merge_now(shared: &Shared) -> Result<(), WalError> {
    let _one_at_a_time = lock(&shared.merging);
    let (table, upto) = {
        let mut s = lock(&shared.state);
        if let Some(e) = &s.broken {
            return Err(WalError::Broken(e.clone()));
        }
        if s.active.iter().all(|t| t.is_empty()) {
            return Ok(());
        }
        let fresh = (0..s.active.len()).map(|_| Default::default()).collect();
        let table = Arc::new(std::mem::replace(&mut s.active, fresh));
        s.active_bytes = 0;
        shared.write_frozen().push(table.clone());
        (table, s.next_seq - 1)
    };
    // Writers held back by a full table may go on.
    shared.wake.notify_all();
    let merged = (|| {
        shared.sync_log()?;
        // Key by key, not in sled batches: sled 0.34 applies a batch under a process-wide
        // write lock that every read of every tree then waits for, which stalled the runs
        // reading meanwhile. A merge needs no atomicity (see above).
        // One encoder (one zstd context) for the whole merge.
        let mut encoder = shared.codec.encoder();
        for (tag, entries) in table.iter().enumerate() {
            if entries.is_empty() {
                continue;
            }
            let tree = shared.tree(tag);
            for (k, v) in entries.iter() {
                match v.value() {
                    Some(v) => tree
                        .insert(k.as_slice(), encoder.encode(v).as_ref())
                        .map(drop)?,
                    None => tree.remove(k.as_slice()).map(drop)?,
                }
            }
        }
        shared.db.flush()?;
        shared
            .sled_file
            .sync_data()
            .map_err(|source| WalError::Io {
                path: shared.sled_path.clone(),
                source,
            })?;
        shared.syncs.fetch_add(1, Ordering::Relaxed);
        lock(&shared.log).release(upto)
    })();
    if let Err(e) = merged {
        shared.fail(&e);
        return Err(e);
    }
    shared.write_frozen().retain(|t| !Arc::ptr_eq(t, &table));
    Ok(())
}
