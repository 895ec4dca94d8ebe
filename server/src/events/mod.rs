//! Per-thread event logs: a bounded ring (by count and by bytes) of serialized envelopes,
//! mirrored in a sled database when one is configured, with a watch channel for live readers.
//!
//! On sled, an event reaches readers only once it is durable: each append asks the store's
//! write-ahead log ([`WalTree`]) for a flush (appends of every thread share them: group commit)
//! and publishes the event when it returns. A client has therefore never seen an id the disk
//! does not hold, so after a crash the ids continue above everything any client received and
//! `Last-Event-ID` replay is exact.
//!
//! Everything lives in one tree, `server`. A thread's next id is one above its newest event,
//! which the bounds never drop, or its `n` key if that is higher (older servers rewrote `n`
//! with every event; now it is written with a thread's first event and by `advance`):
//!
//! ```text
//! E thread 0 seq(u64 BE)   the envelope JSON
//! E thread 0 first last    a pack: the events first..=last that are still kept, each as
//!                          seq(u64 BE) len(u32 BE) JSON (see `pack`)
//! n thread                 the thread has events (the index `close_unfinished_runs` scans);
//!                          a lower bound of its next id (u64 BE)
//! g thread                 the graph the thread last ran
//! r thread                 the id of the run in flight (removed when it ends)
//! v thread                 the graph version the thread is pinned to (removed when its run ends for good)
//! V version-id             the version as JSON ([`GraphVersion`]), shared by every pinned thread
//! o thread                 the namespace of the principal owning the thread (`auth::owners`)
//! ```
//!
//! When a run ends, its events are rewritten as one pack in the same batch that deletes them
//! one by one: an event costs the database (sled's per-key insert, in the log's background
//! merge) once per run instead of once per event, and as the merge runs about once a second
//! the individual keys of a run rarely reach sled at all (their deletes then cost a lookup).
//!
//! With the sled checkpointer the tree lives in the checkpoints' database, behind the same
//! write-ahead log ([`EventStore::beside`]): one flush makes a step's checkpoint and the events
//! before it durable, and events ride on the flushes the runs' checkpoints issue anyway.
//! [`EventStore::open`] keeps a database of its own in a folder (beside a checkpointer that is
//! not sled).
//!
//! A folder written by an older server (trees `events`, `threads`, `graph_versions`) is moved
//! into this layout when it is opened, and so is the `server-events` folder older servers kept
//! beside the checkpoints ([`LEGACY_FOLDER`]).

mod hub;
mod keys;
mod legacy;
mod publish;
#[cfg(test)]
mod tests;

pub use legacy::LEGACY_FOLDER;

use crate::error::ServerError;
use crate::versions::GraphVersion;
use agentgraph_runtime::checkpoint::{WalSettings, WalTree};
use hub::{Hub, Hubs, Ring, SWEEP_FROM};
use keys::{
    event_key, load_events, meta_key, newest_events_until_a_run_event, pack_key, pack_value, put,
    remove, scan_prefix, storage, version_key,
};
use legacy::{copy_all, migrate};
use publish::Unpublished;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
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

/// Every thread's event log.
pub struct EventStore {
    /// The `server` tree (see the module docs); `None` in memory.
    trees: Option<Arc<WalTree>>,
    limits: EventLimits,
    hubs: Mutex<Hubs>,
    graphs: Mutex<HashMap<String, String>>,
    unpublished: Arc<Mutex<Unpublished>>,
}

impl EventStore {
    /// Logs kept in memory only (lost on restart).
    pub fn memory(limits: EventLimits) -> Self {
        EventStore {
            trees: None,
            limits,
            hubs: Mutex::new(Hubs {
                map: HashMap::new(),
                sweep_at: SWEEP_FROM,
            }),
            graphs: Mutex::new(HashMap::new()),
            unpublished: Arc::default(),
        }
    }

