//! Pruning: all but the newest checkpoints of a namespace dropped, with their pending writes
//! and the blobs no kept checkpoint's chain still reaches.

use super::encode::{decode, decode_entry};
use super::{AsyncKvStore, KvCheckpointer};
use crate::checkpoint::keys;
use crate::checkpoint::{ChannelEntry, Checkpoint, CheckpointError, PruneStats};
use std::collections::HashSet;

impl<S: AsyncKvStore> KvCheckpointer<S> {
    /// Keeps the newest `keep` checkpoints of a namespace, deleting the rest.
    pub(super) async fn prune_ns(
        &self,
        thread: &str,
        ns: &str,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        let prefix = keys::ns_prefix(keys::CHECKPOINT, thread, ns);
        let mut ids: Vec<(Vec<u8>, Checkpoint)> = Vec::new();
        let mut err = None;
        self.scan_prefix(
            &prefix,
            true,
            &mut |k, v| match decode::<Checkpoint>(k, v) {
                Ok(c) => {
                    ids.push((k.to_vec(), c));
                    true
                }
                Err(e) => {
                    err = Some(e);
                    false
                }
            },
        )
        .await?;
        if let Some(e) = err {
            return Err(e);
        }
        if ids.len() <= keep {
            return Ok(PruneStats::default());
        }
        let (kept, dropped) = ids.split_at(keep);
        // Blobs still needed: walk each kept checkpoint's channel chains.
        let mut needed: HashSet<Vec<u8>> = HashSet::new();
        for (_, c) in kept {
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
        let mut stats = PruneStats::default();
        let mut deletes = Vec::new();
        for (key, c) in dropped {
            deletes.push(key.clone());
            stats.checkpoints += 1;
            let wp = keys::writes_prefix(thread, ns, c.id);
            self.scan_prefix(&wp, false, &mut |k, _| {
                deletes.push(k.to_vec());
                stats.writes += 1;
                true
            })
            .await?;
        }
        let bp = keys::ns_prefix(keys::BLOB, thread, ns);
        self.scan_prefix(&bp, false, &mut |k, _| {
            if !needed.contains(k) {
                deletes.push(k.to_vec());
                stats.blobs += 1;
            }
            true
        })
        .await?;
        self.store.apply_async(Vec::new(), deletes).await?;
        Ok(stats)
    }
}
