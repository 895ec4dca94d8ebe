//! The checkpointer logic over any ordered key-value store; sled and memory plug in below it,
//! PostgreSQL through [`AsyncKvStore`].
//!
//! The store traits and the [`Checkpointer`] impl are here; the byte layout of records and blobs
//! is in `encode`, the reads (listing, blob chains) in `read`, pruning in `prune`.

mod encode;
mod prune;
mod read;

use super::keys;
use super::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PendingWrite, PruneStats,
};
use crate::ids::CheckpointId;
use async_trait::async_trait;
use encode::{decode_entry, encode, encode_entry, special_index, StoredWrite};
use serde_json::Value;
use std::collections::BTreeMap;

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

impl<S: AsyncKvStore> KvCheckpointer<S> {
    /// Wraps a store.
    pub fn with_store(store: S) -> Self {
        KvCheckpointer { store }
    }

    /// The underlying store.
    pub fn store(&self) -> &S {
        &self.store
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
        self.get_tuple(thread, ns, id).await
    }

    async fn list(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError> {
        self.list_tuples(thread, query).await
    }

    async fn channel_entries(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError> {
        self.blob_chain(thread, ns, channel, version).await
    }

    async fn blob(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        id: CheckpointId,
    ) -> Result<Option<ChannelEntry>, CheckpointError> {
        keys::check("thread id", thread)?;
        keys::check("namespace", ns)?;
        keys::check("channel", channel)?;
        let key = keys::blob(thread, ns, channel, id);
        match self.store.get_async(&key).await? {
            Some(bytes) => decode_entry(&key, &bytes).map(Some),
            None => Ok(None),
        }
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
