//! A background task's child run: a sub-agent graph (model ⇄ tools, with an `inbox` node
//! that hands it queued corrections before each model call) on its own thread, checkpointed
//! on the parent's checkpointer, started detached from the calling run, and how its end is
//! recorded (in the registry, and in the task's own thread so that a restart knows it). Its
//! model calls are counted in its own `usage` channel, read when it ends.

use super::registry::{registry, Live, TaskState};
use crate::models::{ChatModel, Pricing};
use crate::nodes::{has_tool_calls, LlmNode, ToolExecutorNode};
use crate::orchestration::child_usage::{usage_channel, USAGE};
use crate::orchestration::subagent::{final_answer, Refused, PROTOCOL};
use crate::orchestration::{ORCHESTRATION_TOOLS, VERIFY_LOOP};
use crate::tools::{Tool, ToolError};
use agentgraph_runtime::store::Store;
use agentgraph_runtime::{
    node_fn, AddMessages, ChannelSpec, Checkpointer, CompiledGraph, GraphBuilder, Input, RunConfig,
    RunError, RunStatus, Update, ValueType, END, START,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// The task's model node (scripts name it).
pub const TASK_NODE: &str = "task";
/// The task's tool node.
pub const TASK_TOOLS_NODE: &str = "task_tools";
/// The node that hands the task its queued corrections.
pub const INBOX_NODE: &str = "inbox";
/// The channel of the task's thread recording how it was stopped (`{state, result}`).
pub const OUTCOME: &str = "outcome";
/// What a correction's human message starts with.
pub const CORRECTION_PREFIX: &str = "Correction from the orchestrator: ";

const BACKGROUND_NOTE: &str = "You run in the background: the orchestrator goes on with \
other work meanwhile. It may send you corrections while you work (human messages starting \
with \"Correction from the orchestrator\"): follow the newest one.";

/// What a background task does (as recorded in the parent's task list).
#[derive(Clone)]
pub(crate) struct TaskSpec {
    pub role: String,
    pub instructions: String,
    pub task: String,
    pub tools: Vec<Arc<dyn Tool>>,
    pub max_steps: usize,
    /// The prices of its model, for the cost in its usage.
    pub pricing: Option<Pricing>,
}

/// Where a child run keeps its state: the parent run's checkpointer and store.
#[derive(Clone)]
pub(crate) struct Storage {
    pub checkpointer: Arc<dyn Checkpointer>,
    pub store: Option<Arc<dyn Store>>,
}

/// One line on a message: the answer's start, the tool it called, or the tool's result.
fn line_of(m: &Value) -> Option<String> {
    let cut = |s: &str| {
        let s = s.trim();
        if s.chars().count() > 200 {
            format!("{}…", s.chars().take(200).collect::<String>())
        } else {
            s.to_string()
        }
    };
    let text = |c: &Value| match c {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    match m["type"].as_str()? {
        "ai" => {
            let calls: Vec<&str> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
                .collect();
            if calls.is_empty() {
                Some(format!("answered: {}", cut(&text(&m["content"]))))
            } else {
                Some(format!("called {}", calls.join(", ")))
            }
        }
        "tool" => Some(format!("tool result: {}", cut(&text(&m["content"])))),
        "human" => Some("reading its task".into()),
        _ => None,
    }
}

/// The child graph of `spec`, reading corrections from `live`.
pub(crate) fn graph(
    spec: &TaskSpec,
    model: Arc<dyn ChatModel>,
    live: Arc<Live>,
    storage: &Storage,
) -> Result<CompiledGraph, ToolError> {
    let mut executor = ToolExecutorNode::new(
        spec.tools.iter().cloned().chain(
            ORCHESTRATION_TOOLS
                .iter()
                .map(|n| Arc::new(Refused(n)) as Arc<dyn Tool>),
        ),
    )
    .model(model.clone())
    .usage_channel(USAGE);
    for t in &spec.tools {
        executor.tools.insert(t.name().to_string(), t.clone());
    }
    let system = format!(
        "You are a sub-agent. Role: {}.\n\n{}\n\n{PROTOCOL}\n\n{BACKGROUND_NOTE}",
        spec.role, spec.instructions
    );
    let mut llm = LlmNode::new(model)
        .system(system)
        .tools(spec.tools.iter().map(|t| t.spec()))
        .max_calls(spec.max_steps.max(1))
        .usage_channel(USAGE);
    if let Some(p) = spec.pricing {
        llm = llm.pricing(p);
        executor = executor.pricing(p);
    }
    let inbox_live = live.clone();
    let inbox = node_fn(move |ctx| {
        let live = inbox_live.clone();
        async move {
            let messages = ctx.state().list("messages");
            if let Some(line) = messages.last().and_then(line_of) {
                live.progress(line);
            }
            let base = messages.len();
            let notes: Vec<Value> = live
                .take_corrections()
                .into_iter()
                .enumerate()
                .map(|(i, text)| {
                    json!({"type": "human", "id": format!("correction-{}", base + i),
                           "content": format!("{CORRECTION_PREFIX}{text}")})
                })
                .collect();
            if notes.is_empty() {
                return Ok(Update::new());
            }
            Ok(Update::new().set("messages", Value::Array(notes)))
        }
    });
    let route_live = live;
    let mut graph = GraphBuilder::new("background_task")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .channel(ChannelSpec::new(VERIFY_LOOP, ValueType::Json).default_value(json!({})))
        .channel(ChannelSpec::new(OUTCOME, ValueType::Json))
        .channel(usage_channel())
        .node(INBOX_NODE, inbox)
        .node(TASK_NODE, Arc::new(llm))
        .node(TASK_TOOLS_NODE, Arc::new(executor))
        .edge(START, INBOX_NODE)
        .edge(INBOX_NODE, TASK_NODE)
        .route(TASK_NODE, move |s| {
            if has_tool_calls(s, "messages") {
                TASK_TOOLS_NODE
            } else if route_live.has_corrections() {
                // A correction that came while it answered: it answers again.
                INBOX_NODE
            } else {
                END
            }
        })
        .edge(TASK_TOOLS_NODE, INBOX_NODE)
        .compile()
        .map_err(|e| ToolError::new("TASK_INVALID", format!("the task's graph: {e}")))?
        .with_checkpointer(storage.checkpointer.clone());
    if let Some(store) = &storage.store {
        graph = graph.with_store(store.clone());
    }
    Ok(graph)
}

/// The first input of a task's run.
pub(crate) fn first_input(task: &str) -> Input {
    Input::values(json!({"messages": [{"type": "human", "id": "task", "content": task}]}))
}

/// What a task's thread holds.
pub(crate) struct ThreadState {
    /// Whether it has a checkpoint.
    pub started: bool,
    /// How it ended, if it did: its recorded outcome, or a run that finished (nothing left to
    /// run) with its final answer.
    pub ended: Option<(TaskState, Option<String>)>,
    /// Its `usage` channel (`null` before its first checkpoint).
    pub usage: Value,
}

/// Reads the task's thread.
pub(crate) async fn read(graph: &CompiledGraph, thread: &str) -> Result<ThreadState, RunError> {
    let Some(snap) = graph.get_state(thread, None).await? else {
        return Ok(ThreadState {
            started: false,
            ended: None,
            usage: Value::Null,
        });
    };
    let ended = match snap.values.get(OUTCOME).filter(|o| !o.is_null()) {
        Some(o) => {
            let state = serde_json::from_value(o["state"].clone()).unwrap_or(TaskState::Failed);
            Some((state, o["result"].as_str().map(str::to_owned)))
        }
        None if snap.next.is_empty() => Some((TaskState::Done, Some(final_answer(&snap.values)))),
        None => None,
    };
    Ok(ThreadState {
        started: true,
        ended,
        usage: snap.values[USAGE].clone(),
    })
}

/// Runs the task detached from the caller (`input`: its first input, or `Continue` after a
/// restart) and records how it ends.
pub(crate) fn spawn(graph: CompiledGraph, live: Arc<Live>, input: Input) {
    tokio::spawn(async move {
        let config = RunConfig::thread(live.thread.clone()).cancel_with(live.cancel.clone());
        let (state, result) = match graph.invoke(input, config).await {
            Ok(out) => match out.status {
                RunStatus::Done => (TaskState::Done, Some(final_answer(&out.values))),
                RunStatus::Interrupted { interrupts, .. } => (
                    TaskState::Failed,
                    Some(format!(
                        "INTERRUPTED: the task needs a human answer ({}), which background \
                         tasks cannot ask; run it with delegate instead",
                        interrupts
                            .first()
                            .map(|i| i.value.to_string())
                            .unwrap_or_default()
                    )),
                ),
            },
            Err(RunError::Cancelled(_)) => (TaskState::Cancelled, None),
            Err(e) => (TaskState::Failed, Some(e.to_string())),
        };
        if state != TaskState::Done {
            // Kept in the task's thread, so a restart does not run it again.
            let outcome = json!({OUTCOME: {"state": state, "result": result}});
            if let Err(e) = graph
                .update_state(&live.thread, None, outcome, Some(INBOX_NODE))
                .await
            {
                tracing::warn!(thread = %live.thread, error = %e, "background task: outcome not saved");
            }
        }
        // Its calls as checkpointed: what the parent's usage receives once the end is seen.
        let usage = match read(&graph, &live.thread).await {
            Ok(t) => t.usage,
            Err(e) => {
                tracing::warn!(thread = %live.thread, error = %e, "background task: usage not read");
                Value::Null
            }
        };
        registry().finish(&live, state, result, usage);
    });
}
