//! The in-memory side of the logs: each thread's ring, its hub for live readers, and the hubs.

use super::{EventLimits, StoredEvent};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;

/// One thread's log in memory.
pub(super) struct Ring {
    pub(super) events: VecDeque<StoredEvent>,
    pub(super) bytes: usize,
    /// The id the next event gets.
    pub(super) next_seq: u64,
    /// The newest id stored in a pack (0: none); events after it are stored one per key.
    pub(super) packed_upto: u64,
    /// The packs on disk, oldest first, as (first, last) ids.
    pub(super) packs: VecDeque<(u64, u64)>,
    /// The thread has its `n` key on disk (the index of threads with events): written with
    /// the first event appended while this is unset.
    pub(super) indexed: bool,
}

impl Ring {
    pub(super) fn new() -> Self {
        Ring {
            events: VecDeque::new(),
            bytes: 0,
            next_seq: 1,
            packed_upto: 0,
            packs: VecDeque::new(),
            indexed: false,
        }
    }

    /// Drops the oldest events past the bounds (the newest is always kept); returns their ids.
    pub(super) fn trim(&mut self, limits: EventLimits) -> Vec<u64> {
        let mut removed = Vec::new();
        while self.events.len() > 1
            && (self.events.len() > limits.events.max(1) || self.bytes > limits.bytes)
        {
            if let Some(old) = self.events.pop_front() {
                self.bytes -= old.json.len();
                removed.push(old.seq);
            }
        }
        removed
    }
}

/// A thread's log plus the watch that wakes live readers.
pub(crate) struct Hub {
    pub(super) ring: Mutex<Ring>,
    /// The newest id readers may see (durable on sled; every appended id in memory).
    pub(super) published: AtomicU64,
    pub(super) tx: watch::Sender<u64>,
}

impl Hub {
    pub(super) fn lock(&self) -> MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Published events with an id greater than `after`, oldest first.
    pub(crate) fn after(&self, after: u64) -> Vec<StoredEvent> {
        let upto = self.published.load(Ordering::Acquire);
        let ring = self.lock();
        let start = ring.events.partition_point(|e| e.seq <= after);
        let end = ring.events.partition_point(|e| e.seq <= upto);
        ring.events.range(start..end.max(start)).cloned().collect()
    }

    /// The id of the newest published event (0 when none was ever written).
    pub(crate) fn last_seq(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }

    /// Lets readers see the events up to `seq`.
    pub(super) fn publish(&self, seq: u64) {
        let newest = self.published.fetch_max(seq, Ordering::AcqRel).max(seq);
        self.tx.send_replace(newest);
    }

    /// A receiver that changes whenever an event is appended.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

/// The hubs in memory, and when to look for idle ones next.
pub(super) struct Hubs {
    pub(super) map: HashMap<String, Arc<Hub>>,
    /// Sweep when the map grows past this (twice what the last sweep left, at least
    /// [`SWEEP_FROM`]), so sweeping costs O(1) per new hub.
    pub(super) sweep_at: usize,
}

/// Below this many hubs nothing is evicted.
pub(super) const SWEEP_FROM: usize = 1024;

impl Hubs {
    /// Drops the hubs nobody uses and that can be rebuilt: nobody holds one but the map (no
    /// reader, no run, no flush waiting to publish), and its events are on disk or it has
    /// none. A stream opened on a thread that never had events leaves nothing behind.
    pub(super) fn sweep(&mut self, persistent: bool) {
        self.map.retain(|_, hub| {
            Arc::strong_count(hub) > 1 || (!persistent && hub.lock().next_seq > 1)
        });
        self.sweep_at = (2 * self.map.len()).max(SWEEP_FROM);
    }
}
