//! The checkpointer logic over any ordered key-value store; sled and memory plug in below it.

use super::keys;
use super::{
    special, ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PendingWrite, PruneStats,
};
use crate::ids::CheckpointId;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// An ordered byte-key store with atomic batches.
#[async_trait]
pub trait KvStore: Send + Sync + 'static {
    /// One value.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError>;
    /// Visits keys in `[start, end)` in order (or reverse order) until `visit` returns false.
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), CheckpointError>;
    /// Applies puts and deletes atomically.
    fn apply(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError>;
    /// Makes every applied batch durable.
    async fn flush(&self) -> Result<(), CheckpointError>;
}

/// The visitor of [`AsyncKvStore::scan_async`]: called with each key and value, returns whether
/// to go on.
pub type KvVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> bool + Send + 'a;

/// The asynchronous form of [`KvStore`], which [`KvCheckpointer`] is written against: a store
/// behind a network round trip (PostgreSQL) implements this one directly, while every
/// synchronous [`KvStore`] (memory, sled) gets it through the blanket impl below, unchanged.
///
/// The contract is the same as [`KvStore`]'s: keys are compared as unsigned bytes, `scan`
/// visits `[start, end)` in key order (or reverse) until `visit` returns false, and `apply`
/// is atomic (deletes first, then puts, so a key both deleted and put ends up put).
#[async_trait]
pub trait AsyncKvStore: Send + Sync + 'static {
    /// One value.
    async fn get_async(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError>;
    /// Visits keys in `[start, end)` in order (or reverse order) until `visit` returns false.
    async fn scan_async(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut KvVisitor<'_>,
    ) -> Result<(), CheckpointError>;
    /// Applies puts and deletes atomically.
    async fn apply_async(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError>;
    /// Makes every applied batch durable.
    async fn flush_async(&self) -> Result<(), CheckpointError>;
}

#[async_trait]
impl<T: KvStore> AsyncKvStore for T {
    async fn get_async(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError> {
        KvStore::get(self, key)
    }

    async fn scan_async(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut KvVisitor<'_>,
    ) -> Result<(), CheckpointError> {
        KvStore::scan(self, start, end, reverse, visit)
    }

    async fn apply_async(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        KvStore::apply(self, puts, deletes)
    }

    async fn flush_async(&self) -> Result<(), CheckpointError> {
        KvStore::flush(self).await
    }
}

/// A [`Checkpointer`] over a [`KvStore`] or, more generally, an [`AsyncKvStore`].
pub struct KvCheckpointer<S> {
    pub(crate) store: S,
}

fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, CheckpointError> {
    serde_json::to_vec(v).map_err(|e| CheckpointError::Backend(format!("encode: {e}")))
}

fn decode<T: DeserializeOwned>(key: &[u8], bytes: &[u8]) -> Result<T, CheckpointError> {
    serde_json::from_slice(bytes).map_err(|e| CheckpointError::Corrupt {
        key: keys::render(key),
        reason: e.to_string(),
    })
}

// Channel blobs are the bulk of the store and are read back in long chains on resume, so they
// get a compact layout instead of self-describing JSON: one tag byte, then
//   Set:   the value as JSON
//   Delta: a flag byte (1 = has prev), 16 bytes of prev id if present, the writes as a JSON list
//   Clear: nothing
const TAG_SET: u8 = 1;
const TAG_DELTA: u8 = 2;
const TAG_CLEAR: u8 = 3;

fn encode_entry(e: &ChannelEntry) -> Result<Vec<u8>, CheckpointError> {
    let mut out = Vec::new();
    match e {
        ChannelEntry::Set(v) => {
            out.push(TAG_SET);
            write_json(&mut out, v)?;
        }
        ChannelEntry::Delta { prev, writes } => {
            out.push(TAG_DELTA);
            match prev {
                Some(p) => {
                    out.push(1);
                    out.extend_from_slice(&p.to_bytes());
                }
                None => out.push(0),
            }
            write_json(&mut out, writes)?;
        }
        ChannelEntry::Clear => out.push(TAG_CLEAR),
    }
    Ok(out)
}

fn decode_entry(key: &[u8], bytes: &[u8]) -> Result<ChannelEntry, CheckpointError> {
    let corrupt = |reason: &str| CheckpointError::Corrupt {
        key: keys::render(key),
        reason: reason.to_string(),
    };
    let (&tag, rest) = bytes.split_first().ok_or_else(|| corrupt("empty blob"))?;
    match tag {
        TAG_SET => Ok(ChannelEntry::Set(decode(key, rest)?)),
        TAG_DELTA => {
            let (&flag, rest) = rest
                .split_first()
                .ok_or_else(|| corrupt("truncated delta"))?;
            let (prev, rest) = if flag == 1 {
                let id: [u8; 16] = rest
                    .get(..16)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| corrupt("truncated prev id"))?;
                (Some(CheckpointId::from_bytes(id)), &rest[16..])
            } else {
                (None, rest)
            };
            Ok(ChannelEntry::Delta {
                prev,
                writes: decode(key, rest)?,
            })
        }
        TAG_CLEAR => Ok(ChannelEntry::Clear),
        other => Err(corrupt(&format!("unknown blob tag {other}"))),
    }
}

fn write_json<T: serde::Serialize>(out: &mut Vec<u8>, v: &T) -> Result<(), CheckpointError> {
    serde_json::to_writer(out, v).map_err(|e| CheckpointError::Backend(format!("encode: {e}")))
}

fn special_index(channel: &str) -> Option<i64> {
    [
        special::ERROR,
        special::INTERRUPT,
        special::RESUME,
        special::DONE,
        special::SEQ,
    ]
    .into_iter()
    .find(|(name, _)| *name == channel)
    .map(|(_, idx)| idx)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StoredWrite {
    channel: String,
    value: Value,
}

impl<S: AsyncKvStore> KvCheckpointer<S> {
    /// Wraps a store.
    pub fn with_store(store: S) -> Self {
        KvCheckpointer { store }
    }

    /// The underlying store.
    pub fn store(&self) -> &S {
        &self.store
    }

    async fn scan_prefix(
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
    async fn namespaces(&self, thread: &str) -> Result<Vec<String>, CheckpointError> {
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

    async fn prune_ns(
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

#[async_trait]
impl<S: AsyncKvStore> Checkpointer for KvCheckpointer<S> {
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError> {
        keys::check("thread id", thread)?;
        keys::check("namespace", ns)?;
        let mut puts = Vec::with_capacity(blobs.len() + 2);
        for (channel, entry) in blobs {
            keys::check("channel", channel)?;
            puts.push((
                keys::blob(thread, ns, channel, checkpoint.id),
                encode_entry(entry)?,
            ));
        }
        puts.push((
            keys::checkpoint(thread, ns, checkpoint.id),
            encode(checkpoint)?,
        ));
        puts.push((keys::thread_marker(thread), Vec::new()));
        self.store.apply_async(puts, Vec::new()).await
    }

    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError> {
        keys::check("thread id", thread)?;
        keys::check("namespace", ns)?;
        keys::check("task id", task_id)?;
        let mut puts = Vec::with_capacity(writes.len());
        let mut next = 0i64;
        for (channel, value) in writes {
            let idx = special_index(channel).unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            let rec = StoredWrite {
                channel: channel.clone(),
                value: value.clone(),
            };
            puts.push((keys::write(thread, ns, id, task_id, idx), encode(&rec)?));
        }
        self.store.apply_async(puts, Vec::new()).await
    }

    async fn get(
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

    async fn list(
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

    async fn channel_entries(
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

    async fn list_threads(&self) -> Result<Vec<String>, CheckpointError> {
        let mut out = Vec::new();
        self.scan_prefix(&[keys::THREAD], false, &mut |k, _| {
            out.push(String::from_utf8_lossy(&k[1..]).into_owned());
            true
        })
        .await?;
        Ok(out)
    }

    async fn delete_thread(&self, thread: &str) -> Result<(), CheckpointError> {
        keys::check("thread id", thread)?;
        let mut deletes = vec![keys::thread_marker(thread)];
        for kind in [keys::CHECKPOINT, keys::BLOB, keys::WRITE] {
            self.scan_prefix(&keys::thread_prefix(kind, thread), false, &mut |k, _| {
                deletes.push(k.to_vec());
                true
            })
            .await?;
        }
        self.store.apply_async(Vec::new(), deletes).await
    }

    async fn prune(
        &self,
        thread: Option<&str>,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        let threads = match thread {
            Some(t) => {
                keys::check("thread id", t)?;
                vec![t.to_string()]
            }
            None => self.list_threads().await?,
        };
        let mut total = PruneStats::default();
        for t in &threads {
            for ns in self.namespaces(t).await? {
                let s = self.prune_ns(t, &ns, keep).await?;
                total.checkpoints += s.checkpoints;
                total.blobs += s.blobs;
                total.writes += s.writes;
            }
        }
        Ok(total)
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.store.flush_async().await
    }
}

/// Groups pending writes by task id, keeping each task's writes in index order.
pub fn writes_by_task(writes: &[PendingWrite]) -> BTreeMap<&str, Vec<&PendingWrite>> {
    let mut out: BTreeMap<&str, Vec<&PendingWrite>> = BTreeMap::new();
    for w in writes {
        out.entry(w.task_id.as_str()).or_default().push(w);
    }
    out
}
