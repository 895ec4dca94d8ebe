//! Tools that models call: the [`Tool`] trait and what a call returns.

use crate::models::{ChatModel, Pricing, ToolSpec};
use agentgraph_runtime::StateView;
use agentgraph_runtime::{stable_id, Interrupt, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub mod recover;
mod schema;
mod source;
mod usage;
pub use schema::validate_args;
pub use source::{ListedTools, ToolSource};
pub use usage::UsageLedger;

/// What a tool returns: the content of its tool message, plus state writes (e.g. queued
/// operations) applied with the tool executor's update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The tool message content (a string or JSON).
    pub content: Value,
    /// Channel writes.
    pub writes: Vec<(String, Value)>,
}

impl ToolOutput {
    /// A text result.
    pub fn text(s: impl Into<String>) -> Self {
        ToolOutput {
            content: Value::String(s.into()),
            writes: Vec::new(),
        }
    }

    /// Adds a channel write.
    pub fn write(mut self, channel: impl Into<String>, value: Value) -> Self {
        self.writes.push((channel.into(), value));
        self
    }
}

/// A failed tool call, reported to the model as a tool message it can act on.
///
/// A tool that asks a human returns the error of [`TaskContext::interrupt`] with `?` (through
/// `From<NodeError>`): the error then carries the interrupts, and the tool executor interrupts
/// the whole node instead of reporting an error to the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// A stable code (`INVALID_INPUT`, `NOT_FOUND`, …).
    pub code: String,
    /// What went wrong and what to do instead.
    pub message: String,
    /// Pending human questions (code `INTERRUPTED`); empty for a real failure.
    pub interrupts: Vec<Interrupt>,
}

impl From<NodeError> for ToolError {
    fn from(e: NodeError) -> Self {
        match e {
            NodeError::Interrupted(interrupts) => ToolError {
                code: "INTERRUPTED".into(),
                message: "waiting for a human answer".into(),
                interrupts,
            },
            NodeError::Failed { message, code, .. } => {
                ToolError::new(code.unwrap_or_else(|| "FAILED".into()), message)
            }
            NodeError::Timeout(d) => ToolError::new("TIMEOUT", format!("timed out after {d:?}")),
            NodeError::Cancelled => ToolError::new("CANCELLED", "the run was cancelled"),
        }
    }
}

impl ToolError {
    /// An error with a code and an actionable message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            code: code.into(),
            message: message.into(),
            interrupts: Vec::new(),
        }
    }
}

/// What a tool sees: the calling task (state snapshot as of the step's start, run settings,
/// event emitter, interrupts, cancellation, the graph's long-term store — through `Deref`:
/// `ctx.store()`), a model handle for tools that make nested LLM calls, the model and prices
/// for child runs with their own usage, the ledger their usage goes to, and the tool's own
/// settings.
#[derive(Clone)]
pub struct ToolContext {
    task: TaskContext,
    model: Option<Arc<dyn ChatModel>>,
    child_model: Option<Arc<dyn ChatModel>>,
    pricing: Option<Pricing>,
    usage: UsageLedger,
    settings: Arc<Value>,
    batch_writes: Arc<Vec<(String, Value)>>,
}

impl std::ops::Deref for ToolContext {
    type Target = TaskContext;
    fn deref(&self) -> &TaskContext {
        &self.task
    }
}

impl ToolContext {
    /// A context for a call made by `task`, with no model and no settings.
    pub fn new(task: TaskContext) -> Self {
        ToolContext {
            task,
            model: None,
            child_model: None,
            pricing: None,
            usage: UsageLedger::default(),
            settings: Arc::new(Value::Null),
            batch_writes: Arc::new(Vec::new()),
        }
    }

    /// A context outside any run, over `state` (tests, direct calls).
    pub fn detached(state: StateView) -> Self {
        Self::new(TaskContext::detached(state, None))
    }

    /// Gives the tool a model for nested calls.
    pub fn with_model(mut self, model: Option<Arc<dyn ChatModel>>) -> Self {
        self.model = model;
        self
    }

    /// Gives the tool the model for child runs that record their own usage (the caller's
    /// model unwrapped: calls through it are not metered by the caller) and its prices.
    pub fn with_child_model(
        mut self,
        model: Option<Arc<dyn ChatModel>>,
        pricing: Option<Pricing>,
    ) -> Self {
        self.child_model = model;
        self.pricing = pricing;
        self
    }

