//! The run loop: one run of one graph in one namespace, a super-step at a time —
//! limit → plan → interrupt-before → execute → settle (apply or save what is left) →
//! interrupt-after.
//!
//! A [`Run`] owns its channels ([`Channels`]), frontier ([`Frontier`]) and store cursor
//! ([`Store`]); its fields are private, so the invariants between them (step, parent
//! checkpoint, pending writes) are kept by the methods below only.

use super::apply::{check_input, Channels, WriteCheck};
use super::changes::ChangeLog;
use super::persist::{encode_update, Snapshot, Store};
use super::plan::{Frontier, Site, TaskPlan};
use super::runner::{self, StepEnv, TaskEnd};
use super::{Durability, Input, RunStats, RunStatus};
use crate::checkpoint::{special, Checkpoint, Checkpointer, Source};
use crate::error::RunError;
use crate::graph::GraphInner;
use crate::ids::CheckpointId;
use crate::node::Interrupt;
use crate::state::StateView;
use crate::stream::{Emitter, Event, EventKind, Mode, Modes};
use crate::update::{Update, END, START};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use tokio::sync::mpsc;
use tracing::Instrument;

/// What every task of a run (and of its subgraphs) shares.
pub(crate) struct RunScope {
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The store tasks reach through [`crate::TaskContext::store`].
    pub store: Option<Arc<dyn crate::store::Store>>,
    /// Where nodes with a cache policy keep their updates.
    pub cache: Option<Arc<dyn crate::cache::NodeCache>>,
    pub thread: Arc<str>,
    pub durability: Durability,
    /// See [`super::RunConfig::keep_checkpoints`].
    pub keep_checkpoints: Option<usize>,
    pub cancel: tokio_util::sync::CancellationToken,
    /// Resume answers by interrupt id (a subgraph gets its parent task's).
    pub resume: Arc<BTreeMap<String, Value>>,
    pub recursion_limit: Option<usize>,
    pub run_id: Arc<str>,
    pub configurable: Arc<Map<String, Value>>,
}

/// One run of one graph in one namespace.
pub(crate) struct Run {
    graph: Arc<GraphInner>,
    scope: Arc<RunScope>,
    ns: Arc<Vec<String>>,
    ns_key: String,
    emitter: Emitter,
    channels: Channels,
    frontier: Frontier,
    store: Store,
    /// Step of the latest checkpoint.
    step: i64,
    /// The answers tasks see: the scope's, merged with those saved on the thread.
    resume: Arc<BTreeMap<String, Value>>,
    stats: RunStats,
    /// Executions per node index in this run (for the recursion-limit error).
    node_counts: Vec<u64>,
    interrupt_before: HashSet<usize>,
    interrupt_after: HashSet<usize>,
    /// A resumed run does not stop again before the step it stopped before.
    skip_before_once: bool,
    /// The run continues from an explicitly chosen checkpoint (time travel): fork first.
    fork_requested: bool,
    /// A command a subgraph's task addressed to the parent graph; ends the child run.
    parent_command: Option<Update>,
    /// Called with the state after each applied step (a subgraph's progress for its parent).
    pub(super) on_step: Option<StepHook>,
}

/// See [`Run::on_step`].
pub(super) type StepHook = Box<dyn Fn(&StateView) + Send + Sync>;

impl Run {
    /// A run of `graph` in namespace `ns`, at the channels' defaults, nothing planned.
    pub(super) fn new(
        graph: Arc<GraphInner>,
        scope: Arc<RunScope>,
        ns: Vec<String>,
        emitter: Emitter,
    ) -> Self {
        let ns_key = ns.join("|");
        let store = Store::new(
            scope.checkpointer.clone(),
            scope.thread.clone(),
            ns_key.clone(),
            scope.durability,
            scope.run_id.clone(),
        )
        .keep_checkpoints(scope.keep_checkpoints);
        Run {
            channels: Channels::new(graph.schema.clone(), scope.checkpointer.is_some()),
            frontier: Frontier::default(),
            store,
            step: -2,
            resume: scope.resume.clone(),
            stats: RunStats::default(),
            node_counts: vec![0; graph.nodes.len()],
            interrupt_before: graph.interrupt_before.clone(),
            interrupt_after: graph.interrupt_after.clone(),
            skip_before_once: false,
            fork_requested: false,
            parent_command: None,
            on_step: None,
            graph,
            scope,
            ns: Arc::new(ns),
            ns_key,
            emitter,
        }
    }