    /// Logs persisted in the sled database in folder `dir` (tree `server`, behind a
    /// write-ahead log as the sled checkpointer's).
    ///
    /// A store of this process that was just dropped may still be held for a moment by the
    /// tasks publishing its last events (each holds it until its flush returns), so a folder
    /// found locked is tried again for up to two seconds before the error is reported.
    pub fn open(dir: &std::path::Path, limits: EventLimits) -> Result<Self, ServerError> {
        // A 64 MiB page cache, no compression unless the folder has it, no periodic flush: the
        // log's merges flush what they move.
        let config = agentgraph_runtime::checkpoint::sled_config(dir, 64 << 20, false);
        let db = agentgraph_runtime::checkpoint::open_sled(&config)
            .map_err(|e| ServerError::Storage(format!("opening {}: {e}", dir.display())))?;
        let tree = WalTree::open(db.clone(), "server", dir, WalSettings::default())
            .map_err(|e| ServerError::Storage(format!("opening {}: {e}", dir.display())))?;
        migrate(&db, &tree)?;
        Ok(EventStore {
            trees: Some(Arc::new(tree)),
            ..Self::memory(limits)
        })
    }

    /// Logs persisted in tree `server` of the sled checkpointer's own database, behind its
    /// write-ahead log (see the module docs). An older server's [`LEGACY_FOLDER`] beside the
    /// checkpoints is moved in first (copied, made durable, then the folder is removed).
    pub fn beside(
        checkpoints: &agentgraph_runtime::checkpoint::SledStore,
        limits: EventLimits,
    ) -> Result<Self, ServerError> {
        let tree = checkpoints.tree_beside("server").map_err(storage)?;
        let legacy = checkpoints.path().join(LEGACY_FOLDER);
        if legacy.is_dir() {
            let moved = {
                let old = Self::open(&legacy, limits)?;
                match &old.trees {
                    Some(t) => copy_all(t, &tree)?,
                    None => 0,
                }
            };
            tree.drain().map_err(storage)?;
            std::fs::remove_dir_all(&legacy).map_err(|e| {
                ServerError::Storage(format!(
                    "removing {} after moving it: {e}",
                    legacy.display()
                ))
            })?;
            tracing::info!(
                entries = moved,
                from = %legacy.display(),
                "event log: moved an older server's folder into the checkpoints' database"
            );
        }
        Ok(EventStore {
            trees: Some(Arc::new(tree)),
            ..Self::memory(limits)
        })
    }