    /// Hands the usage of the tool's child runs to `ledger` (the caller's).
    pub fn with_usage(mut self, ledger: UsageLedger) -> Self {
        self.usage = ledger;
        self
    }

    /// Gives the tool its settings (from the graph's tool block or the embedding app).
    pub fn with_settings(mut self, settings: Arc<Value>) -> Self {
        self.settings = settings;
        self
    }

    /// Gives the tool the writes of the calls before it in its batch (see
    /// [`ToolContext::batch_writes`]).
    pub fn with_batch_writes(mut self, writes: Arc<Vec<(String, Value)>>) -> Self {
        self.batch_writes = writes;
        self
    }

    /// The channel writes of the calls before this one in the same batch, in call order, which
    /// the state does not hold yet: empty, except when the tool executor runs a failed call
    /// again after those calls ([`Tool::rerun_after_batch`]). A tool reading a channel that
    /// other tools of the batch write (queued workflow operations) folds these in.
    pub fn batch_writes(&self) -> &[(String, Value)] {
        &self.batch_writes
    }

    /// The calling task.
    pub fn task(&self) -> &TaskContext {
        &self.task
    }

    /// The model for nested calls; `NO_MODEL` when the executor was given none.
    pub fn model(&self) -> Result<&Arc<dyn ChatModel>, ToolError> {
        self.model.as_ref().ok_or_else(|| {
            ToolError::new(
                "NO_MODEL",
                "this tool needs a model but its tool executor has none; give the \
                 tool_executor node a `model`",
            )
        })
    }

    /// The model for a child run that records its own usage (a sub-agent, a background
    /// task): the caller's model as given, without the caller's metering, so its calls are
    /// counted once, through [`ToolContext::usage`]. Falls back to [`ToolContext::model`].
    pub fn child_model(&self) -> Result<&Arc<dyn ChatModel>, ToolError> {
        match &self.child_model {
            Some(m) => Ok(m),
            None => self.model(),
        }
    }

    /// The prices of the caller's model, for the cost in a child run's usage records.
    pub fn pricing(&self) -> Option<Pricing> {
        self.pricing
    }

    /// Where the tool records its child runs' usage ([`UsageLedger::record`]); the caller adds
    /// it to its usage channel when the call is done.
    pub fn usage(&self) -> &UsageLedger {
        &self.usage
    }

    /// The tool's settings (`null` when none were given).
    pub fn settings(&self) -> &Value {
        &self.settings
    }

    /// A key naming this call, for services that deduplicate requests (`Idempotency-Key`).
    ///
    /// A run that crashes or stops for a human resumes from its last checkpoint and runs the
    /// interrupted step again, calling its tools again: the key is then the same, because it is
    /// derived from the thread, the subgraph path and the task id, and a task's id comes from
    /// the checkpoint the step started from, the node and the call's id in the model's message.
    /// A fork, a new input or a later step gives other keys. 32 hex digits prefixed `ag-`.
    pub fn idempotency_key(&self) -> String {
        let ns = self.task.ns().join("|");
        let id = stable_id(&[
            "idempotency",
            self.task.thread_id(),
            &ns,
            self.task.task_id(),
        ]);
        format!("ag-{id}")
    }
}

/// A tool.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name models call it by.
    fn name(&self) -> &str;
    /// What it does.
    fn description(&self) -> &str;
    /// JSON schema of its arguments (checked before `call`).
    fn input_schema(&self) -> Value;
    /// Runs the tool with arguments already checked against [`Tool::input_schema`]. `ctx`
    /// gives the state as of the step's start, run settings, custom events (progress),
    /// interrupts, cancellation and a model handle.
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Whether a call that failed with `error` may succeed once the calls before it in its
    /// batch have taken effect (a connection to a node that an earlier call of the batch
    /// adds). The tool executor then runs it again, after the batch's other calls, with their
    /// writes in [`ToolContext::batch_writes`]. Default: no.
    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        let _ = error;
        false
    }

    /// Whether the result depends on the arguments alone: no workflow or run state, no outside
    /// world, no side effects (a catalogue search). A call repeating one that already
    /// succeeded earlier in the conversation is then answered `REPEATED_CALL` instead of run
    /// again: its result is there already, and a small model that re-sends a search keeps
    /// adding the same thousands of tokens. Default: no.
    fn pure(&self) -> bool {
        false
    }

    /// The spec sent to models.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            input_schema: self.input_schema(),
        }
    }
}
