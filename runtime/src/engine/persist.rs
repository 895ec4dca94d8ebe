//! Persistence: loading a thread (folding each channel's blobs), saving checkpoints under the
//! durability modes, and the pending writes of steps that did not complete (finished tasks,
//! interrupts, errors, resume answers, the stream position).

use super::apply::Channels;
use super::changes::ChangeLog;
use super::plan::Frontier;
use super::{Durability, Resume};
use crate::checkpoint::kv::writes_by_task;
use crate::checkpoint::{
    special, ChannelEntry, Checkpoint, CheckpointError, Checkpointer, ListQuery, PendingWrite,
    Source,
};
use crate::error::RunError;
use crate::graph::GraphInner;
use crate::ids::CheckpointId;
use crate::node::Interrupt;
use crate::reducer::Storage;
use crate::stream::{DebugEvent, Emitter, EventKind, Mode};
use crate::update::{Goto, Send, Update};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// What a checkpoint records besides the store's own cursor.
pub(super) struct Snapshot<'a> {
    /// The checkpoint's step.
    pub step: i64,
    pub channels: &'a mut Channels,
    pub frontier: &'a Frontier,
    pub emitter: &'a Emitter,
}

/// One namespace's view of the checkpointer: where the run's checkpoints go and the state of
/// writing them.
pub(super) struct Store {
    cp: Option<Arc<dyn Checkpointer>>,
    thread: Arc<str>,
    ns_key: String,
    durability: Durability,
    run_id: Arc<str>,
    /// Id of the latest checkpoint (virtual when nothing is stored).
    parent: Option<CheckpointId>,
    /// Pending writes saved against `parent`.
    pending: Vec<PendingWrite>,
    flush_task: Option<JoinHandle<Result<(), CheckpointError>>>,
    /// In `exit` durability: the checkpoint the run started from (parent of the one saved).
    exit_parent: Option<CheckpointId>,
    /// In `exit` durability: whether steps ran since the last save.
    exit_started: bool,
    /// The stream position stored with the loaded checkpoint.
    event_seq: u64,
    written: u64,
    /// Prune the thread to this many checkpoints as the run goes (root namespace only).
    keep: Option<usize>,
}

impl Store {
    pub(super) fn new(
        cp: Option<Arc<dyn Checkpointer>>,
        thread: Arc<str>,
        ns_key: String,
        durability: Durability,
        run_id: Arc<str>,
    ) -> Self {
        Store {
            cp,
            thread,
            ns_key,
            durability,
            run_id,
            parent: None,
            pending: Vec::new(),
            flush_task: None,
            exit_parent: None,
            exit_started: false,
            event_seq: 0,
            written: 0,
            keep: None,
        }
    }

    /// Prunes the thread to the newest `keep` checkpoints per namespace as the run goes.
    pub(super) fn keep_checkpoints(mut self, keep: Option<usize>) -> Self {
        self.keep = keep.map(|k| k.max(1));
        self
    }

    pub(super) fn has_checkpointer(&self) -> bool {
        self.cp.is_some()
    }

    /// The latest checkpoint's id.
    pub(super) fn parent(&self) -> Option<CheckpointId> {
        self.parent
    }

    /// The stream position to continue numbering events from.
    pub(super) fn event_seq(&self) -> u64 {
        self.event_seq
    }

    /// Checkpoints stored by this run.
    pub(super) fn checkpoints_written(&self) -> u64 {
        self.written
    }

    /// Drops the pending writes (a new step or a fork starts from the checkpoint).
    pub(super) fn clear_pending(&mut self) {
        self.pending.clear();
    }

    /// The interrupts pending on the latest checkpoint.
    pub(super) fn pending_interrupts(&self) -> Vec<Interrupt> {
        interrupts_of(&self.pending)
    }

    /// The resume answers saved against the latest checkpoint.
    pub(super) fn saved_answers(&self) -> BTreeMap<String, Value> {
        self.pending
            .iter()
            .filter(|w| w.channel == special::RESUME.0)
            .filter_map(|w| serde_json::from_value::<BTreeMap<String, Value>>(w.value.clone()).ok())
            .flatten()
            .collect()
    }

    /// Updates of tasks that finished in an earlier attempt of the next step, by task id.
    pub(super) fn finished_tasks(&self) -> HashMap<&str, Update> {
        writes_by_task(&self.pending)
            .into_iter()
            .filter_map(|(task, writes)| decode_update(&writes).map(|u| (task, u)))
            .collect()
    }

