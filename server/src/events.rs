//! Per-thread event logs: a bounded ring (by count and by bytes) of serialized envelopes,
//! mirrored in a sled database when one is configured, with a watch channel for live readers.
//!
//! On sled, an event reaches readers only once it is durable: each append asks the store's
//! [`GroupCommit`] for a flush (appends of every thread share them) and publishes the event when
//! it returns. A client has therefore never seen an id the disk does not hold, so after a crash
//! the ids continue above everything any client received and `Last-Event-ID` replay is exact.

use crate::error::ServerError;
use crate::versions::GraphVersion;
use agentgraph_runtime::checkpoint::GroupCommit;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The bounds of one thread's log.
#[derive(Debug, Clone, Copy)]
pub struct EventLimits {
    /// Events kept per thread (at least one).
    pub events: usize,
    /// Bytes of serialized envelopes kept per thread (the newest event is always kept).
    pub bytes: usize,
}

/// One stored event: its id (the SSE `id`, equal to the envelope's `seq`) and its JSON text.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// Rises by one per thread and never repeats, across runs and restarts.
    pub seq: u64,
    /// The envelope `{seq, ns, mode, node, data}` as JSON text.
    pub json: Arc<str>,
}

/// What a replaying reader gets.
#[derive(Debug, Clone)]
pub enum Replayed {
    /// The next event.
    Event(StoredEvent),
    /// Events `from..=to` that the bounded log no longer holds.
    Gap {
        /// The first missing id.
        from: u64,
        /// The last missing id.
        to: u64,
    },
}

/// One thread's log in memory.
struct Ring {
    events: VecDeque<StoredEvent>,
    bytes: usize,
    /// The id the next event gets.
    next_seq: u64,
}

/// A thread's log plus the watch that wakes live readers.
pub(crate) struct Hub {
    ring: Mutex<Ring>,
    /// The newest id readers may see (durable on sled; every appended id in memory).
    published: AtomicU64,
    tx: watch::Sender<u64>,
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, Ring> {
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
    fn publish(&self, seq: u64) {
        let newest = self.published.fetch_max(seq, Ordering::AcqRel).max(seq);
        self.tx.send_replace(newest);
    }

    /// A receiver that changes whenever an event is appended.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

struct Trees {
    /// `thread 0x00 seq(u64 BE)` → envelope JSON.
    events: sled::Tree,
    /// `n thread` → next seq (u64 BE); `g thread` → the graph the thread last ran; `r thread`
    /// → the id of the run in flight on the thread (removed when it ends); `v thread` → the
    /// id of the graph version the thread is pinned to (removed when its run ends for good).
    meta: sled::Tree,
    /// Graph version id → the version as JSON ([`GraphVersion`]); shared by every thread
    /// pinned to it, dropped by [`EventStore::prune_versions`] once none is.
    versions: sled::Tree,
    db: sled::Db,
    /// Shares flushes between the appends of every thread.
    commit: GroupCommit,
}

/// Every thread's event log.
pub struct EventStore {
    trees: Option<Trees>,
    limits: EventLimits,
    hubs: Mutex<HashMap<String, Arc<Hub>>>,
    graphs: Mutex<HashMap<String, String>>,
}

fn event_key(thread: &str, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 9);
    k.extend_from_slice(thread.as_bytes());
    k.push(0);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

fn meta_key(tag: u8, thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(thread.len() + 1);
    k.push(tag);
    k.extend_from_slice(thread.as_bytes());
    k
}

fn storage(e: sled::Error) -> ServerError {
    ServerError::Storage(e.to_string())
}

impl EventStore {
    /// Logs kept in memory only (lost on restart).
    pub fn memory(limits: EventLimits) -> Self {
        EventStore {
            trees: None,
            limits,
            hubs: Mutex::new(HashMap::new()),
            graphs: Mutex::new(HashMap::new()),
        }
    }

    /// Logs persisted in the sled database in folder `dir` (trees `events` and `threads`).
    pub fn open(dir: &std::path::Path, limits: EventLimits) -> Result<Self, ServerError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::LowSpace)
            .open()
            .map_err(|e| ServerError::Storage(format!("opening {}: {e}", dir.display())))?;
        let events = db.open_tree("events").map_err(storage)?;
        let meta = db.open_tree("threads").map_err(storage)?;
        let versions = db.open_tree("graph_versions").map_err(storage)?;
        // As the sled checkpointer does: sled's flush, then an `fdatasync` of its log file so
        // the events survive a power loss too, not only a killed process.
        let log_path = dir.join("db");
        let log = std::fs::File::open(&log_path)
            .map_err(|e| ServerError::Storage(format!("opening {}: {e}", log_path.display())))?;
        let flushed = db.clone();
        let commit = GroupCommit::new(move || {
            flushed.flush().map_err(|e| e.to_string())?;
            log.sync_data().map_err(|e| format!("fdatasync: {e}"))
        });
        Ok(EventStore {
            trees: Some(Trees {
                events,
                meta,
                versions,
                db,
                commit,
            }),
            ..Self::memory(limits)
        })
    }

