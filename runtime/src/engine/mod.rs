//! The Pregel engine: plan, execute, apply, checkpoint — one super-step at a time.
//!
//! A [`Run`] owns the live state of one run of one graph in one namespace. Nodes see an immutable
//! snapshot taken at the step's start; their writes are applied after every task finished, in
//! task order (pull tasks by node name, then push tasks by send index), never completion order.

mod api;
mod apply;
mod changes;
mod load;
mod task;

pub use api::{
    Durability, HistoryEntry, Input, Resume, RunConfig, RunOutput, RunStats, RunStatus, RunStream,
    StateSnapshot,
};
pub(crate) use load::run_subgraph;

use crate::checkpoint::{
    special, Checkpoint, CheckpointError, Checkpointer, PendingTask, PendingWrite, Source,
};
use crate::error::RunError;
use crate::graph::GraphInner;
use crate::ids::CheckpointId;
use crate::node::Interrupt;
use crate::state::StateView;
use crate::stream::{DebugEvent, Emitter, EventKind, Mode};
use crate::update::Update;
use changes::ChangeLog;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What every task of a run (and of its subgraphs) shares.
pub(crate) struct RunShared {
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    pub thread: Arc<str>,
    pub durability: Durability,
    pub cancel: CancellationToken,
    pub resume: Arc<BTreeMap<String, Value>>,
    pub recursion_limit: Option<usize>,
    pub run_id: Arc<str>,
    pub configurable: Arc<serde_json::Map<String, Value>>,
}

/// A planned task of the current step.
pub(crate) struct TaskPlan {
    pub node: usize,
    pub payload: Option<Value>,
    pub id: String,
}

/// How one task of a step ended.
pub(crate) enum TaskEnd {
    Done { update: Update, cached: bool },
    Interrupted(Vec<Interrupt>),
    Failed(crate::node::NodeError),
}

pub(crate) struct Run {
    pub g: Arc<GraphInner>,
    pub shared: Arc<RunShared>,
    pub ns: Vec<String>,
    pub ns_key: String,
    pub emitter: Emitter,
    pub values: Vec<Option<Arc<Value>>>,
    pub versions: BTreeMap<String, CheckpointId>,
    pub barriers: BTreeMap<String, Vec<String>>,
    pub next: Vec<PendingTask>,
    /// Step of the latest checkpoint.
    pub step: i64,
    /// Id of the latest checkpoint (virtual when nothing is stored).
    pub parent: Option<CheckpointId>,
    /// Pending writes saved against `parent`.
    pub pending: Vec<PendingWrite>,
    pub resume: Arc<BTreeMap<String, Value>>,
    pub changes: ChangeLog,
    pub written: Option<ChangeLog>,
    pub stats: RunStats,
    pub skip_before_once: bool,
    /// Per-channel reducer scratch (indexes); emptied when a value changes another way.
    pub scratch: Vec<crate::reducer::Scratch>,
    /// Executions per node index in this run (for the recursion-limit error).
    pub node_counts: Vec<u64>,
    pub interrupt_before: HashSet<usize>,
    pub interrupt_after: HashSet<usize>,
    pub flush_task: Option<JoinHandle<Result<(), CheckpointError>>>,
    pub parent_command: Option<Update>,
    pub event_seq: u64,
    /// In `exit` durability: the checkpoint the run started from (parent of the one saved).
    pub exit_parent: Option<CheckpointId>,
    /// In `exit` durability: whether steps ran since the last save.
    pub exit_started: bool,
    /// The run continues from an explicitly chosen checkpoint (time travel): fork first.
    pub fork_requested: bool,
}

impl Run {
    pub fn new(
        g: Arc<GraphInner>,
        shared: Arc<RunShared>,
        ns: Vec<String>,
        emitter: Emitter,
    ) -> Self {
        let values = g
            .schema
            .channels
            .iter()
            .map(|c| c.default.clone().map(Arc::new))
            .collect();
        let g_channels = g.schema.channels.len();
        let ns_key = ns.join("|");
        let interrupt_before = g.interrupt_before.clone();
        let interrupt_after = g.interrupt_after.clone();
        Run {
            g,
            resume: shared.resume.clone(),
            shared,
            ns,
            ns_key,
            emitter,
            values,
            versions: BTreeMap::new(),
            barriers: BTreeMap::new(),
            next: Vec::new(),
            step: -2,
            parent: None,
            pending: Vec::new(),
            changes: ChangeLog::default(),
            written: None,
            stats: RunStats::default(),
            skip_before_once: false,
            node_counts: Vec::new(),
            scratch: (0..g_channels).map(|_| None).collect(),
            interrupt_before,
            interrupt_after,
            flush_task: None,
            parent_command: None,
            event_seq: 0,
            exit_parent: None,
            exit_started: false,
            fork_requested: false,
        }
    }

