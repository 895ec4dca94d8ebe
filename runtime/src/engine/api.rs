//! The public face of a compiled graph: invoke, stream, state, history, update, fork, threads.

use super::persist::interrupts_of;
use super::r#loop::{Run, RunScope};
use crate::checkpoint::{ListQuery, PruneStats, Source};
use crate::error::RunError;
use crate::graph::CompiledGraph;
use crate::ids::CheckpointId;
use crate::node::Interrupt;
use crate::stream::{Emitter, Event, Modes};
use crate::update::START;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// When checkpoints reach the disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Each checkpoint is flushed before the next step starts (the default: a crash loses at
    /// most the step in flight).
    #[default]
    Sync,
    /// Checkpoints are written at once and flushed in the background; the run's end waits for
    /// the last flush.
    Async,
    /// One checkpoint at the end of the run (or where it stops); nothing in between.
    Exit,
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sync" => Ok(Durability::Sync),
            "async" => Ok(Durability::Async),
            "exit" => Ok(Durability::Exit),
            other => Err(format!(
                "unknown durability `{other}`; expected sync, async or exit"
            )),
        }
    }
}

/// Answers to pending interrupts.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// The answer to the only pending interrupt.
    Value(Value),
    /// Answers by interrupt id (some or all of the pending ones).
    ById(BTreeMap<String, Value>),
}

/// What a run starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// New input: starts from START (pending tasks of the thread are dropped).
    Values(Value),
    /// Answers interrupts and continues the thread.
    Resume(Resume),
    /// Continues the thread from its checkpoint (after a static interrupt, a failure or a crash).
    Continue,
}

impl Input {
    /// New input.
    pub fn values(v: Value) -> Self {
        Input::Values(v)
    }
    /// Resume with the answer to the only pending interrupt.
    pub fn resume(v: Value) -> Self {
        Input::Resume(Resume::Value(v))
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The thread (conversation) id.
    pub thread_id: String,
    /// Continue from this checkpoint instead of the newest (time travel: the run forks).
    pub checkpoint_id: Option<CheckpointId>,
    /// Overrides the graph's recursion limit.
    pub recursion_limit: Option<usize>,
    /// When checkpoints are flushed.
    pub durability: Durability,
    /// Stream modes to produce (only used by [`CompiledGraph::stream`]).
    pub modes: Modes,
    /// Events buffered before producers wait for the consumer.
    pub stream_buffer: usize,
    /// Overrides the graph's static interrupts.
    pub interrupt_before: Option<Vec<String>>,
    /// Overrides the graph's static interrupts.
    pub interrupt_after: Option<Vec<String>>,
    /// Cancels the run (checked between steps and passed to every task).
    pub cancel: CancellationToken,
    /// Run-scoped settings that nodes and tools read with [`crate::TaskContext::configurable`]
    /// (LangGraph's `configurable`: user id, feature flags, a model override…). Not
    /// checkpointed: a resumed run sees the values of the resuming call.
    pub configurable: Map<String, Value>,
    /// The run's id: checkpoint metadata `run_id`, the key of this run's usage in
    /// `usage.runs`, the `run` tracing span. `None` (the default): a new UUID per run. Set
    /// it to tie the run to an id a caller already gave out (the server's `run_id`).
    pub run_id: Option<String>,
    /// Keeps only the newest this many checkpoints of the thread (per namespace) while the
    /// run goes on: older ones are pruned every so many steps (at most twice this many are
    /// stored at once). Bounds the store — and sled's memory — of long runs; history and time
    /// travel reach back only this far. `None` (the default): the graph's setting
    /// ([`crate::GraphBuilder::keep_checkpoints`], the DSL's `config { keep_checkpoints: N }`),
    /// else every checkpoint is kept.
    pub keep_checkpoints: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            thread_id: uuid::Uuid::new_v4().to_string(),
            checkpoint_id: None,
            recursion_limit: None,
            durability: Durability::Sync,
            modes: Modes::all(),
            stream_buffer: 1024,
            interrupt_before: None,
            interrupt_after: None,
            cancel: CancellationToken::new(),
            configurable: Map::new(),
            run_id: None,
            keep_checkpoints: None,
        }
    }
}

impl RunConfig {
    /// Sets one run-scoped setting (see [`RunConfig::configurable`]).
    pub fn configure(mut self, key: impl Into<String>, value: Value) -> Self {
        self.configurable.insert(key.into(), value);
        self
    }