    /// The hub of `thread`, loading its log from disk on first use.
    pub(crate) fn hub(&self, thread: &str) -> Result<Arc<Hub>, ServerError> {
        let mut hubs = self.hubs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = hubs.get(thread) {
            return Ok(h.clone());
        }
        let mut ring = Ring {
            events: VecDeque::new(),
            bytes: 0,
            next_seq: 1,
        };
        if let Some(t) = &self.trees {
            let mut prefix = thread.as_bytes().to_vec();
            prefix.push(0);
            for kv in t.events.scan_prefix(&prefix) {
                let (k, v) = kv.map_err(storage)?;
                let Some(seq) = k
                    .get(prefix.len()..)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_be_bytes)
                else {
                    continue;
                };
                let json: Arc<str> = Arc::from(String::from_utf8_lossy(&v).as_ref());
                ring.bytes += json.len();
                ring.events.push_back(StoredEvent { seq, json });
                ring.next_seq = ring.next_seq.max(seq + 1);
            }
            if let Some(v) = t.meta.get(meta_key(b'n', thread)).map_err(storage)? {
                if let Ok(b) = <[u8; 8]>::try_from(v.as_ref()) {
                    ring.next_seq = ring.next_seq.max(u64::from_be_bytes(b));
                }
            }
        }
        // What the disk holds was published before (or is at least durable now).
        let last = ring.next_seq.saturating_sub(1);
        let (tx, _) = watch::channel(last);
        let hub = Arc::new(Hub {
            ring: Mutex::new(ring),
            published: AtomicU64::new(last),
            tx,
        });
        hubs.insert(thread.to_string(), hub.clone());
        Ok(hub)
    }

    /// Appends an event envelope `{ns, mode, node, data}` to the thread's log with the
    /// thread's next id as its `seq` (any `seq` it carries, such as the runtime's per-run
    /// numbering, is replaced: this is the one place event ids are assigned), trims the ring to
    /// its bounds and wakes live readers once the event is durable (at once in memory). Returns
    /// the id.
    pub fn append(&self, thread: &str, mut envelope: Value) -> Result<u64, ServerError> {
        let hub = self.hub(thread)?;
        let seq = {
            let mut ring = hub.lock();
            let seq = ring.next_seq;
            if let Some(o) = envelope.as_object_mut() {
                o.insert("seq".into(), Value::from(seq));
            }
            let json: Arc<str> = Arc::from(envelope.to_string());
            let mut removed = Vec::new();
            ring.bytes += json.len();
            ring.events.push_back(StoredEvent {
                seq,
                json: json.clone(),
            });
            ring.next_seq = seq + 1;
            while ring.events.len() > 1
                && (ring.events.len() > self.limits.events.max(1) || ring.bytes > self.limits.bytes)
            {
                if let Some(old) = ring.events.pop_front() {
                    ring.bytes -= old.json.len();
                    removed.push(old.seq);
                }
            }
            if let Some(t) = &self.trees {
                let mut batch = sled::Batch::default();
                batch.insert(event_key(thread, seq), json.as_bytes());
                for old in removed {
                    batch.remove(event_key(thread, old));
                }
                t.events.apply_batch(batch).map_err(storage)?;
                t.meta
                    .insert(meta_key(b'n', thread), &(seq + 1).to_be_bytes())
                    .map_err(storage)?;
            }
            seq
        };
        match &self.trees {
            None => hub.publish(seq),
            Some(t) => match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let commit = t.commit.clone();
                    rt.spawn(async move {
                        let flushed = commit.flush().await;
                        // Not kept past the flush: it holds the database open.
                        drop(commit);
                        if let Err(e) = flushed {
                            // Readers still get the event: hiding the log for good would be
                            // worse than a replay that may miss it after a crash.
                            tracing::error!(error = %e, "flushing the event log failed");
                        }
                        hub.publish(seq);
                    });
                }
                Err(_) => {
                    t.db.flush().map_err(storage)?;
                    hub.publish(seq);
                }
            },
        }
        Ok(seq)
    }

    /// The id the next event of `thread` gets.
    pub fn next_seq(&self, thread: &str) -> Result<u64, ServerError> {
        Ok(self.hub(thread)?.lock().next_seq)
    }

    /// Makes the next event of `thread` get an id of at least `next` (ids another server gave
    /// out for the thread are never given again here). Never lowers it.
    pub fn advance(&self, thread: &str, next: u64) -> Result<(), ServerError> {
        let hub = self.hub(thread)?;
        let mut ring = hub.lock();
        if next <= ring.next_seq {
            return Ok(());
        }
        ring.next_seq = next;
        if let Some(t) = &self.trees {
            t.meta
                .insert(meta_key(b'n', thread), &next.to_be_bytes())
                .map_err(storage)?;
        }
        Ok(())
    }

    /// The events of `thread` after id `last` (default: only new ones), then the live ones as
    /// they are appended, until `stop` fires; ids the log dropped come as one
    /// [`Replayed::Gap`].
    pub fn replay(
        &self,
        thread: &str,
        last: Option<u64>,
        stop: CancellationToken,
    ) -> Result<impl futures::Stream<Item = Replayed> + Send + 'static, ServerError> {
        struct Reader {
            hub: Arc<Hub>,
            rx: watch::Receiver<u64>,
            last: u64,
            buf: VecDeque<StoredEvent>,
            stop: CancellationToken,
        }
        let hub = self.hub(thread)?;
        let reader = Reader {
            rx: hub.subscribe(),
            last: last.unwrap_or_else(|| hub.last_seq()),
            hub,
            buf: VecDeque::new(),
            stop,
        };
        Ok(futures::stream::unfold(reader, |mut r| async move {
            loop {
                if let Some(e) = r.buf.pop_front() {
                    if e.seq > r.last + 1 {
                        let gap = Replayed::Gap {
                            from: r.last + 1,
                            to: e.seq - 1,
                        };
                        r.last = e.seq - 1;
                        r.buf.push_front(e);
                        return Some((gap, r));
                    }
                    r.last = e.seq;
                    return Some((Replayed::Event(e), r));
                }
                r.rx.borrow_and_update();
                let fresh = r.hub.after(r.last);
                if !fresh.is_empty() {
                    r.buf.extend(fresh);
                    continue;
                }
                tokio::select! {
                    changed = r.rx.changed() => if changed.is_err() { return None },
                    _ = r.stop.cancelled() => return None,
                }
            }
        }))
    }

    /// Records the graph (relative name) a thread last ran.
    pub fn set_graph(&self, thread: &str, graph: &str) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            t.meta
                .insert(meta_key(b'g', thread), graph.as_bytes())
                .map_err(storage)?;
        }
        self.graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(thread.to_string(), graph.to_string());
        Ok(())
    }

    /// Records the run in flight on a thread (`None` once it has ended), so a restart after a
    /// kill knows which run to end even when the bounded log no longer holds its `started`
    /// event (see [`EventStore::close_unfinished_runs`]).
    pub fn set_running(&self, thread: &str, run_id: Option<&str>) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            let key = meta_key(b'r', thread);
            match run_id {
                Some(id) => t.meta.insert(key, id.as_bytes()).map(|_| ()),
                None => t.meta.remove(key).map(|_| ()),
            }
            .map_err(storage)?;
        }
        Ok(())
    }

    /// The graph a thread last ran, if known.
    pub fn graph_of(&self, thread: &str) -> Result<Option<String>, ServerError> {
        if let Some(g) = self
            .graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(thread)
        {
            return Ok(Some(g.clone()));
        }
        match &self.trees {
            Some(t) => Ok(t
                .meta
                .get(meta_key(b'g', thread))
                .map_err(storage)?
                .map(|v| String::from_utf8_lossy(&v).into_owned())),
            None => Ok(None),
        }
    }

    /// Ends the logs a previous process left mid-run. A thread whose newest event is not a
    /// run-end event (a `run` event other than `started`) had a run in flight when that process
    /// stopped without a graceful shutdown (killed, crashed, or past the shutdown grace); it gets
    /// a `run` event `{status: "interrupted", run_id, reason}` so clients replaying the log see
    /// the run end. `run_id` is the one [`EventStore::set_running`] recorded, else the one of
    /// the newest `run started` event still in the log (else `null`). Its checkpoint is there: resuming the
    /// thread continues the run. Call it before serving; returns the threads it ended.
    pub fn close_unfinished_runs(&self) -> Result<Vec<String>, ServerError> {
        self.close_unfinished_runs_because(
            "the server stopped during the run; resume the thread to continue",
        )
    }

    /// [`EventStore::close_unfinished_runs`] with another `reason` in the end events (a server
    /// with run leases says that the run is continued, here or elsewhere).
    pub fn close_unfinished_runs_because(&self, reason: &str) -> Result<Vec<String>, ServerError> {
        let Some(t) = &self.trees else {
            return Ok(Vec::new());
        };
        // Every thread that ever logged an event has its next id in `meta` (`n thread`).
        let mut threads = Vec::new();
        for kv in t.meta.scan_prefix([b'n']) {
            let (k, _) = kv.map_err(storage)?;
            if let Some(name) = k.get(1..) {
                threads.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        let mut closed = Vec::new();
        for thread in threads {
            let mut prefix = thread.as_bytes().to_vec();
            prefix.push(0);
            // Newest first: only the events after the newest `run` event are read.
            let running = t.meta.get(meta_key(b'r', &thread)).map_err(storage)?;
            let mut open = None;
            for kv in t.events.scan_prefix(&prefix).rev() {
                let (_, v) = kv.map_err(storage)?;
                let Ok(ev) = serde_json::from_slice::<serde_json::Value>(&v) else {
                    open.get_or_insert(serde_json::Value::Null);
                    continue;
                };
                if ev["mode"] != "run" {
                    // A run's own event after its `started`: the run did not end.
                    open.get_or_insert(serde_json::Value::Null);
                    continue;
                }
                if ev["data"]["status"] == "started" {
                    open = Some(ev["data"]["run_id"].clone());
                }
                break;
            }
            let run_id = match (running, open) {
                (_, None) => {
                    // The log ends with an end event: the run was closed (a leftover marker
                    // only means the process stopped between the two writes).
                    self.set_running(&thread, None)?;
                    continue;
                }
                (Some(id), Some(_)) => {
                    serde_json::Value::String(String::from_utf8_lossy(&id).into_owned())
                }
                (None, Some(id)) => id,
            };
            self.append(
                &thread,
                serde_json::json!({
                    "ns": [], "mode": "run", "node": null,
                    "data": {
                        "status": "interrupted",
                        "run_id": run_id,
                        "reason": reason,
                    },
                }),
            )?;
            self.set_running(&thread, None)?;
            closed.push(thread);
        }
        if !closed.is_empty() {
            self.flush()?;
        }
        Ok(closed)
    }

    /// Pins `thread` to graph version `v` on disk (a no-op in memory: the server's own pins
    /// are all a memory store outlives). The version's files are stored once per id.
    pub fn set_version(&self, thread: &str, v: &GraphVersion) -> Result<(), ServerError> {
        let Some(t) = &self.trees else {
            return Ok(());
        };
        if !t.versions.contains_key(v.id.as_bytes()).map_err(storage)? {
            let json = serde_json::to_vec(v)
                .map_err(|e| ServerError::Storage(format!("graph version {}: {e}", v.id)))?;
            t.versions.insert(v.id.as_bytes(), json).map_err(storage)?;
        }
        t.meta
            .insert(meta_key(b'v', thread), v.id.as_bytes())
            .map_err(storage)?;
        Ok(())
    }

    /// Unpins `thread` (its next run uses the newest version).
    pub fn forget_version(&self, thread: &str) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            t.meta.remove(meta_key(b'v', thread)).map_err(storage)?;
        }
        Ok(())
    }

    /// The graph version `thread` is pinned to on disk, if any.
    pub fn version_of(&self, thread: &str) -> Result<Option<GraphVersion>, ServerError> {
        let Some(t) = &self.trees else {
            return Ok(None);
        };
        let Some(id) = t.meta.get(meta_key(b'v', thread)).map_err(storage)? else {
            return Ok(None);
        };
        let Some(json) = t.versions.get(&id).map_err(storage)? else {
            return Ok(None);
        };
        serde_json::from_slice(&json)
            .map(Some)
            .map_err(|e| ServerError::Storage(format!("graph version of thread {thread}: {e}")))
    }

    /// Drops the stored graph versions no thread is pinned to; returns how many. The server
    /// calls it when it starts.
    pub fn prune_versions(&self) -> Result<usize, ServerError> {
        let Some(t) = &self.trees else {
            return Ok(0);
        };
        let mut used = std::collections::HashSet::new();
        for kv in t.meta.scan_prefix([b'v']) {
            let (_, id) = kv.map_err(storage)?;
            used.insert(id.to_vec());
        }
        let mut dropped = 0;
        for kv in t.versions.iter() {
            let (id, _) = kv.map_err(storage)?;
            if !used.contains(id.as_ref()) {
                t.versions.remove(&id).map_err(storage)?;
                dropped += 1;
            }
        }
        Ok(dropped)
    }

    /// The event database, when events are persisted (other server records live in its
    /// trees, such as thread owners).
    pub(crate) fn db(&self) -> Option<&sled::Db> {
        self.trees.as_ref().map(|t| &t.db)
    }

    /// Whether events are persisted on disk.
    pub fn is_persistent(&self) -> bool {
        self.trees.is_some()
    }

    /// Flushes the database (no-op in memory).
    pub fn flush(&self) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            t.db.flush().map_err(storage)?;
        }
        Ok(())
    }
}