    pub fn cp(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.shared.checkpointer.as_ref()
    }

    pub fn view(&self) -> StateView {
        StateView::new(self.g.schema.clone(), self.values.clone())
    }

    pub fn output(&self) -> Value {
        self.g.schema.output_object(&self.values)
    }

    fn node_name(&self, i: usize) -> &str {
        &self.g.nodes[i].name
    }

    pub fn next_names(&self) -> Vec<String> {
        self.next.iter().map(|t| t.node.clone()).collect()
    }

    /// Saves a checkpoint of the current state (or, in `exit` durability, only remembers its id).
    pub async fn save(
        &mut self,
        source: Source,
        input: Option<Value>,
        metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        let id = CheckpointId::after(self.parent);
        let exit = self.shared.durability == Durability::Exit;
        if self.cp().is_none() {
            self.parent = Some(id);
            self.pending.clear();
            self.changes = ChangeLog::default();
            return Ok(());
        }
        if exit {
            if !self.exit_started {
                self.exit_started = true;
                self.exit_parent = self.parent;
            }
            self.parent = Some(id);
            self.pending.clear();
            return Ok(());
        }
        let blobs = self.take_blobs(id);
        let checkpoint = self
            .checkpoint_record(id, self.parent, source, input, metadata)
            .await;
        self.put(checkpoint, blobs).await
    }

    fn take_blobs(&mut self, id: CheckpointId) -> Vec<(String, crate::checkpoint::ChannelEntry)> {
        let entries = self.changes.entries(&self.g.schema, &self.values);
        self.changes = ChangeLog::default();
        let mut blobs = Vec::with_capacity(entries.len());
        for (ch, entry) in entries {
            let name = self.g.schema.channels[ch].name.clone();
            match entry {
                Some(e) => {
                    self.versions.insert(name.clone(), id);
                    blobs.push((name, e));
                }
                None => {
                    self.versions.remove(&name);
                }
            }
        }
        blobs
    }

    async fn checkpoint_record(
        &self,
        id: CheckpointId,
        parent: Option<CheckpointId>,
        source: Source,
        input: Option<Value>,
        mut metadata: Map<String, Value>,
    ) -> Checkpoint {
        metadata.insert(
            "run_id".into(),
            Value::String(self.shared.run_id.to_string()),
        );
        Checkpoint {
            id,
            parent,
            step: self.step,
            source,
            channel_versions: self.versions.clone(),
            next: self.next.clone(),
            barriers: self.barriers.clone(),
            input,
            schema_version: self.g.schema.version.clone(),
            // Counts the debug event that announces this checkpoint, so the next run of the
            // thread continues numbering after it.
            event_seq: match self.emitter.next_seq().await {
                Some(n) => n + u64::from(self.emitter.enabled(Mode::Debug)),
                None => self.event_seq,
            },
            metadata,
        }
    }

