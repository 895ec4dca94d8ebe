//! Pruning: all but the newest checkpoints of a namespace dropped, with their pending writes
//! and the blobs no kept checkpoint's chain still reaches.
//!
//! Pruning streams: it holds the newest `keep` checkpoints' blob keys and one batch of at most
//! [`PRUNE_BATCH`] keys at a time, never the whole history, and deletes in batches of that
//! size (one giant batch made sled hold and log the whole history at once), each a scan in key
//! order. It is safe to stop at any point: the old checkpoints go first, then their pending
//! writes (orphans until then, which nothing reads and the next prune removes), and a blob is
//! deleted only after every checkpoint that could reach it is gone. Blobs written at or after
//! the oldest kept checkpoint are never deleted, so a run writing to the thread meanwhile
//! keeps its blobs.

use super::encode::{decode, decode_entry};
use super::{AsyncKvStore, KvCheckpointer};
use crate::checkpoint::keys;
use crate::checkpoint::{ChannelEntry, Checkpoint, CheckpointError, PruneStats};
use crate::ids::CheckpointId;
use std::collections::HashSet;

/// Keys visited (and at most deleted) per batch.
pub(super) const PRUNE_BATCH: usize = 1024;

/// The checkpoint id at the end of a key (a blob's).
fn trailing_id(key: &[u8]) -> Option<CheckpointId> {
    let tail: [u8; 16] = key.get(key.len().checked_sub(16)?..)?.try_into().ok()?;
    Some(CheckpointId::from_bytes(tail))
}

/// The checkpoint id at the start of a key's tail (a checkpoint's or a pending write's).
fn head_id(tail: &[u8]) -> Option<CheckpointId> {
    let head: [u8; 16] = tail.get(..16)?.try_into().ok()?;
    Some(CheckpointId::from_bytes(head))
}

impl<S: AsyncKvStore> KvCheckpointer<S> {
    /// Keeps the newest `keep` checkpoints of a namespace, deleting the rest.
    pub(super) async fn prune_ns(
        &self,
        thread: &str,
        ns: &str,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        let prefix = keys::ns_prefix(keys::CHECKPOINT, thread, ns);
        let end = keys::prefix_end(&prefix);
        // The newest `keep` checkpoints, then whether anything older exists.
        let mut kept: Vec<Checkpoint> = Vec::new();
        let mut older = false;
        let mut err = None;
        self.store
            .scan_async(&prefix, &end, true, &mut |k, v| {
                if kept.len() == keep {
                    older = true;
                    return false;
                }
                match decode::<Checkpoint>(k, v) {
                    Ok(c) => {
                        kept.push(c);
                        true
                    }
                    Err(e) => {
                        err = Some(e);
                        false
                    }
                }
            })
            .await?;
        if let Some(e) = err {
            return Err(e);
        }
        if !older {
            return Ok(PruneStats::default());
        }
        // Nothing at or after the oldest kept checkpoint is deleted; with `keep` 0, nothing
        // written after the prune started.
        let floor = kept.last().map(|c| c.id);
        let needed = self.needed_blobs(thread, ns, &kept).await?;
        drop(kept);

        // Checkpoints and writes are keyed by checkpoint id right after the namespace prefix,
        // so the old ones are the keys before the floor's; blobs by channel, then id.
        let checkpoints = self
            .delete_older(&prefix, floor, true, head_id, &HashSet::new())
            .await?;
        let wp = keys::ns_prefix(keys::WRITE, thread, ns);
        let writes = self
            .delete_older(&wp, floor, true, head_id, &HashSet::new())
            .await?;
        let bp = keys::ns_prefix(keys::BLOB, thread, ns);
        let blobs = self
            .delete_older(&bp, floor, false, trailing_id, &needed)
            .await?;
        Ok(PruneStats {
            checkpoints,
            blobs,
            writes,
        })
    }

    /// Deletes, in batches, the keys under `prefix` whose checkpoint id (read by `id_of` from
    /// the key after the prefix) is older than `floor` (every key when `floor` is `None`),
    /// except those in `spare`. With `sorted_by_id` the scan stops at the first key not older.
    /// Returns how many keys were deleted.
    async fn delete_older(
        &self,
        prefix: &[u8],
        floor: Option<CheckpointId>,
        sorted_by_id: bool,
        id_of: impl Fn(&[u8]) -> Option<CheckpointId> + Send + Sync,
        spare: &HashSet<Vec<u8>>,
    ) -> Result<usize, CheckpointError> {
        let end = keys::prefix_end(prefix);
        let mut start = prefix.to_vec();
        let mut deleted = 0;
        loop {
            let mut visited = 0usize;
            let mut past_floor = false;
            let mut last = None;
            let mut deletes = Vec::new();
            self.store
                .scan_async(&start, &end, false, &mut |k, _| {
                    let older = match (id_of(&k[prefix.len()..]), floor) {
                        (Some(id), Some(f)) => id < f,
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                    if !older && sorted_by_id {
                        past_floor = true;
                        return false;
                    }
                    visited += 1;
                    if older && !spare.contains(k) {
                        deletes.push(k.to_vec());
                    }
                    last = Some(k.to_vec());
                    visited < PRUNE_BATCH
                })
                .await?;
            deleted += deletes.len();
            if !deletes.is_empty() {
                self.store.apply_async(Vec::new(), deletes).await?;
            }
            match last {
                Some(mut k) if visited == PRUNE_BATCH && !past_floor => {
                    // The smallest key after `k`.
                    k.push(0);
                    start = k;
                }
                _ => return Ok(deleted),
            }
        }
    }

    /// The blob keys the channel chains of `kept` reach.
    async fn needed_blobs(
        &self,
        thread: &str,
        ns: &str,
        kept: &[Checkpoint],
    ) -> Result<HashSet<Vec<u8>>, CheckpointError> {
        let mut needed: HashSet<Vec<u8>> = HashSet::new();
        for c in kept {
            for (channel, version) in &c.channel_versions {
                let mut at = Some(*version);
                while let Some(v) = at {
                    let key = keys::blob(thread, ns, channel, v);
                    if !needed.insert(key.clone()) {
                        break;
                    }
                    at = match self.store.get_async(&key).await? {
                        Some(bytes) => match decode_entry(&key, &bytes)? {
                            ChannelEntry::Delta { prev, .. } => prev,
                            _ => None,
                        },
                        None => None,
                    };
                }
            }
        }
        Ok(needed)
    }
}
