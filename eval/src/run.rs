//! Running one case: a compiled builder graph on a fresh thread of an in-memory checkpointer,
//! one human message, the event stream metered, cancelled when it runs out of time or tokens.

use crate::cases::Case;
use crate::meter::Meter;
use crate::EvalError;
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{
    CancellationToken, CompiledGraph, Event, EventKind, Input, MemoryCheckpointer, Mode, Modes,
    Resume, RunConfig, RunError, RunOutput, RunStatus, RunStream,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A builder graph compiled for evaluation.
#[derive(Clone)]
pub struct BuilderGraph {
    /// How rows name it: `single`, `multi` or the path given.
    pub label: String,
    /// The graph file.
    pub path: PathBuf,
    graph: CompiledGraph,
}

impl BuilderGraph {
    /// Loads, checks and compiles the graph at `path` against `registry`, on an in-memory
    /// checkpointer. Diagnostics (a model provider missing, a script not found) are the error.
    pub fn compile(label: &str, path: &Path, registry: &Registry) -> Result<Self, EvalError> {
        let fail = |message: String| EvalError::Graph {
            path: path.to_path_buf(),
            message,
        };
        let project = Project::load(path).map_err(|e| fail(e.to_string()))?;
        let compiled = project.check_and_compile(registry).map_err(|diags| {
            fail(
                diags
                    .iter()
                    .map(|d| project.render(d, false, 100))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })?;
        Ok(BuilderGraph {
            label: label.to_string(),
            path: path.to_path_buf(),
            graph: compiled
                .graph
                .with_checkpointer(Arc::new(MemoryCheckpointer::new())),
        })
    }
}

/// How a case's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The graph ran to its end.
    Done,
    /// The run failed (a node, the model).
    Error,
    /// Cancelled at the case's time budget.
    Timeout,
    /// Cancelled at the case's token budget.
    OverBudget,
    /// Stopped at an interrupt (a question to the user).
    Interrupted,
}

impl Status {
    /// The name rows use.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Done => "done",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::OverBudget => "over_budget",
            Status::Interrupted => "interrupted",
        }
    }
}

/// The budgets of one case.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Wall time before the run is cancelled.
    pub case_timeout: Duration,
    /// Prompt plus completion tokens before the run is cancelled.
    pub max_tokens: Option<u64>,
    /// How long a cancelled run may take to stop before its state is read anyway.
    pub grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            case_timeout: Duration::from_secs(600),
            max_tokens: None,
            grace: Duration::from_secs(30),
        }
    }
}

/// What one run of a case came to.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// How it ended.
    pub status: Status,
    /// The run's error, or why it was cancelled.
    pub error: Option<String>,
    /// The failing node's error code, if any.
    pub error_code: Option<String>,
    /// From the start of the run to its end (or to the cancel and stop).
    pub wall: Duration,
    /// Requests, tokens and tool calls.
    pub meter: Meter,
    /// The thread's state at its last checkpoint (`null` if none was written).
    pub values: Value,
    /// The kinds of the questions answered on the way (instance cases).
    pub answered: Vec<String>,
    /// The namespace whose workflow `values` holds instead of the root's: a run cut inside a
    /// subgraph (a multi-agent phase) is scored on the workflow that subgraph last wrote.
    pub workflow_from: Option<String>,
}

impl CaseRun {
    /// A case that did not run (its setup failed): an error, nothing measured.
    pub fn not_run(why: String) -> Self {
        CaseRun {
            status: Status::Error,
            error: Some(why),
            error_code: None,
            wall: Duration::ZERO,
            meter: Meter::default(),
            values: Value::Null,
            answered: Vec::new(),
            workflow_from: None,
        }
    }
}

