//! Nodes: the async units of work, and the context each task gets.

use crate::ids::stable_id;
use crate::state::StateView;
use crate::store::Store;
use crate::stream::{Emitter, EventKind, Mode};
use crate::subgraph::Subgraph;
use crate::update::Update;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A pending human-in-the-loop question raised by a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Stable id: the same call site of the same task always gets the same id.
    pub id: String,
    /// What the node asks (shown to the human).
    pub value: Value,
    /// The node that raised it.
    pub node: String,
    /// The subgraph path of that node (empty at the root).
    pub ns: Vec<String>,
}

/// Why a node did not produce an update.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeError {
    /// The node is waiting for a human; the run stops and resumes later.
    #[error("interrupted: {}", .0.iter().map(|i| i.id.as_str()).collect::<Vec<_>>().join(", "))]
    Interrupted(Vec<Interrupt>),
    /// The node failed. `retryable` failures are retried by the default retry policy.
    #[error("{message}")]
    Failed {
        /// What went wrong, for the user and the log.
        message: String,
        /// A stable machine-readable code, if any.
        code: Option<String>,
        /// Whether a retry may succeed (network errors, rate limits).
        retryable: bool,
    },
    /// The node ran longer than its timeout.
    #[error("exceeded its timeout of {0:?}")]
    Timeout(Duration),
    /// The run was cancelled while the node ran.
    #[error("cancelled")]
    Cancelled,
}

impl NodeError {
    /// A failure that retrying will not fix.
    pub fn fatal(message: impl Into<String>) -> Self {
        NodeError::Failed {
            message: message.into(),
            code: None,
            retryable: false,
        }
    }

    /// A failure worth retrying.
    pub fn transient(message: impl Into<String>) -> Self {
        NodeError::Failed {
            message: message.into(),
            code: None,
            retryable: true,
        }
    }

    /// Adds a machine-readable code to a failure.
    pub fn with_code(self, code: impl Into<String>) -> Self {
        match self {
            NodeError::Failed {
                message, retryable, ..
            } => NodeError::Failed {
                message,
                code: Some(code.into()),
                retryable,
            },
            other => other,
        }
    }
}

/// A node of a graph.
///
/// A task gets a [`TaskContext`] (the state as of the step's start, its send payload, an event
/// emitter, interrupts, cancellation) and returns an [`Update`]; it never mutates shared state.
#[async_trait]
pub trait Node: Send + Sync + 'static {
    /// Runs one task of this node.
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError>;
}

/// A node made from an async closure.
pub struct FnNode<F>(pub F);

#[async_trait]
impl<F, Fut> Node for FnNode<F>
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Update, NodeError>> + Send + 'static,
{
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        (self.0)(ctx).await
    }
}

/// Wraps an async closure as a node.
///
/// ```
/// use agentgraph_runtime::{node_fn, Update};
/// use serde_json::json;
/// let bump = node_fn(|ctx| async move {
///     Ok(Update::new().set("count", json!(ctx.state().i64("count") + 1)))
/// });
/// # let _ = bump;
/// ```
pub fn node_fn<F, Fut>(f: F) -> Arc<dyn Node>
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Update, NodeError>> + Send + 'static,
{
    Arc::new(FnNode(f))
}

/// The run a task belongs to, as the task sees it: the handle through which nodes reach the
/// engine (implemented by it), so that nodes never depend on its internals.
#[async_trait]
pub(crate) trait TaskHost: Send + Sync {
    /// The run's id.
    fn run_id(&self) -> &str;
    /// The run's settings ([`crate::RunConfig::configurable`]).
    fn configurable(&self) -> &serde_json::Map<String, Value>;
    /// Runs `sub` as a child of the task `ctx`: in the task's namespace, with the run's store,
    /// thread and cancellation token.
    async fn run_subgraph(&self, sub: &Subgraph, ctx: TaskContext) -> Result<Update, NodeError>;
    /// The run's checkpointer (`None`: the graph has none).
    fn checkpointer(&self) -> Option<Arc<dyn crate::checkpoint::Checkpointer>>;
}

/// Everything a task can see and do.
#[derive(Clone)]
pub struct TaskContext {
    pub(crate) state: StateView,
    pub(crate) payload: Option<Value>,
    pub(crate) node: Arc<str>,
    pub(crate) task_id: Arc<str>,
    pub(crate) step: i64,
    pub(crate) ns: Arc<Vec<String>>,
    pub(crate) thread_id: Arc<str>,
    pub(crate) emitter: Emitter,
    pub(crate) cancel: CancellationToken,
    pub(crate) resume: Arc<BTreeMap<String, Value>>,
    pub(crate) interrupt_calls: Arc<AtomicUsize>,
    /// The run executing the task (`None` outside a run).
    pub(crate) host: Option<Arc<dyn TaskHost>>,
    /// Writes the task hands back even when it fails, if its failure is caught (`catch`): a
    /// subgraph's progress up to its last finished step.
    pub(crate) salvage: Salvage,
    /// The graph's long-term store (`None`: the graph has none).
    pub(crate) store: Option<Arc<dyn Store>>,
    /// Set when an interrupt of the task (or of its nested calls) returned a human's answer:
    /// such a result is not cached.
    pub(crate) answered: Arc<AtomicBool>,
}