    /// Replaces the graph's static interrupts (node indexes).
    pub(super) fn set_breakpoints(
        &mut self,
        before: Option<HashSet<usize>>,
        after: Option<HashSet<usize>>,
    ) {
        if let Some(b) = before {
            self.interrupt_before = b;
        }
        if let Some(a) = after {
            self.interrupt_after = a;
        }
    }

    /// The run continues from an explicitly chosen checkpoint: it forks before anything else.
    pub(super) fn request_fork(&mut self) {
        self.fork_requested = true;
    }

    /// Streams the run's events of `modes` to `tx`, numbered after the loaded checkpoint's.
    pub(super) fn stream_to(&mut self, modes: Modes, tx: mpsc::Sender<Event>) {
        self.emitter = Emitter::new(modes, tx, self.store.event_seq());
    }

    pub(super) fn view(&self) -> StateView {
        self.channels.view()
    }

    pub(super) fn output(&self) -> Value {
        self.channels.output()
    }

    pub(super) fn next_names(&self) -> Vec<String> {
        self.frontier.names()
    }

    /// The latest checkpoint (virtual without a checkpointer).
    pub(super) fn checkpoint_id(&self) -> Option<CheckpointId> {
        self.store.parent()
    }

    pub(super) fn stats(&self) -> RunStats {
        RunStats {
            checkpoints_written: self.store.checkpoints_written(),
            ..self.stats
        }
    }

    /// The interrupts pending on the latest checkpoint.
    pub(super) fn pending_interrupts(&self) -> Vec<Interrupt> {
        self.store.pending_interrupts()
    }

    /// Starts tracking what the run writes (a subgraph's hand-back).
    pub(super) fn track_written(&mut self) {
        self.channels.track_written();
    }

    /// What the run wrote: tracked since its input, or (a subgraph resumed across runs)
    /// rebuilt from its checkpoints.
    pub(super) async fn written(&mut self) -> Result<ChangeLog, RunError> {
        match self.channels.take_written() {
            Some(w) => Ok(w),
            None => self.store.written_since_start(&self.channels).await,
        }
    }

    /// The writes that hand `log` back to a parent graph.
    pub(super) fn parent_writes(&self, log: &ChangeLog) -> Vec<(String, Value)> {
        self.channels.parent_writes(log)
    }

    /// The command a task addressed to the parent graph, if any.
    pub(super) fn take_parent_command(&mut self) -> Option<Update> {
        self.parent_command.take()
    }

    /// Loads the thread's checkpoint (`id`, or the newest); a no-op for a new thread.
    pub(super) async fn load(
        &mut self,
        id: Option<CheckpointId>,
    ) -> Result<Option<Checkpoint>, RunError> {
        let loaded = self.store.load(&self.graph, &mut self.channels, id).await?;
        Ok(loaded.map(|(c, frontier)| {
            self.frontier = frontier;
            self.step = c.step;
            c
        }))
    }

    async fn save(
        &mut self,
        source: Source,
        input: Option<Value>,
        metadata: Map<String, Value>,
    ) -> Result<(), RunError> {
        let at = Snapshot {
            step: self.step,
            channels: &mut self.channels,
            frontier: &self.frontier,
            emitter: &self.emitter,
        };
        self.store.save(at, source, input, metadata).await
    }