    /// A config for `thread`.
    pub fn thread(thread: impl Into<String>) -> Self {
        RunConfig {
            thread_id: thread.into(),
            ..RunConfig::default()
        }
    }
    /// Continue from an older checkpoint (forks the history).
    pub fn at(mut self, id: CheckpointId) -> Self {
        self.checkpoint_id = Some(id);
        self
    }
    /// Sets the durability mode.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
    /// Sets the stream modes.
    pub fn modes(mut self, modes: Modes) -> Self {
        self.modes = modes;
        self
    }
    /// Sets the recursion limit.
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = Some(limit);
        self
    }
    /// Uses this run id instead of a new UUID (see [`RunConfig::run_id`]).
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }
    /// Keeps only the newest `keep` checkpoints while running (see
    /// [`RunConfig::keep_checkpoints`]; at least 1).
    pub fn keep_checkpoints(mut self, keep: usize) -> Self {
        self.keep_checkpoints = Some(keep.max(1));
        self
    }
    /// Uses this cancellation token.
    pub fn cancel_with(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }
    /// Stops before these nodes (replaces the graph's list).
    pub fn interrupt_before(mut self, nodes: &[&str]) -> Self {
        self.interrupt_before = Some(nodes.iter().map(|s| s.to_string()).collect());
        self
    }
    /// Stops after these nodes (replaces the graph's list).
    pub fn interrupt_after(mut self, nodes: &[&str]) -> Self {
        self.interrupt_after = Some(nodes.iter().map(|s| s.to_string()).collect());
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RunStatus {
    /// Nothing left to run.
    Done,
    /// Stopped at an interrupt; `interrupts` is empty for a static breakpoint.
    Interrupted {
        /// Pending dynamic interrupts.
        interrupts: Vec<Interrupt>,
        /// Nodes that run on resume.
        next: Vec<String>,
    },
}

/// Counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunStats {
    /// Super-steps that ran at least one node.
    pub steps: u64,
    /// Node executions (cached results excluded).
    pub tasks: u64,
    /// Checkpoints stored.
    pub checkpoints_written: u64,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutput {
    /// The output-schema state.
    pub values: Value,
    /// Done or interrupted.
    pub status: RunStatus,
    /// The newest checkpoint (when a checkpointer is set).
    pub checkpoint_id: Option<CheckpointId>,
    /// Counters.
    pub stats: RunStats,
}

/// A thread's state at a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateSnapshot {
    /// Every channel with a value.
    pub values: Value,
    /// Nodes of the next step.
    pub next: Vec<String>,
    /// The checkpoint.
    pub checkpoint_id: CheckpointId,
    /// Its parent.
    pub parent_id: Option<CheckpointId>,
    /// Its step.
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// Pending dynamic interrupts.
    pub interrupts: Vec<Interrupt>,
    /// Metadata (`writes`, `run_id`, …).
    pub metadata: Map<String, Value>,
    /// Creation time, microseconds since the epoch.
    pub created_at_micros: u64,
}

/// One line of a thread's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// The checkpoint.
    pub checkpoint_id: CheckpointId,
    /// Its parent.
    pub parent_id: Option<CheckpointId>,
    /// Namespace (`""` at the root).
    pub ns: String,
    /// Its step.
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// Nodes of the next step.
    pub next: Vec<String>,
    /// Which node wrote which channels in the step.
    pub writes: Value,
    /// Pending dynamic interrupts.
    pub interrupts: Vec<Interrupt>,
}

/// A running graph's events and, at the end, its result.
pub struct RunStream {
    rx: mpsc::Receiver<Event>,
    handle: JoinHandle<Result<RunOutput, RunError>>,
}

impl RunStream {
    /// The next event, `None` when the run is over.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Drains the remaining events and returns the run's result.
    pub async fn finish(mut self) -> Result<RunOutput, RunError> {
        while self.rx.recv().await.is_some() {}
        match self.handle.await {
            Ok(r) => r,
            Err(e) => Err(RunError::NodeFailed {
                node: "runtime".into(),
                step: 0,
                thread: String::new(),
                ns: Vec::new(),
                message: format!("run task failed: {e}"),
                code: None,
            }),
        }
    }