    /// The hub of `thread`, loading its log from disk on first use.
    pub(crate) fn hub(&self, thread: &str) -> Result<Arc<Hub>, ServerError> {
        let mut hubs = self.hubs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = hubs.map.get(thread) {
            return Ok(h.clone());
        }
        let mut ring = Ring::new();
        if let Some(t) = &self.trees {
            let (events, packs) = load_events(t, thread)?;
            for e in events {
                ring.bytes += e.json.len();
                ring.next_seq = ring.next_seq.max(e.seq + 1);
                ring.events.push_back(e);
            }
            ring.packed_upto = packs.iter().map(|p| p.1).max().unwrap_or(0);
            ring.packs = packs.into();
            // A pack keeps events the bounds dropped since (they are deleted one by one, and
            // a pack only as a whole), and the bounds may be lower than when the events were
            // written: bound what is read back the same way, and delete what that drops for
            // good — the loose events by key, the packs holding nothing kept as a whole — so
            // raising the bounds later never brings a dropped event back between kept ones.
            let dropped = ring.trim(self.limits);
            if !dropped.is_empty() {
                let oldest = ring.events.front().map_or(u64::MAX, |e| e.seq);
                let in_pack = |seq: u64| ring.packs.iter().any(|&(f, l)| f <= seq && seq <= l);
                let mut deletes: Vec<Vec<u8>> = dropped
                    .iter()
                    .filter(|&&seq| !in_pack(seq))
                    .map(|&seq| event_key(thread, seq))
                    .collect();
                deletes.extend(
                    ring.packs
                        .iter()
                        .filter(|&&(_, last)| last < oldest)
                        .map(|&(first, last)| pack_key(thread, first, last)),
                );
                ring.packs.retain(|&(_, last)| last >= oldest);
                if !deletes.is_empty() {
                    t.apply(Vec::new(), deletes).map_err(storage)?;
                }
            }
            if let Some(v) = t.get(&meta_key(b'n', thread)).map_err(storage)? {
                ring.indexed = true;
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
        if hubs.map.len() >= hubs.sweep_at {
            hubs.sweep(self.trees.is_some());
        }
        hubs.map.insert(thread.to_string(), hub.clone());
        Ok(hub)
    }

    /// Appends an event envelope `{ns, mode, node, data}` to the thread's log with the
    /// thread's next id as its `seq` (any `seq` it carries, such as the runtime's per-run
    /// numbering, is replaced: this is the one place event ids are assigned), trims the ring to
    /// its bounds and wakes live readers once the event is durable (at once in memory). Returns
    /// the id.
    pub fn append(&self, thread: &str, mut envelope: Value) -> Result<u64, ServerError> {
        // A run's end is published as soon as it is durable (clients wait on it); every other
        // event may wait for a shared flush, such as the checkpoint flush that follows a run's
        // start at once.
        let urgent = envelope.get("mode").and_then(Value::as_str) == Some("run")
            && envelope.pointer("/data/status").and_then(Value::as_str) != Some("started");
        let hub = self.hub(thread)?;
        let seq = {
            let mut ring = hub.lock();
            let seq = ring.next_seq;
            if let Some(o) = envelope.as_object_mut() {
                o.insert("seq".into(), Value::from(seq));
            }
            let json: Arc<str> = Arc::from(envelope.to_string());
            ring.bytes += json.len();
            ring.events.push_back(StoredEvent {
                seq,
                json: json.clone(),
            });
            ring.next_seq = seq + 1;
            let removed = ring.trim(self.limits);
            if let Some(t) = &self.trees {
                // The event's key is new (ids are never given twice), so the run's end, which
                // packs the events and deletes their keys, leaves no tombstone for the merge.
                // `n` is written once per thread: it indexes the threads with events, and the
                // next id is read back from the newest event, which the bounds always keep
                // (loose or in a pack; see `hub`).
                let new = vec![(event_key(thread, seq), json.as_bytes().to_vec())];
                let mut puts = Vec::new();
                if !ring.indexed {
                    puts.push((meta_key(b'n', thread), (seq + 1).to_be_bytes().to_vec()));
                    ring.indexed = true;
                }
                let deletes = removed
                    .into_iter()
                    .map(|old| event_key(thread, old))
                    .collect();
                t.apply_new(new, puts, deletes).map_err(storage)?;
            }
            seq
        };
        match &self.trees {
            None => hub.publish(seq),
            Some(t) => match tokio::runtime::Handle::try_current() {
                Ok(rt) if urgent => {
                    let tree = t.clone();
                    rt.spawn(async move {
                        let flushed = tree.flush().await;
                        // Not kept past the flush: it holds the database open.
                        drop(tree);
                        if let Err(e) = flushed {
                            // Readers still get the event: hiding the log for good would be
                            // worse than a replay that may miss it after a crash.
                            tracing::error!(error = %e, "flushing the event log failed");
                        }
                        // The flush covers every event of the thread appended before this one.
                        hub.publish(seq);
                    });
                }
                Ok(rt) => self.publish_when_durable(&rt, t, hub, seq),
                Err(_) => {
                    t.flush_blocking().map_err(storage)?;
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
            put(t, meta_key(b'n', thread), &next.to_be_bytes())?;
            ring.indexed = true;
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
            put(t, meta_key(b'g', thread), graph.as_bytes())?;
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
    /// A run's end also packs the thread's events (see the module docs).
    pub fn set_running(&self, thread: &str, run_id: Option<&str>) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            let key = meta_key(b'r', thread);
            match run_id {
                Some(id) => put(t, key, id.as_bytes())?,
                None => {
                    remove(t, key)?;
                    self.pack(t, thread)?;
                }
            }
        }
        Ok(())
    }

    /// Rewrites the events of `thread` stored one per key as one pack, in one batch with
    /// their deletes, and drops the packs whose events the bounds have all dropped.
    fn pack(&self, t: &WalTree, thread: &str) -> Result<(), ServerError> {
        let hub = self.hub(thread)?;
        let mut ring = hub.lock();
        let from = ring.packed_upto;
        let loose: Vec<&StoredEvent> = ring.events.iter().filter(|e| e.seq > from).collect();
        let oldest = ring.events.front().map_or(u64::MAX, |e| e.seq);
        let gone: Vec<(u64, u64)> = ring
            .packs
            .iter()
            .copied()
            .filter(|&(_, last)| last < oldest)
            .collect();
        if loose.len() < 2 && gone.is_empty() {
            return Ok(());
        }
        let mut puts = Vec::new();
        let mut deletes: Vec<Vec<u8>> = gone
            .iter()
            .map(|&(first, last)| pack_key(thread, first, last))
            .collect();
        let mut packed = None;
        if let (true, Some(first), Some(last)) = (loose.len() >= 2, loose.first(), loose.last()) {
            let (first, last) = (first.seq, last.seq);
            deletes.extend(loose.iter().map(|e| event_key(thread, e.seq)));
            puts.push((pack_key(thread, first, last), pack_value(loose.into_iter())));
            packed = Some((first, last));
        }
        t.apply(puts, deletes).map_err(storage)?;
        ring.packs.retain(|&(_, last)| last >= oldest);
        if let Some((first, last)) = packed {
            ring.packs.push_back((first, last));
            ring.packed_upto = last;
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
                .get(&meta_key(b'g', thread))
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
        for (k, _) in scan_prefix(t, b"n", false)? {
            if let Some(name) = k.get(1..) {
                threads.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        let mut closed = Vec::new();
        for thread in threads {
            // Newest first: only the events after the newest `run` event are read.
            let running = t.get(&meta_key(b'r', &thread)).map_err(storage)?;
            let mut open = None;
            for e in newest_events_until_a_run_event(t, &thread)? {
                let Ok(ev) = serde_json::from_str::<serde_json::Value>(&e.json) else {
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
                (running, None) => {
                    // The log ends with an end event: the run was closed (a leftover marker
                    // only means the process stopped between the two writes). Its events are
                    // packed when the thread's next run ends.
                    if running.is_some() {
                        remove(t, meta_key(b'r', &thread))?;
                    }
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
        let key = version_key(v.id.as_bytes());
        if t.get(&key).map_err(storage)?.is_none() {
            let json = serde_json::to_vec(v)
                .map_err(|e| ServerError::Storage(format!("graph version {}: {e}", v.id)))?;
            put(t, key, &json)?;
        }
        put(t, meta_key(b'v', thread), v.id.as_bytes())?;
        Ok(())
    }

    /// Unpins `thread` (its next run uses the newest version).
    pub fn forget_version(&self, thread: &str) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            remove(t, meta_key(b'v', thread))?;
        }
        Ok(())
    }

    /// The graph version `thread` is pinned to on disk, if any.
    pub fn version_of(&self, thread: &str) -> Result<Option<GraphVersion>, ServerError> {
        let Some(t) = &self.trees else {
            return Ok(None);
        };
        let Some(id) = t.get(&meta_key(b'v', thread)).map_err(storage)? else {
            return Ok(None);
        };
        let Some(json) = t.get(&version_key(&id)).map_err(storage)? else {
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
        for (_, id) in scan_prefix(t, b"v", false)? {
            used.insert(id);
        }
        let mut dropped = 0;
        for (key, _) in scan_prefix(t, b"V", false)? {
            if !used.contains(&key[1..]) {
                remove(t, key)?;
                dropped += 1;
            }
        }
        Ok(dropped)
    }

    /// The `server` tree, when events are persisted (other server records live in it under
    /// their own tags, such as thread owners: `o thread`).
    pub(crate) fn tree(&self) -> Option<&Arc<WalTree>> {
        self.trees.as_ref()
    }

    /// Whether events are persisted on disk.
    pub fn is_persistent(&self) -> bool {
        self.trees.is_some()
    }

    /// Makes every write so far durable (no-op in memory).
    pub fn flush(&self) -> Result<(), ServerError> {
        if let Some(t) = &self.trees {
            t.flush_blocking().map_err(storage)?;
        }
        Ok(())
    }
}