    /// Which pending interrupts a resume value answers.
    pub(super) fn resolve_resume(
        &self,
        r: Resume,
        strict: bool,
    ) -> Result<BTreeMap<String, Value>, RunError> {
        let pending = self.pending_interrupts();
        let ids = || {
            pending
                .iter()
                .map(|i| format!("{} ({})", i.id, i.node))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match r {
            Resume::Value(v) => match pending.len() {
                0 => Err(RunError::Resume(format!(
                    "thread {:?} has no pending interrupt to answer; resume without a value to continue",
                    &*self.thread
                ))),
                1 => Ok(BTreeMap::from([(pending[0].id.clone(), v)])),
                n => Err(RunError::Resume(format!(
                    "{n} interrupts are pending; resume with a map from interrupt id to value. Pending: {}",
                    ids()
                ))),
            },
            Resume::ById(map) => {
                if strict {
                    if let Some(bad) = map.keys().find(|k| !pending.iter().any(|i| &&i.id == k)) {
                        return Err(RunError::Resume(format!(
                            "no pending interrupt has id {bad}; pending: {}",
                            if pending.is_empty() { "none".to_string() } else { ids() }
                        )));
                    }
                }
                Ok(map)
            }
        }
    }

    /// Loads checkpoint `id` (or the newest) into `channels`; returns it with the frontier it
    /// stored, or `None` for a new thread.
    pub(super) async fn load(
        &mut self,
        g: &GraphInner,
        channels: &mut Channels,
        id: Option<CheckpointId>,
    ) -> Result<Option<(Checkpoint, Frontier)>, RunError> {
        let Some(cp) = self.cp.clone() else {
            return match id {
                Some(_) => Err(RunError::NoCheckpointer("loading a checkpoint")),
                None => Ok(None),
            };
        };
        let Some(tuple) = cp.get(&self.thread, &self.ns_key, id).await? else {
            return match id {
                Some(id) => Err(RunError::CheckpointNotFound {
                    thread: self.thread.to_string(),
                    id,
                }),
                None => Ok(None),
            };
        };
        let c = tuple.checkpoint;
        if c.schema_version != g.schema.version {
            return Err(RunError::SchemaMismatch {
                thread: self.thread.to_string(),
                stored: c.schema_version.clone(),
                current: g.schema.version.clone(),
            });
        }
        for (name, version) in &c.channel_versions {
            let Some(ch) = g.schema.index_of(name) else {
                continue;
            };
            let spec = &g.schema.channels[ch];
            let entries = cp
                .channel_entries(&self.thread, &self.ns_key, name, *version)
                .await?;
            let mut cur = spec.default.clone();
            let mut scratch = None;
            for (_, e) in entries {
                match e {
                    ChannelEntry::Set(v) => {
                        cur = Some(v);
                        scratch = None;
                    }
                    ChannelEntry::Clear => {
                        cur = None;
                        scratch = None;
                    }
                    ChannelEntry::Delta { writes, .. } => {
                        for w in writes {
                            spec.reducer
                                .apply_with(&mut cur, w, &mut scratch)
                                .map_err(|e| RunError::Reducer {
                                    node: "checkpoint".into(),
                                    channel: name.clone(),
                                    reducer: spec.reducer.name().into(),
                                    message: e.0,
                                })?;
                        }
                    }
                }
            }
            channels.restore(ch, cur, scratch);
        }
        channels.restore_versions(c.channel_versions.clone());
        let frontier = Frontier::restore(c.next.clone(), c.barriers.clone());
        self.parent = Some(c.id);
        self.pending = tuple.pending_writes;
        self.event_seq = self
            .pending
            .iter()
            .filter(|w| w.channel == special::SEQ.0)
            .filter_map(|w| w.value.as_u64())
            .fold(c.event_seq, u64::max);
        Ok(Some((c, frontier)))
    }

    /// Saves a checkpoint of `at` (or, in `exit` durability, only remembers its id).
    pub(super) async fn save(
        &mut self,
        at: Snapshot<'_>,
        source: Source,
        input: Option<Value>,
        metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        let id = CheckpointId::after(self.parent);
        if self.cp.is_none() {
            self.parent = Some(id);
            self.pending.clear();
            at.channels.discard_changes();
            return Ok(());
        }
        if self.durability == Durability::Exit {
            if !self.exit_started {
                self.exit_started = true;
                self.exit_parent = self.parent;
            }
            self.parent = Some(id);
            self.pending.clear();
            return Ok(());
        }
        let parent = self.parent;
        self.put(at, id, parent, source, input, metadata).await
    }

    async fn put(
        &mut self,
        at: Snapshot<'_>,
        id: CheckpointId,
        parent: Option<CheckpointId>,
        source: Source,
        input: Option<Value>,
        mut metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        let Some(cp) = self.cp.clone() else {
            return Ok(());
        };
        let blobs = at.channels.commit(id);
        metadata.insert("run_id".into(), Value::String(self.run_id.to_string()));
        let checkpoint = Checkpoint {
            id,
            parent,
            step: at.step,
            source,
            channel_versions: at.channels.versions().clone(),
            next: at.frontier.next().to_vec(),
            barriers: at.frontier.barriers().clone(),
            input,
            schema_version: at.channels.schema().version.clone(),
            // Counts the debug event that announces this checkpoint, so the next run of the
            // thread continues numbering after it.
            event_seq: match at.emitter.next_seq().await {
                Some(n) => n + u64::from(at.emitter.enabled(Mode::Debug)),
                None => self.event_seq,
            },
            metadata,
        };
        let step = at.step;
        let span = tracing::debug_span!("checkpoint", step, id = %id, blobs = blobs.len());
        async {
            cp.put(&self.thread, &self.ns_key, &checkpoint, &blobs)
                .await?;
            match self.durability {
                Durability::Sync | Durability::Exit => cp.flush().await?,
                Durability::Async => {
                    let idle = self.flush_task.as_ref().is_none_or(|h| h.is_finished());
                    if idle {
                        if let Some(h) = self.flush_task.take() {
                            flatten(h.await)?;
                        }
                        let cp = cp.clone();
                        self.flush_task = Some(tokio::spawn(async move { cp.flush().await }));
                    }
                }
            }
            Ok::<(), RunError>(())
        }
        .instrument(span)
        .await?;
        self.parent = Some(id);
        self.pending.clear();
        self.written += 1;
        // Retention: every `keep` checkpoints (at least every 16), the thread goes back to its
        // newest `keep` per namespace; the root run does it for its subgraphs too.
        if let (Some(keep), true) = (self.keep, self.ns_key.is_empty()) {
            if self.written.is_multiple_of(keep.max(16) as u64) {
                cp.prune(Some(&self.thread), keep).await?;
            }
        }
        if at.emitter.enabled(Mode::Debug) {
            let ev = DebugEvent::Checkpoint {
                step,
                checkpoint_id: id.to_string(),
                next: at.frontier.names(),
            };
            at.emitter.emit(None, EventKind::Debug(ev)).await;
        }
        Ok(())
    }

    /// Ends the run's storage work: the single checkpoint of `exit` durability, and the last
    /// background flush of `async`.
    pub(super) async fn finish(&mut self, at: Snapshot<'_>) -> Result<(), RunError> {
        let Some(cp) = self.cp.clone() else {
            return Ok(());
        };
        if self.durability == Durability::Exit && self.exit_started {
            if let Some(id) = self.parent {
                self.exit_started = false;
                let parent = self.exit_parent.take();
                let pending = std::mem::take(&mut self.pending);
                self.put(at, id, parent, Source::Loop, None, Map::new())
                    .await?;
                self.pending = pending;
            }
        }
        if let Some(h) = self.flush_task.take() {
            flatten(h.await)?;
        }
        if self.durability == Durability::Async {
            cp.flush().await?;
        }
        Ok(())
    }

    /// Saves the writes of a step that did not complete against the latest checkpoint, by task.
    pub(super) async fn put_task_writes(
        &self,
        saves: &[(String, Vec<(String, Value)>)],
    ) -> Result<(), RunError> {
        if let (Some(cp), Some(parent)) = (&self.cp, self.parent) {
            for (task, writes) in saves {
                cp.put_writes(&self.thread, &self.ns_key, parent, task, writes)
                    .await?;
            }
            cp.flush().await?;
        }
        Ok(())
    }

    /// Saves a special write (resume answers, stream position) against the latest checkpoint.
    pub(super) async fn put_special(&self, channel: &str, value: Value) -> Result<(), RunError> {
        if let (Some(cp), Some(parent)) = (&self.cp, self.parent) {
            let w = [(channel.to_string(), value)];
            cp.put_writes(&self.thread, &self.ns_key, parent, channel, &w)
                .await?;
        }
        Ok(())
    }

    /// For a subgraph resumed across runs: what it wrote since its first step, rebuilt from its
    /// checkpoints.
    pub(super) async fn written_since_start(
        &self,
        channels: &Channels,
    ) -> Result<ChangeLog, RunError> {
        let mut log = ChangeLog::default();
        let Some(cp) = self.cp.clone() else {
            return Ok(log);
        };
        let mut filter = Map::new();
        filter.insert("source".into(), json!("loop"));
        filter.insert("step".into(), json!(0));
        let q = ListQuery {
            ns: Some(self.ns_key.clone()),
            filter,
            before: None,
            limit: Some(1),
        };
        let base_versions = cp
            .list(&self.thread, &q)
            .await?
            .pop()
            .map(|t| t.checkpoint.channel_versions)
            .unwrap_or_default();
        let schema = channels.schema();
        for (name, version) in channels.versions() {
            let Some(ch) = schema.index_of(name) else {
                continue;
            };
            let base = base_versions.get(name).copied();
            if base == Some(*version) {
                continue;
            }
            let spec = &schema.channels[ch];
            let entries = cp
                .channel_entries(&self.thread, &self.ns_key, name, *version)
                .await?;
            let newer: Vec<ChannelEntry> = entries
                .into_iter()
                .filter(|(id, _)| base.is_none_or(|b| *id > b))
                .map(|(_, e)| e)
                .collect();
            let reset = spec.reducer.is_replace()
                || spec.storage() == Storage::Value
                || newer
                    .iter()
                    .any(|e| !matches!(e, ChannelEntry::Delta { .. }));
            if reset {
                log.reset(ch, None);
            } else {
                for e in newer {
                    if let ChannelEntry::Delta { writes, .. } = e {
                        for w in writes {
                            log.write(ch, None, Some(w));
                        }
                    }
                }
            }
        }
        Ok(log)
    }
}

fn flatten(r: Result<Result<(), CheckpointError>, tokio::task::JoinError>) -> Result<(), RunError> {
    match r {
        Ok(inner) => inner.map_err(RunError::from),
        Err(e) => Err(RunError::Checkpoint(CheckpointError::Backend(format!(
            "flush task: {e}"
        )))),
    }
}

/// Pending-write form of a finished task's update.
pub(super) fn encode_update(update: &Update) -> Vec<(String, Value)> {
    let mut out = vec![(special::DONE.0.to_string(), Value::Bool(true))];
    out.extend(update.writes.iter().cloned());
    for g in &update.goto {
        match g {
            Goto::Node(n) => out.push(("__goto__".into(), Value::String(n.clone()))),
            Goto::Send(s) => out.push((
                "__send__".into(),
                json!({"node": s.node, "payload": s.payload}),
            )),
            Goto::End => {}
        }
    }
    if update.to_parent {
        out.push(("__to_parent__".into(), Value::Bool(true)));
    }
    out
}

/// Rebuilds a finished task's update from its pending writes (`None` if it did not finish).
fn decode_update(writes: &[&PendingWrite]) -> Option<Update> {
    if !writes.iter().any(|w| w.channel == special::DONE.0) {
        return None;
    }
    let mut u = Update::new();
    for w in writes {
        match w.channel.as_str() {
            "__done__" => {}
            "__goto__" => u
                .goto
                .push(Goto::from(w.value.as_str().unwrap_or_default())),
            "__send__" => u.goto.push(Goto::Send(Send {
                node: w
                    .value
                    .get("node")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                payload: w.value.get("payload").cloned().unwrap_or(Value::Null),
            })),
            "__to_parent__" => u.to_parent = true,
            c if c.starts_with("__") => {}
            c => u.writes.push((c.to_string(), w.value.clone())),
        }
    }
    Some(u)
}

/// Interrupts recorded in pending writes, in task order.
pub(super) fn interrupts_of(pending: &[PendingWrite]) -> Vec<Interrupt> {
    pending
        .iter()
        .filter(|w| w.channel == special::INTERRUPT.0)
        .flat_map(|w| serde_json::from_value::<Vec<Interrupt>>(w.value.clone()).unwrap_or_default())
        .collect()
}