    /// Collects every event, then the result.
    pub async fn collect(mut self) -> (Vec<Event>, Result<RunOutput, RunError>) {
        let mut events = Vec::new();
        while let Some(e) = self.rx.recv().await {
            events.push(e);
        }
        let r = self.finish().await;
        (events, r)
    }
}

impl futures::Stream for RunStream {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }
}

impl CompiledGraph {
    fn shared(&self, config: &RunConfig) -> Arc<RunScope> {
        Arc::new(RunScope {
            checkpointer: self.checkpointer.clone(),
            store: self.store.clone(),
            cache: self.cache.clone(),
            thread: Arc::from(config.thread_id.as_str()),
            durability: config.durability,
            keep_checkpoints: config.keep_checkpoints.or(self.inner.keep_checkpoints),
            cancel: config.cancel.clone(),
            resume: Arc::new(BTreeMap::new()),
            recursion_limit: config.recursion_limit,
            run_id: match &config.run_id {
                Some(id) => Arc::from(id.as_str()),
                None => Arc::from(uuid::Uuid::new_v4().to_string().as_str()),
            },
            configurable: Arc::new(config.configurable.clone()),
        })
    }

    fn resolve_nodes(&self, names: &[String]) -> Result<HashSet<usize>, RunError> {
        if names.iter().any(|n| n == "*") {
            return Ok((0..self.inner.nodes.len()).collect());
        }
        names
            .iter()
            .map(|n| {
                self.inner.node_index.get(n).copied().ok_or_else(|| {
                    RunError::InvalidInput(format!(
                        "interrupt names unknown node `{n}`; nodes: {}",
                        self.inner.known_nodes()
                    ))
                })
            })
            .collect()
    }

    /// Runs the graph to its end (or an interrupt) and returns the output state.
    pub async fn invoke(&self, input: Input, config: RunConfig) -> Result<RunOutput, RunError> {
        self.run_with(input, config, None).await
    }

    /// Runs the graph on a tokio task, streaming events of `config.modes`.
    pub fn stream(&self, input: Input, config: RunConfig) -> RunStream {
        let (tx, rx) = mpsc::channel(config.stream_buffer.max(1));
        let g = self.clone();
        let handle = tokio::spawn(async move { g.run_with(input, config, Some(tx)).await });
        RunStream { rx, handle }
    }

    async fn run_with(
        &self,
        input: Input,
        config: RunConfig,
        tx: Option<mpsc::Sender<Event>>,
    ) -> Result<RunOutput, RunError> {
        let shared = self.shared(&config);
        let span = tracing::info_span!("run", graph = %self.inner.name, thread = %config.thread_id, run_id = %shared.run_id);
        async move {
            let mut run = Run::new(self.inner.clone(), shared, Vec::new(), Emitter::disabled());
            let before = config
                .interrupt_before
                .as_deref()
                .map(|b| self.resolve_nodes(b))
                .transpose()?;
            let after = config
                .interrupt_after
                .as_deref()
                .map(|a| self.resolve_nodes(a))
                .transpose()?;
            run.set_breakpoints(before, after);
            if config.checkpoint_id.is_some() {
                run.request_fork();
            }
            let loaded = run.load(config.checkpoint_id).await?;
            if let Some(tx) = tx {
                run.stream_to(config.modes, tx);
            }
            let result = async {
                run.begin(input, loaded.as_ref(), true).await?;
                run.run_loop().await
            }
            .await;
            let finished = run.finish_storage().await;
            let status = result?;
            finished?;
            Ok(RunOutput {
                values: run.output(),
                status,
                checkpoint_id: self.checkpointer.as_ref().and(run.checkpoint_id()),
                stats: run.stats(),
            })
        }
        .instrument(span)
        .await
    }

    fn checkpointer_or(
        &self,
        what: &'static str,
    ) -> Result<&Arc<dyn crate::checkpoint::Checkpointer>, RunError> {
        self.checkpointer
            .as_ref()
            .ok_or(RunError::NoCheckpointer(what))
    }

    /// The state of `thread` at `checkpoint` (or its newest); `None` for an unknown thread.
    pub async fn get_state(
        &self,
        thread: &str,
        checkpoint: Option<CheckpointId>,
    ) -> Result<Option<StateSnapshot>, RunError> {
        self.checkpointer_or("get_state")?;
        let mut run = Run::new(
            self.inner.clone(),
            self.shared(&RunConfig::thread(thread)),
            Vec::new(),
            Emitter::disabled(),
        );
        let Some(c) = run.load(checkpoint).await? else {
            return Ok(None);
        };
        Ok(Some(StateSnapshot {
            values: run.view().to_object(),
            next: run.next_names(),
            checkpoint_id: c.id,
            parent_id: c.parent,
            step: c.step,
            source: c.source,
            interrupts: run.pending_interrupts(),
            created_at_micros: c.id.timestamp_micros(),
            metadata: c.metadata,
        }))
    }