/// See [`TaskContext::salvage`].
pub(crate) type Salvage = Arc<std::sync::Mutex<Option<Vec<(String, Value)>>>>;

impl TaskContext {
    /// The state as of the start of the step.
    pub fn state(&self) -> &StateView {
        &self.state
    }

    /// The payload of a push task (`send`), `None` for a normal task.
    pub fn payload(&self) -> Option<&Value> {
        self.payload.as_ref()
    }

    /// The task's input: the send payload when there is one, else the whole state as an object.
    pub fn input(&self) -> Value {
        self.payload
            .clone()
            .unwrap_or_else(|| self.state.to_object())
    }

    /// This task's node name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The deterministic task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The super-step number.
    pub fn step(&self) -> i64 {
        self.step
    }

    /// The thread the run belongs to.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The subgraph path of this task (empty at the root).
    pub fn ns(&self) -> &[String] {
        &self.ns
    }

    /// The id of the current run (a fresh uuid per invoke/stream call; empty outside a run).
    pub fn run_id(&self) -> &str {
        self.host.as_ref().map_or("", |h| h.run_id())
    }

    /// The run's settings ([`crate::RunConfig::configurable`]); empty outside a run.
    pub fn configurable(&self) -> &serde_json::Map<String, Value> {
        static EMPTY: std::sync::OnceLock<serde_json::Map<String, Value>> =
            std::sync::OnceLock::new();
        match &self.host {
            Some(host) => host.configurable(),
            None => EMPTY.get_or_init(serde_json::Map::new),
        }
    }

    /// The graph's store: memory shared by every thread
    /// ([`crate::CompiledGraph::with_store`]); `None` when the graph has none.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    /// The run's checkpointer (`None` outside a run or when the graph has none): where work
    /// that outlives the task (a detached run on another thread) keeps its checkpoints.
    pub fn checkpointer(&self) -> Option<Arc<dyn crate::checkpoint::Checkpointer>> {
        self.host.as_ref().and_then(|h| h.checkpointer())
    }

    /// The context with a store (a detached call, a tool called outside a run).
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The run's cancellation token: long work should stop when it fires.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The event emitter (for tools and nested calls).
    pub fn emitter(&self) -> &Emitter {
        &self.emitter
    }

    /// Emits a `custom` event (progress) while the task runs.
    pub async fn emit_custom(&self, data: Value) {
        self.emitter
            .emit(Some(&self.node), EventKind::Custom(data))
            .await;
    }

    /// Emits a `messages` event (an LLM token chunk).
    pub async fn emit_message(&self, chunk: Value) {
        self.emitter
            .emit(Some(&self.node), EventKind::Messages(chunk))
            .await;
    }

    /// Whether a stream mode is being consumed (skip building expensive payloads otherwise).
    pub fn streaming(&self, mode: Mode) -> bool {
        self.emitter.enabled(mode)
    }

    /// Asks a human. The first time, this returns `Err(NodeError::Interrupted)`: return it with
    /// `?`. The run stops; when it is resumed with a value, the node runs again from its start
    /// and this call returns that value. Ids come from the call order within the task; use
    /// [`TaskContext::interrupt_keyed`] when the order of calls can change between runs.
    pub fn interrupt(&self, value: Value) -> Result<Value, NodeError> {
        let n = self.interrupt_calls.fetch_add(1, Ordering::SeqCst);
        self.interrupt_keyed(&format!("call#{n}"), value)
    }

    /// Like [`TaskContext::interrupt`], with an explicit call-site key that makes the id
    /// independent of call order.
    pub fn interrupt_keyed(&self, key: &str, value: Value) -> Result<Value, NodeError> {
        let id = stable_id(&[&self.ns.join("|"), &self.task_id, key]);
        if let Some(answer) = self.resume.get(&id) {
            self.answered.store(true, Ordering::SeqCst);
            return Ok(answer.clone());
        }
        Err(NodeError::Interrupted(vec![Interrupt {
            id,
            value,
            node: self.node.to_string(),
            ns: self.ns.as_ref().clone(),
        }]))
    }

    /// A context for one nested call made by this task (a tool call, keyed by `key`): the same
    /// state, stream and cancellation, its own task id (`stable_id(task id, key)`) and its own
    /// interrupt counter, so interrupts raised by concurrent calls keep distinct, stable ids.
    pub fn scoped(&self, key: &str) -> TaskContext {
        let mut ctx = self.clone();
        ctx.task_id = Arc::from(stable_id(&[&self.task_id, key]));
        ctx.interrupt_calls = Arc::new(AtomicUsize::new(0));
        ctx
    }

    /// A context for calling a node outside a graph run (tests, tools).
    pub fn detached(state: StateView, payload: Option<Value>) -> Self {
        TaskContext {
            state,
            payload,
            node: Arc::from("detached"),
            task_id: Arc::from("detached"),
            step: 0,
            ns: Arc::new(Vec::new()),
            thread_id: Arc::from(""),
            emitter: Emitter::disabled(),
            cancel: CancellationToken::new(),
            resume: Arc::new(BTreeMap::new()),
            interrupt_calls: Arc::new(AtomicUsize::new(0)),
            host: None,
            salvage: Salvage::default(),
            store: None,
            answered: Arc::default(),
        }
    }

    /// The context with another cancellation token: a detached call that a caller outside
    /// any run can stop (a served tool whose request was cancelled).
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}
