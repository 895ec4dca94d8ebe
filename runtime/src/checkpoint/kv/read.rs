//! The read side: scans under a key prefix, pending writes, the checkpoints of a thread
//! (one, or a filtered listing over its namespaces) and the folding of a channel's blob chain.

use super::encode::{decode, decode_entry, StoredWrite};
use super::{AsyncKvStore, KvCheckpointer, KvVisitor};
use crate::checkpoint::keys;
use crate::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, ListQuery, PendingWrite,
};
use crate::ids::CheckpointId;

impl<S: AsyncKvStore> KvCheckpointer<S> {
    pub(super) async fn scan_prefix(
        &self,
        prefix: &[u8],
        reverse: bool,
        visit: &mut KvVisitor<'_>,
    ) -> Result<(), CheckpointError> {
        self.store
            .scan_async(prefix, &keys::prefix_end(prefix), reverse, visit)
            .await
    }

    async fn pending_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
    ) -> Result<Vec<PendingWrite>, CheckpointError> {
        let prefix = keys::writes_prefix(thread, ns, id);
        let mut out = Vec::new();
        let mut err = None;
        self.scan_prefix(&prefix, false, &mut |k, v| {
            let tail = &k[prefix.len()..];
            let Some((task, idx)) = keys::split_ns(tail) else {
                return true;
            };
            let idx = idx
                .try_into()
                .map(|b: [u8; 8]| (u64::from_be_bytes(b) ^ (1 << 63)) as i64)
                .unwrap_or(0);
            match decode::<StoredWrite>(k, v) {
                Ok(w) => out.push(PendingWrite {
                    task_id: String::from_utf8_lossy(task).into_owned(),
                    idx,
                    channel: w.channel,
                    value: w.value,
                }),
                Err(e) => {
                    err = Some(e);
                    return false;
                }
            }
            true
        })
        .await?;
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    async fn tuple(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: Checkpoint,
    ) -> Result<CheckpointTuple, CheckpointError> {
        let pending_writes = self.pending_writes(thread, ns, checkpoint.id).await?;
        Ok(CheckpointTuple {
            thread_id: thread.to_string(),
            ns: ns.to_string(),
            checkpoint,
            pending_writes,
        })
    }

    /// Every namespace of a thread.
    pub(super) async fn namespaces(&self, thread: &str) -> Result<Vec<String>, CheckpointError> {
        let prefix = keys::thread_prefix(keys::CHECKPOINT, thread);
        let mut out: Vec<String> = Vec::new();
        self.scan_prefix(&prefix, false, &mut |k: &[u8], _: &[u8]| {
            if let Some((ns, _)) = keys::split_ns(&k[prefix.len()..]) {
                let ns = String::from_utf8_lossy(ns).into_owned();
                if out.last() != Some(&ns) {
                    out.push(ns);
                }
            }
            true
        })
        .await?;
        out.dedup();
        Ok(out)
    }

    /// The checkpoint `id` of a thread's namespace, or its latest, with its pending writes.
    pub(super) async fn get_tuple(
        &self,
        thread: &str,
        ns: &str,
        id: Option<CheckpointId>,
    ) -> Result<Option<CheckpointTuple>, CheckpointError> {
        keys::check("thread id", thread)?;
        keys::check("namespace", ns)?;
        let found = match id {
            Some(id) => {
                let key = keys::checkpoint(thread, ns, id);
                match self.store.get_async(&key).await? {
                    Some(v) => Some(decode::<Checkpoint>(&key, &v)?),
                    None => None,
                }
            }
            None => {
                let prefix = keys::ns_prefix(keys::CHECKPOINT, thread, ns);
                let mut found = None;
                self.scan_prefix(&prefix, true, &mut |k, v| {
                    found = Some(decode::<Checkpoint>(k, v));
                    false
                })
                .await?;
                found.transpose()?
            }
        };
        match found {
            Some(c) => Ok(Some(self.tuple(thread, ns, c).await?)),
            None => Ok(None),
        }
    }

    /// The checkpoints of a thread matching `query`, newest first, with their pending writes.
    pub(super) async fn list_tuples(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError> {
        keys::check("thread id", thread)?;
        if let Some(ns) = &query.ns {
            keys::check("namespace", ns)?;
        }
        let namespaces = match &query.ns {
            Some(ns) => vec![ns.clone()],
            None => self.namespaces(thread).await?,
        };
        let limit = query.limit.unwrap_or(usize::MAX);
        let mut found: Vec<(String, Checkpoint)> = Vec::new();
        for ns in &namespaces {
            let prefix = keys::ns_prefix(keys::CHECKPOINT, thread, ns);
            let end = match query.before {
                Some(b) => keys::checkpoint(thread, ns, b),
                None => keys::prefix_end(&prefix),
            };
            let mut err = None;
            let mut taken = 0;
            self.store
                .scan_async(
                    &prefix,
                    &end,
                    true,
                    &mut |k, v| match decode::<Checkpoint>(k, v) {
                        Ok(c) => {
                            if c.matches(&query.filter) {
                                found.push((ns.clone(), c));
                                taken += 1;
                            }
                            taken < limit
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
        }
        found.sort_by_key(|f| std::cmp::Reverse(f.1.id));
        found.truncate(limit);
        let mut out = Vec::with_capacity(found.len());
        for (ns, c) in found {
            out.push(self.tuple(thread, &ns, c).await?);
        }
        Ok(out)
    }

    /// The entries of a channel's blob chain ending at `version`, oldest first.
    pub(super) async fn blob_chain(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError> {
        keys::check("thread id", thread)?;
        keys::check("namespace", ns)?;
        keys::check("channel", channel)?;
        // One reverse range scan over the channel's blobs, following `prev` links: blobs of
        // other branches (forks) in between are skipped without being decoded.
        let mut prefix = keys::ns_prefix(keys::BLOB, thread, ns);
        prefix.extend_from_slice(channel.as_bytes());
        prefix.push(0);
        let mut end = keys::blob(thread, ns, channel, version);
        end.push(0);
        let mut out = Vec::new();
        let mut want = Some(version);
        let mut err = None;
        self.store
            .scan_async(&prefix, &end, true, &mut |k, v| {
                let Some(w) = want else { return false };
                let id = k
                    .get(prefix.len()..)
                    .and_then(|b| <[u8; 16]>::try_from(b).ok())
                    .map(CheckpointId::from_bytes);
                match id {
                    Some(id) if id == w => match decode_entry(k, v) {
                        Ok(entry) => {
                            want = match &entry {
                                ChannelEntry::Delta { prev, .. } => *prev,
                                _ => None,
                            };
                            out.push((id, entry));
                            want.is_some()
                        }
                        Err(e) => {
                            err = Some(e);
                            false
                        }
                    },
                    Some(id) if id > w => true,
                    _ => false,
                }
            })
            .await?;
        if let Some(e) = err {
            return Err(e);
        }
        if let Some(missing) = want {
            return Err(CheckpointError::MissingBlob {
                thread: thread.to_string(),
                channel: channel.to_string(),
                version: missing,
            });
        }
        out.reverse();
        Ok(out)
    }
}