    /// Checkpoints of `thread`, newest first (root namespace unless the query names another).
    pub async fn history(
        &self,
        thread: &str,
        mut query: ListQuery,
    ) -> Result<Vec<HistoryEntry>, RunError> {
        let cp = self.checkpointer_or("history")?;
        if query.ns.is_none() {
            query.ns = Some(String::new());
        }
        let list = cp.list(thread, &query).await?;
        Ok(list
            .into_iter()
            .map(|t| HistoryEntry {
                checkpoint_id: t.checkpoint.id,
                parent_id: t.checkpoint.parent,
                ns: t.ns,
                step: t.checkpoint.step,
                source: t.checkpoint.source,
                next: t.checkpoint.next.iter().map(|n| n.node.clone()).collect(),
                writes: t
                    .checkpoint
                    .metadata
                    .get("writes")
                    .cloned()
                    .unwrap_or(Value::Null),
                interrupts: interrupts_of(&t.pending_writes),
            })
            .collect())
    }

    /// Writes `values` to the thread as if node `as_node` had (default: the node that ran last),
    /// then plans that node's successors. Returns the new checkpoint (source `update`). With
    /// `checkpoint`, the update branches from that older checkpoint.
    pub async fn update_state(
        &self,
        thread: &str,
        checkpoint: Option<CheckpointId>,
        values: Value,
        as_node: Option<&str>,
    ) -> Result<CheckpointId, RunError> {
        self.checkpointer_or("update_state")?;
        let mut run = Run::new(
            self.inner.clone(),
            self.shared(&RunConfig::thread(thread)),
            Vec::new(),
            Emitter::disabled(),
        );
        let Some(c) = run.load(checkpoint).await? else {
            return Err(RunError::NothingToResume(thread.to_string()));
        };
        let as_node = match as_node {
            Some(n) => n.to_string(),
            None => last_writer(&c.metadata)?,
        };
        let writes: Vec<(String, Value)> = match values {
            Value::Null => Vec::new(),
            Value::Object(m) => m.into_iter().collect(),
            other => {
                return Err(RunError::InvalidInput(format!(
                    "update values must be an object, got {}",
                    crate::value_type::preview(&other, 60)
                )))
            }
        };
        run.update_as(&c, &as_node, writes).await?;
        run.finish_storage().await?;
        run.checkpoint_id()
            .ok_or(RunError::NoCheckpointer("update_state"))
    }

    /// Checks a run input as a run would, before anything is written: an object (or null)
    /// naming only input channels, each value of its channel's type (for servers that want to
    /// answer 400 instead of starting a run that fails).
    pub fn check_input(&self, input: &Value) -> Result<(), RunError> {
        super::apply::check_input(&self.inner, input)
    }

    /// Every thread of the checkpointer.
    pub async fn list_threads(&self) -> Result<Vec<String>, RunError> {
        Ok(self.checkpointer_or("list_threads")?.list_threads().await?)
    }

    /// Removes a thread and all its checkpoints.
    pub async fn delete_thread(&self, thread: &str) -> Result<(), RunError> {
        Ok(self
            .checkpointer_or("delete_thread")?
            .delete_thread(thread)
            .await?)
    }

    /// Keeps the newest `keep` checkpoints per namespace of a thread (or of every thread).
    pub async fn prune(&self, thread: Option<&str>, keep: usize) -> Result<PruneStats, RunError> {
        Ok(self.checkpointer_or("prune")?.prune(thread, keep).await?)
    }
}

/// The node that wrote the checkpoint's step, for `update_state` without `as_node`.
fn last_writer(metadata: &Map<String, Value>) -> Result<String, RunError> {
    let writers: Vec<&String> = metadata
        .get("writes")
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    match writers.as_slice() {
        [] => Ok(START.to_string()),
        [one] => Ok((*one).clone()),
        many => {
            Err(RunError::Update(format!(
            "ambiguous update: the last step ran {}; say which node the update acts as (as_node)",
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )))
        }
    }
}