/// Called with each tool progress line (`title` of a custom event) while a case runs.
pub type Progress<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// Runs `case` on a fresh thread of `graph`. An instance case's questions (confirmations,
/// plan reviews, web hosts, `ask_user`) are answered as the case says and the run goes on,
/// within the same time and token budgets; a builder case stops at its first interrupt.
pub async fn run_case(
    graph: &BuilderGraph,
    case: &Case,
    limits: &Limits,
    progress: Option<Progress<'_>>,
) -> CaseRun {
    let thread = format!("eval-{}", uuid::Uuid::new_v4().simple());
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let mut run = Segment {
        deadline: tokio::time::Instant::now() + limits.case_timeout,
        meter: Meter::default(),
        stopped: None,
        nested_workflow: None,
        limits,
        cancel: cancel.clone(),
    };
    let mut input = Input::values(json!({"messages": [{"type": "human", "content": case.prompt}]}));
    let mut answered = Vec::new();
    let outcome = loop {
        let config = RunConfig::thread(thread.clone())
            .modes(Modes::of(&[Mode::Updates, Mode::Custom]))
            .cancel_with(cancel.clone());
        let outcome = run.drive(graph.graph.stream(input, config), progress).await;
        let (Some(instance), Some(Ok(out))) = (&case.instance, &outcome) else {
            break outcome;
        };
        let RunStatus::Interrupted { interrupts, .. } = &out.status else {
            break outcome;
        };
        if run.stopped.is_some() || interrupts.is_empty() || answered.len() >= MAX_ANSWERS {
            break outcome;
        }
        answered.extend(
            interrupts
                .iter()
                .map(|i| i.value["kind"].as_str().unwrap_or("question").to_string()),
        );
        input = Input::Resume(match interrupts.as_slice() {
            [one] => Resume::Value(instance.answer_to(one)),
            many => Resume::ById(
                many.iter()
                    .map(|i| (i.id.clone(), instance.answer_to(i)))
                    .collect(),
            ),
        });
    };
    let wall = started.elapsed();
    let (status, error, error_code) = match (run.stopped, outcome) {
        (Some((status, why)), _) => (status, Some(why), None),
        (None, Some(Ok(out))) => match out.status {
            RunStatus::Done => (Status::Done, None, None),
            RunStatus::Interrupted { .. } => (Status::Interrupted, None, None),
        },
        (None, Some(Err(e))) => (Status::Error, Some(e.to_string()), code_of(&e)),
        (None, None) => (
            Status::Error,
            Some("the run did not report its end".into()),
            None,
        ),
    };
    let mut values = match graph.graph.get_state(&thread, None).await {
        Ok(Some(state)) => state.values,
        _ => Value::Null,
    };
    // A run that did not finish lost the steps of the subgraph it was in (the parent commits a
    // subgraph's output when it ends): what that subgraph built is what its last update wrote,
    // what a user watching the run saw, and what a resume continues from.
    let mut workflow_from = None;
    if let (Status::Timeout | Status::OverBudget | Status::Error, Some((ns, wf))) =
        (status, run.nested_workflow.take())
    {
        if let Some(obj) = values.as_object_mut() {
            obj.insert("workflow".into(), wf);
            workflow_from = Some(ns);
        }
    }
    // The memory checkpointer keeps every thread: drop this one's checkpoints.
    let _ = graph.graph.delete_thread(&thread).await;
    CaseRun {
        status,
        error,
        error_code,
        wall,
        meter: run.meter,
        values,
        answered,
        workflow_from,
    }
}

/// Questions an instance case answers before its run is left interrupted.
const MAX_ANSWERS: usize = 12;

/// The budgets and counters one case's runs (the first and each resume) share.
struct Segment<'a> {
    deadline: tokio::time::Instant,
    meter: Meter,
    /// Why the case was cancelled, once it was.
    stopped: Option<(Status, String)>,
    /// The newest `workflow` a subgraph wrote after the root last did: (namespace, value).
    nested_workflow: Option<(String, Value)>,
    limits: &'a Limits,
    cancel: CancellationToken,
}

impl Segment<'_> {
    /// Reads `stream` to its end (or to the budgets' cancel and grace period) and returns its
    /// outcome (`None` when it did not report one in time).
    async fn drive(
        &mut self,
        mut stream: RunStream,
        progress: Option<Progress<'_>>,
    ) -> Option<Result<RunOutput, RunError>> {
        let limits = self.limits;
        loop {
            match tokio::time::timeout_at(self.deadline, stream.next()).await {
                Ok(Some(ev)) => {
                    self.meter.observe(&ev);
                    self.track_workflow(&ev);
                    if let (Some(show), EventKind::Custom(data)) = (progress, &ev.kind) {
                        if let Some(title) = data["title"].as_str() {
                            show(title);
                        }
                    }
                    let over = limits.max_tokens.filter(|max| self.meter.tokens() > *max);
                    if let (None, Some(max)) = (&self.stopped, over) {
                        let why = format!(
                            "cancelled: {} tokens used, over the budget of {max}",
                            self.meter.tokens()
                        );
                        self.stop(Status::OverBudget, why);
                    }
                }
                Ok(None) => break,
                Err(_) if self.stopped.is_none() => {
                    let why = format!(
                        "cancelled after {} s (the case's time budget)",
                        limits.case_timeout.as_secs()
                    );
                    self.stop(Status::Timeout, why);
                }
                // The cancelled run did not stop within the grace period: read what it saved.
                Err(_) => return None,
            }
        }
        tokio::time::timeout(limits.grace, stream.finish())
            .await
            .ok()
    }

    /// Keeps the newest workflow a subgraph wrote; a root write supersedes it.
    fn track_workflow(&mut self, ev: &Event) {
        let EventKind::Updates(data) = &ev.kind else {
            return;
        };
        let Some(wf) = data
            .as_object()
            .and_then(|by_node| by_node.values().rev().find_map(|w| w.get("workflow")))
        else {
            return;
        };
        self.nested_workflow = match ev.ns.is_empty() {
            true => None,
            false => Some((ev.ns.join("/"), wf.clone())),
        };
    }

    fn stop(&mut self, status: Status, why: String) {
        self.stopped = Some((status, why));
        self.cancel.cancel();
        self.deadline = tokio::time::Instant::now() + self.limits.grace;
    }
}

fn code_of(e: &RunError) -> Option<String> {
    match e {
        RunError::NodeFailed { code, .. } => code.clone(),
        _ => None,
    }
}