    async fn put(
        &mut self,
        checkpoint: Checkpoint,
        blobs: Vec<(String, crate::checkpoint::ChannelEntry)>,
    ) -> Result<(), RunError> {
        let Some(cp) = self.shared.checkpointer.clone() else {
            return Ok(());
        };
        let id = checkpoint.id;
        let step = checkpoint.step;
        let span = tracing::debug_span!("checkpoint", step, id = %id, blobs = blobs.len());
        async {
            cp.put(&self.shared.thread, &self.ns_key, &checkpoint, &blobs)
                .await?;
            match self.shared.durability {
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
        self.stats.checkpoints_written += 1;
        if self.emitter.enabled(Mode::Debug) {
            let next = self.next_names();
            self.emitter
                .emit(
                    None,
                    EventKind::Debug(DebugEvent::Checkpoint {
                        step,
                        checkpoint_id: id.to_string(),
                        next,
                    }),
                )
                .await;
        }
        Ok(())
    }

    /// Ends the run's storage work: the single checkpoint of `exit` durability, and the last
    /// background flush of `async`.
    pub async fn finish_storage(&mut self) -> Result<(), RunError> {
        let Some(cp) = self.shared.checkpointer.clone() else {
            return Ok(());
        };
        if self.shared.durability == Durability::Exit && self.exit_started {
            if let Some(id) = self.parent {
                self.exit_started = false;
                let blobs = self.take_blobs(id);
                let parent = self.exit_parent.take();
                let record = self
                    .checkpoint_record(id, parent, Source::Loop, None, Map::new())
                    .await;
                let pending = std::mem::take(&mut self.pending);
                self.put(record, blobs).await?;
                self.pending = pending;
            }
        }
        if let Some(h) = self.flush_task.take() {
            flatten(h.await)?;
        }
        if self.shared.durability == Durability::Async {
            cp.flush().await?;
        }
        Ok(())
    }

    /// The interrupts pending on the latest checkpoint.
    pub fn pending_interrupts(&self) -> Vec<Interrupt> {
        interrupts_of(&self.pending)
    }

    /// Runs steps until nothing is planned, an interrupt, a failure or the limit.
    pub async fn run_loop(&mut self) -> Result<RunStatus, RunError> {
        let limit = self
            .shared
            .recursion_limit
            .unwrap_or(self.g.recursion_limit);
        let mut steps_run = 0usize;
        loop {
            if self.next.is_empty() {
                return Ok(RunStatus::Done);
            }
            if self.shared.cancel.is_cancelled() {
                return Err(RunError::Cancelled(self.shared.thread.to_string()));
            }
            if steps_run >= limit {
                return Err(RunError::RecursionLimit {
                    limit,
                    thread: self.shared.thread.to_string(),
                    nodes: self.top_nodes(),
                });
            }
            let mut plans = self.plan()?;
            let skip = std::mem::replace(&mut self.skip_before_once, false);
            if !skip
                && plans
                    .iter()
                    .any(|p| self.interrupt_before.contains(&p.node))
            {
                return Ok(RunStatus::Interrupted {
                    interrupts: Vec::new(),
                    next: self.next_names(),
                });
            }
            let step = self.step + 1;
            let span = tracing::info_span!("step", step, tasks = plans.len(), ns = %self.ns_key);
            let ended = self
                .execute(step, &mut plans)
                .instrument(span.clone())
                .await;
            steps_run += 1;
            self.stats.steps += 1;
            if let Some(status) = self.settle(step, &plans, ended).instrument(span).await? {
                return Ok(status);
            }
            if self.parent_command.is_some() {
                return Ok(RunStatus::Done);
            }
            if plans.iter().any(|p| self.interrupt_after.contains(&p.node)) && !self.next.is_empty()
            {
                return Ok(RunStatus::Interrupted {
                    interrupts: Vec::new(),
                    next: self.next_names(),
                });
            }
        }
    }

    fn top_nodes(&self) -> String {
        let mut counts: Vec<(&str, u64)> = self
            .node_counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (self.node_name(i), c))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
            .iter()
            .take(5)
            .map(|(n, c)| format!("{n} ×{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Tasks of the next step with their deterministic ids.
    fn plan(&self) -> Result<Vec<TaskPlan>, RunError> {
        let parent = self.parent.map(|p| p.to_string()).unwrap_or_default();
        let mut push = 0usize;
        let mut kind = String::new();
        self.next
            .iter()
            .map(|t| {
                let node =
                    *self
                        .g
                        .node_index
                        .get(&t.node)
                        .ok_or_else(|| RunError::UnknownTarget {
                            from: "checkpoint".into(),
                            target: t.node.clone(),
                            known: self.g.known_nodes(),
                        })?;
                kind.clear();
                match &t.payload {
                    None => kind.push_str("pull"),
                    Some(_) => {
                        use std::fmt::Write;
                        let _ = write!(kind, "push:{push}");
                        push += 1;
                    }
                }
                let id = crate::ids::stable_id(&[&self.ns_key, &parent, &t.node, &kind]);
                Ok(TaskPlan {
                    node,
                    payload: t.payload.clone(),
                    id,
                })
            })
            .collect()
    }

    /// Saves what a step that did not complete leaves behind, and turns it into the run status.
    async fn settle(
        &mut self,
        step: i64,
        plans: &[TaskPlan],
        ended: Vec<TaskEnd>,
    ) -> Result<Option<RunStatus>, RunError> {
        let complete = ended.iter().all(|e| matches!(e, TaskEnd::Done { .. }));
        if complete {
            let updates = ended
                .into_iter()
                .map(|e| match e {
                    TaskEnd::Done { update, cached } => (update, cached),
                    _ => unreachable!("checked complete"),
                })
                .collect();
            self.apply_step(step, plans, updates).await?;
            return Ok(None);
        }
        // The step did not complete: nothing is applied; successes, interrupts and errors are
        // saved as pending writes against the checkpoint before the step.
        if self.shared.durability == Durability::Exit {
            self.finish_storage().await?;
        }
        let mut interrupts = Vec::new();
        let mut failure: Option<(usize, crate::node::NodeError)> = None;
        let mut saves: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        for (plan, end) in plans.iter().zip(ended) {
            match end {
                TaskEnd::Done {
                    update,
                    cached: false,
                } => saves.push((plan.id.clone(), encode_update(&update))),
                TaskEnd::Done { cached: true, .. } => {}
                TaskEnd::Interrupted(list) => {
                    let v = serde_json::to_value(&list).unwrap_or(Value::Null);
                    saves.push((plan.id.clone(), vec![(special::INTERRUPT.0.to_string(), v)]));
                    interrupts.extend(list);
                }
                TaskEnd::Failed(e) => {
                    saves.push((
                        plan.id.clone(),
                        vec![(special::ERROR.0.to_string(), Value::String(e.to_string()))],
                    ));
                    if failure.is_none() {
                        failure = Some((plan.node, e));
                    }
                }
            }
        }
        if let (Some(cp), Some(parent)) = (self.shared.checkpointer.clone(), self.parent) {
            for (task, writes) in &saves {
                cp.put_writes(&self.shared.thread, &self.ns_key, parent, task, writes)
                    .await?;
            }
            cp.flush().await?;
        }
        if let Some((node, e)) = failure {
            return Err(match e {
                crate::node::NodeError::Cancelled => {
                    RunError::Cancelled(self.shared.thread.to_string())
                }
                crate::node::NodeError::Failed { message, code, .. } => RunError::NodeFailed {
                    node: self.node_name(node).to_string(),
                    step,
                    thread: self.shared.thread.to_string(),
                    ns: self.ns.clone(),
                    message,
                    code,
                },
                other => RunError::NodeFailed {
                    node: self.node_name(node).to_string(),
                    step,
                    thread: self.shared.thread.to_string(),
                    ns: self.ns.clone(),
                    message: other.to_string(),
                    code: None,
                },
            });
        }
        if self.emitter.enabled(Mode::Updates) {
            let v = serde_json::to_value(&interrupts).unwrap_or(Value::Null);
            self.emitter
                .emit(None, EventKind::Updates(json!({ "__interrupt__": v })))
                .await;
        }
        if let (Some(cp), Some(parent), Some(seq)) = (
            self.shared.checkpointer.clone(),
            self.parent,
            self.emitter.next_seq().await,
        ) {
            let w = [(special::SEQ.0.to_string(), json!(seq))];
            cp.put_writes(
                &self.shared.thread,
                &self.ns_key,
                parent,
                special::SEQ.0,
                &w,
            )
            .await?;
        }
        Ok(Some(RunStatus::Interrupted {
            interrupts,
            next: self.next_names(),
        }))
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
pub(crate) fn encode_update(update: &Update) -> Vec<(String, Value)> {
    let mut out = vec![(special::DONE.0.to_string(), Value::Bool(true))];
    out.extend(update.writes.iter().cloned());
    for g in &update.goto {
        match g {
            crate::update::Goto::Node(n) => out.push(("__goto__".into(), Value::String(n.clone()))),
            crate::update::Goto::Send(s) => out.push((
                "__send__".into(),
                json!({"node": s.node, "payload": s.payload}),
            )),
            crate::update::Goto::End => {}
        }
    }
    if update.to_parent {
        out.push(("__to_parent__".into(), Value::Bool(true)));
    }
    out
}

/// Rebuilds a finished task's update from its pending writes (`None` if it did not finish).
pub(crate) fn decode_update(writes: &[&PendingWrite]) -> Option<Update> {
    if !writes.iter().any(|w| w.channel == special::DONE.0) {
        return None;
    }
    let mut u = Update::new();
    for w in writes {
        match w.channel.as_str() {
            "__done__" => {}
            "__goto__" => u.goto.push(crate::update::Goto::from(
                w.value.as_str().unwrap_or_default(),
            )),
            "__send__" => u.goto.push(crate::update::Goto::Send(crate::update::Send {
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
pub(crate) fn interrupts_of(pending: &[PendingWrite]) -> Vec<Interrupt> {
    pending
        .iter()
        .filter(|w| w.channel == special::INTERRUPT.0)
        .flat_map(|w| serde_json::from_value::<Vec<Interrupt>>(w.value.clone()).unwrap_or_default())
        .collect()
}