    /// Ends the run's storage work (see [`Store::finish`]).
    pub(super) async fn finish_storage(&mut self) -> Result<(), RunError> {
        let at = Snapshot {
            step: self.step,
            channels: &mut self.channels,
            frontier: &self.frontier,
            emitter: &self.emitter,
        };
        self.store.finish(at).await
    }

    /// Applies the run's input, or prepares a resume. `loaded` is what [`Run::load`] returned;
    /// `strict` checks resume values against the pending interrupts (off inside subgraphs, which
    /// receive the root's whole resume map).
    pub(super) async fn begin(
        &mut self,
        input: Input,
        loaded: Option<&Checkpoint>,
        strict: bool,
    ) -> Result<(), RunError> {
        // A fork continuing from an input checkpoint re-applies that input (below).
        if let (Some(c), Input::Continue | Input::Resume(_)) = (loaded, &input) {
            if self.fork_requested {
                self.step = c.step + 1;
                self.store.clear_pending();
                self.save(Source::Fork, None, Map::new()).await?;
            }
        }
        let resume = match input {
            Input::Values(v) => {
                check_input(&self.graph, &v)?;
                self.step = if loaded.is_some() { self.step + 1 } else { -1 };
                self.frontier.start_with_input();
                self.save(Source::Input, Some(v.clone()), Map::new())
                    .await?;
                return self.apply_input(v).await;
            }
            Input::Continue => None,
            Input::Resume(r) => Some(r),
        };
        let Some(c) = loaded else {
            return Err(match self.scope.checkpointer {
                Some(_) => RunError::NothingToResume(self.scope.thread.to_string()),
                None => RunError::NoCheckpointer("resuming"),
            });
        };
        if c.source == Source::Input {
            if let Some(v) = c.input.clone() {
                return self.apply_input(v).await;
            }
        }
        let mut merged = self.store.saved_answers();
        merged.extend(
            self.scope
                .resume
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        if let Some(r) = resume {
            merged.extend(self.store.resolve_resume(r, strict)?);
            let v = serde_json::to_value(&merged).unwrap_or(Value::Null);
            self.store.put_special(special::RESUME.0, v).await?;
        }
        self.resume = Arc::new(merged);
        self.skip_before_once = true;
        if self.emitter.enabled(Mode::Values) {
            self.emitter
                .emit(None, EventKind::Values(self.output()))
                .await;
        }
        Ok(())
    }

    /// Applies the input as the writes of `__start__` and plans the entry nodes.
    async fn apply_input(&mut self, v: Value) -> Result<(), RunError> {
        let writes: Vec<(String, Value)> = match v {
            Value::Object(m) => m.into_iter().collect(),
            _ => Vec::new(),
        };
        self.step += 1;
        let chans = self
            .channels
            .apply(START, writes, &mut WriteCheck::new(self.step))?;
        self.frontier.after_start(
            &self.graph,
            &self.channels,
            &site(&self.scope, &self.ns, self.step),
        )?;
        let names: BTreeSet<String> = self.channels.names(&chans).into_iter().collect();
        let mut meta = Map::new();
        meta.insert("writes".into(), json!({ START: names }));
        if self.emitter.enabled(Mode::Values) {
            self.emitter
                .emit(None, EventKind::Values(self.output()))
                .await;
        }
        self.save(Source::Loop, None, meta).await
    }

    /// Writes `writes` to the loaded checkpoint `c` as node `as_node` would have, plans that
    /// node's successors and saves a checkpoint of source `update`.
    pub(super) async fn update_as(
        &mut self,
        c: &Checkpoint,
        as_node: &str,
        writes: Vec<(String, Value)>,
    ) -> Result<(), RunError> {
        self.step = c.step + 1;
        self.store.clear_pending();
        let chans = self
            .channels
            .apply(as_node, writes, &mut WriteCheck::new(self.step))?;
        let graph = self.graph.clone();
        match as_node {
            END | "END" => self.frontier.clear(),
            START | "START" => {
                self.frontier.after_start(
                    &graph,
                    &self.channels,
                    &site(&self.scope, &self.ns, self.step),
                )?;
            }
            name => {
                let node = *graph.node_index.get(name).ok_or_else(|| {
                    RunError::Update(format!(
                        "as_node `{name}` is not a node; nodes: {}",
                        graph.known_nodes()
                    ))
                })?;
                let plan = TaskPlan {
                    node,
                    payload: None,
                    id: String::new(),
                };
                let site = site(&self.scope, &self.ns, self.step + 1);
                self.frontier.after_step(
                    &graph,
                    &self.channels,
                    &[plan],
                    &mut [(Update::new(), false)],
                    &site,
                )?;
            }
        }
        let mut meta = Map::new();
        meta.insert(
            "writes".into(),
            json!({ as_node: self.channels.names(&chans) }),
        );
        self.save(Source::Update, None, meta).await
    }

    /// Runs steps until nothing is planned, an interrupt, a failure or the limit.
    pub(super) async fn run_loop(&mut self) -> Result<RunStatus, RunError> {
        let limit = self
            .scope
            .recursion_limit
            .unwrap_or(self.graph.recursion_limit);
        let mut steps_run = 0usize;
        loop {
            if self.frontier.is_empty() {
                return Ok(RunStatus::Done);
            }
            if self.scope.cancel.is_cancelled() {
                return Err(RunError::Cancelled(self.scope.thread.to_string()));
            }
            if steps_run >= limit {
                return Err(RunError::RecursionLimit {
                    limit,
                    thread: self.scope.thread.to_string(),
                    nodes: self.top_nodes(),
                });
            }
            let parent = self
                .store
                .parent()
                .map(|p| p.to_string())
                .unwrap_or_default();
            let mut plans = self.frontier.tasks(&self.graph, &self.ns_key, &parent)?;
            let skip = std::mem::replace(&mut self.skip_before_once, false);
            if !skip
                && plans
                    .iter()
                    .any(|p| self.interrupt_before.contains(&p.node))
            {
                return Ok(self.breakpoint());
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
            if let Some(hook) = &self.on_step {
                hook(&self.view());
            }
            if self.parent_command.is_some() {
                return Ok(RunStatus::Done);
            }
            if plans.iter().any(|p| self.interrupt_after.contains(&p.node))
                && !self.frontier.is_empty()
            {
                return Ok(self.breakpoint());
            }
        }
    }

    fn breakpoint(&self) -> RunStatus {
        RunStatus::Interrupted {
            interrupts: Vec::new(),
            next: self.next_names(),
        }
    }

    /// The nodes that ran most, with counts.
    fn top_nodes(&self) -> String {
        let mut counts: Vec<(&str, u64)> = self
            .node_counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (self.graph.nodes[i].name.as_str(), c))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
            .iter()
            .take(5)
            .map(|(n, c)| format!("{n} ×{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs the step's tasks (see [`runner::execute`]).
    async fn execute(&mut self, step: i64, plans: &mut [TaskPlan]) -> Vec<TaskEnd> {
        let env = StepEnv {
            graph: &self.graph,
            step,
            state: self.channels.view(),
            ns: &self.ns,
            thread: &self.scope.thread,
            emitter: &self.emitter,
            cancel: &self.scope.cancel,
            resume: &self.resume,
            host: self.scope.clone(),
            store: self.scope.store.clone(),
            cache: self.scope.cache.clone(),
            finished: self.store.finished_tasks(),
        };
        let ran = runner::execute(env, plans, &mut self.node_counts).await;
        self.stats.tasks += ran.executed;
        ran.ends
    }

    /// Applies a completed step, or saves what a step that did not complete leaves behind (as
    /// pending writes against the checkpoint before it) and turns it into the run's status.
    async fn settle(
        &mut self,
        step: i64,
        plans: &[TaskPlan],
        ended: Vec<TaskEnd>,
    ) -> Result<Option<RunStatus>, RunError> {
        if ended.iter().all(|e| matches!(e, TaskEnd::Done { .. })) {
            let updates = ended
                .into_iter()
                .filter_map(|e| match e {
                    TaskEnd::Done { update, cached, .. } => Some((update, cached)),
                    _ => None,
                })
                .collect();
            self.apply_step(step, plans, updates).await?;
            return Ok(None);
        }
        if self.scope.durability == Durability::Exit {
            self.finish_storage().await?;
        }
        let mut interrupts = Vec::new();
        let mut failure: Option<RunError> = None;
        let mut saves: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        for (plan, end) in plans.iter().zip(ended) {
            if let Some(text) = end.error_text() {
                saves.push((
                    plan.id.clone(),
                    vec![(special::ERROR.0.to_string(), Value::String(text))],
                ));
            }
            match end {
                TaskEnd::Done {
                    update,
                    saved: false,
                    ..
                } => saves.push((plan.id.clone(), encode_update(&update))),
                TaskEnd::Done { saved: true, .. } => {}
                TaskEnd::Interrupted(list) => {
                    let v = serde_json::to_value(&list).unwrap_or(Value::Null);
                    saves.push((plan.id.clone(), vec![(special::INTERRUPT.0.to_string(), v)]));
                    interrupts.extend(list);
                }
                TaskEnd::Failed(_) | TaskEnd::Panicked(_) if failure.is_some() => {}
                end => {
                    let node = &self.graph.nodes[plan.node].name;
                    failure = end.into_error(node, step, &self.scope.thread, &self.ns);
                }
            }
        }
        self.store.put_task_writes(&saves).await?;
        if let Some(e) = failure {
            return Err(e);
        }
        if self.emitter.enabled(Mode::Updates) {
            let v = serde_json::to_value(&interrupts).unwrap_or(Value::Null);
            self.emitter
                .emit(None, EventKind::Updates(json!({ "__interrupt__": v })))
                .await;
        }
        if let Some(seq) = self.emitter.next_seq().await {
            self.store.put_special(special::SEQ.0, json!(seq)).await?;
        }
        Ok(Some(RunStatus::Interrupted {
            interrupts,
            next: self.next_names(),
        }))
    }

    /// Applies a completed step: writes in task order, then the next tasks, then a checkpoint.
    async fn apply_step(
        &mut self,
        step: i64,
        plans: &[TaskPlan],
        mut updates: Vec<(Update, bool)>,
    ) -> Result<(), RunError> {
        let applied = self.channels.apply_step(
            &self.graph,
            self.ns.is_empty(),
            &mut WriteCheck::new(step),
            plans,
            &mut updates,
            self.emitter.enabled(Mode::Updates),
        )?;
        let site = site(&self.scope, &self.ns, self.step + 1);
        self.frontier
            .after_step(&self.graph, &self.channels, plans, &mut updates, &site)?;
        if let Some(u) = applied.to_parent {
            self.parent_command = Some(u);
        }
        self.step = step;
        let mut meta = Map::new();
        if self.store.has_checkpointer() {
            meta.insert(
                "writes".into(),
                serde_json::to_value(&applied.written_by).unwrap_or(Value::Null),
            );
        }
        for (node, data) in applied.events {
            self.emitter
                .emit(
                    Some(&node),
                    EventKind::Updates(json!({ node.clone(): data })),
                )
                .await;
        }
        if self.emitter.enabled(Mode::Values) {
            self.emitter
                .emit(None, EventKind::Values(self.output()))
                .await;
        }
        self.save(Source::Loop, None, meta).await
    }
}

/// Where routes are evaluated, for their errors.
fn site<'a>(scope: &'a RunScope, ns: &'a [String], step: i64) -> Site<'a> {
    Site {
        thread: &scope.thread,
        ns,
        step,
    }
}
