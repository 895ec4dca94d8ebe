//! Background tasks end to end: an orchestrator shaped like the shipped Instance AI graph
//! (`tasks` → `agent` ⇄ `tools` → `tasks`), a model whose answers are a function of the
//! request (so a process that resumes a thread after a crash answers as the dead one would
//! have), and a `work` tool that logs its calls and can be held mid-call.
//!
//! The orchestrator's model reads the last human message:
//!
//! | message              | it calls                                             |
//! |----------------------|------------------------------------------------------|
//! | `start a b …`        | `start_background_task` once per id (tools: `work`)  |
//! | `send ID TEXT`       | `send_to_task {id, message: TEXT}`                   |
//! | `stop that`          | `cancel_task` on the first running task of its status block |
//! | `hold`               | `work {task: "orchestrator", n: 1}` itself           |
//! | anything else        | nothing: it answers `seen: <its status block>`       |
//!
//! after tool results it answers `ok: <the tool results>`. A task's model calls `work {task,
//! n}` for n = 1, 2, then answers `finished <task> (corrections: …)` listing the corrections
//! it read.

use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelRequest, ModelResponse};
use agentgraph_agents::models::{SystemPart, ToolCall, Usage};
use agentgraph_agents::nodes::{has_tool_calls, LlmNode, ToolExecutorNode};
use agentgraph_agents::orchestration::background::{
    Background, BACKGROUND_TASKS, CORRECTION_PREFIX,
};
use agentgraph_agents::orchestration::{ToolPool, TASK_STATUS};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::{
    node_fn, AddMessages, ChannelSpec, Checkpointer, CompiledGraph, GraphBuilder, Merge, NodeError,
    Update, ValueType, END, START,
};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The channel the status block is written to.
pub const STATUS: &str = "background_status";
/// Model calls a task makes to `work` before it answers.
pub const TASK_WORK_CALLS: u64 = 2;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What happened, in order: `work TASK N`, `model NODE THREAD` lines; also appended to a
/// file when one is given (a worker process's record survives its death).
#[derive(Clone, Default)]
pub struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    file: Option<PathBuf>,
}

impl Log {
    /// A log also appended to `file`.
    pub fn to_file(file: PathBuf) -> Self {
        Log {
            lines: Arc::default(),
            file: Some(file),
        }
    }

    fn push(&self, line: String) {
        if let Some(path) = &self.file {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                // One write per line (an `O_APPEND` write is not interleaved with another
                // thread's, where `writeln!`'s text and newline may be), flushed line by line:
                // a SIGKILL keeps every line written before it.
                let _ = f.write_all(format!("{line}\n").as_bytes());
                let _ = f.sync_data();
            }
        }
        lock(&self.lines).push(line);
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        lock(&self.lines).clone()
    }

    /// How many lines equal `line`.
    pub fn count(&self, line: &str) -> usize {
        lock(&self.lines).iter().filter(|l| *l == line).count()
    }
}

/// The `work` tool: logs `work TASK N`, then waits while `(TASK, N)` is held.
#[derive(Clone, Default)]
pub struct Work {
    /// Where calls are logged.
    pub log: Log,
    held: Arc<Mutex<BTreeSet<(String, u64)>>>,
    changed: Arc<tokio::sync::Notify>,
}

impl Work {
    /// A tool logging to `log`.
    pub fn new(log: Log) -> Self {
        Work {
            log,
            ..Work::default()
        }
    }

    /// Holds call `n` of `task` until [`Work::release`] (or its run is cancelled).
    pub fn hold(&self, task: &str, n: u64) {
        lock(&self.held).insert((task.to_string(), n));
    }

    /// Lets call `n` of `task` finish.
    pub fn release(&self, task: &str, n: u64) {
        lock(&self.held).remove(&(task.to_string(), n));
        self.changed.notify_waiters();
    }

    /// Waits until `line` was logged `times` times.
    pub async fn reached(&self, line: &str, times: usize) {
        for _ in 0..2000 {
            if self.log.count(line) >= times {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!(
            "`{line}` was not logged {times} time(s): {:?}",
            self.log.lines()
        );
    }
}

#[async_trait]
impl Tool for Work {
    fn name(&self) -> &str {
        "work"
    }
    fn description(&self) -> &str {
        "Does one step of a task."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"task": {"type": "string"}, "n": {"type": "integer"}},
               "required": ["task", "n"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let task = args["task"].as_str().unwrap_or_default().to_string();
        let n = args["n"].as_u64().unwrap_or_default();
        self.log.push(format!("work {task} {n}"));
        loop {
            let changed = self.changed.notified();
            if !lock(&self.held).contains(&(task.clone(), n)) {
                break;
            }
            tokio::select! {
                _ = changed => {}
                _ = ctx.cancellation().cancelled() => {
                    return Err(ToolError::new("CANCELLED", "cancelled"));
                }
            }
        }
        Ok(ToolOutput::text(format!("{task} step {n} done")))
    }
}

/// The model of the orchestrator and of its tasks (see the module docs), recording requests.
#[derive(Default)]
pub struct Brain {
    /// `(node, thread, request)` of every call.
    pub requests: Mutex<Vec<(String, String, ModelRequest)>>,
    log: Log,
}

impl Brain {
    /// A brain logging `model NODE THREAD` lines to `log`.
    pub fn new(log: Log) -> Arc<Self> {
        Arc::new(Brain {
            requests: Mutex::default(),
            log,
        })
    }

    /// The requests node `node` made.
    pub fn requests_of(&self, node: &str) -> Vec<ModelRequest> {
        lock(&self.requests)
            .iter()
            .filter(|(n, _, _)| n == node)
            .map(|(_, _, r)| r.clone())
            .collect()
    }
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The request's system prompt, all parts joined.
pub fn system_text(req: &ModelRequest) -> String {
    req.system
        .iter()
        .map(|p: &SystemPart| p.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

fn answer(text: String, calls: Vec<(&str, Value)>) -> ModelResponse {
    let tool_calls: Vec<ToolCall> = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("call_{i}_{}", args["id"].as_str().unwrap_or(name)),
            name: name.to_string(),
            args,
        })
        .collect();
    ModelResponse {
        stop_reason: if tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
        .into(),
        text,
        tool_calls,
        usage: Usage::default(),
        model: "brain".into(),
    }
}

fn orchestrator_answer(req: &ModelRequest) -> ModelResponse {
    let last = req.messages.last().cloned().unwrap_or(Value::Null);
    if last["type"] == "tool" {
        let results: Vec<String> = req
            .messages
            .iter()
            .rev()
            .take_while(|m| m["type"] == "tool")
            .map(text_of)
            .collect();
        return answer(format!("ok: {}", results.join(" | ")), Vec::new());
    }
    let said = text_of(&last);
    let block = system_text(req);
    if let Some(ids) = said.strip_prefix("start ") {
        let calls = ids
            .split_whitespace()
            .map(|id| {
                (
                    "start_background_task",
                    json!({"id": id, "role": "counter", "instructions": "Count with work.",
                           "task": format!("count for {id}"), "tools": ["work"]}),
                )
            })
            .collect();
        return answer(String::new(), calls);
    }
    if let Some(rest) = said.strip_prefix("send ") {
        let (id, message) = rest.split_once(' ').unwrap_or((rest, ""));
        return answer(
            String::new(),
            vec![("send_to_task", json!({"id": id, "message": message}))],
        );
    }
    if said == "stop that" {
        // The task it means: the first running one of its status block.
        let id = block
            .lines()
            .find_map(|l| l.strip_prefix("- ")?.split_once(" [running]").map(|x| x.0))
            .unwrap_or("none");
        return answer(String::new(), vec![("cancel_task", json!({"id": id}))]);
    }
    if said == "hold" {
        return answer(
            String::new(),
            vec![("work", json!({"task": "orchestrator", "n": 1}))],
        );
    }
    let status = block
        .split("Background tasks of this thread")
        .nth(1)
        .map(|s| format!("Background tasks of this thread{s}"))
        .unwrap_or_else(|| block.lines().last().unwrap_or_default().to_string());
    answer(format!("seen: {status}"), Vec::new())
}

fn task_answer(req: &ModelRequest) -> ModelResponse {
    let task = req
        .messages
        .iter()
        .find(|m| m["id"] == "task")
        .map(text_of)
        .unwrap_or_default();
    let id = task.strip_prefix("count for ").unwrap_or("?").to_string();
    let done = req.messages.iter().filter(|m| m["type"] == "tool").count() as u64;
    if done < TASK_WORK_CALLS {
        return answer(
            String::new(),
            vec![("work", json!({"task": id, "n": done + 1}))],
        );
    }
    let corrections: Vec<String> = req
        .messages
        .iter()
        .filter_map(|m| {
            text_of(m)
                .strip_prefix(CORRECTION_PREFIX)
                .map(str::to_owned)
        })
        .collect();
    answer(
        format!("finished {task} (corrections: {})", corrections.join("; ")),
        Vec::new(),
    )
}

#[async_trait]
impl ChatModel for Brain {
    fn name(&self) -> String {
        "brain".into()
    }
    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        self.log.push(format!("model {} {}", ctx.node, ctx.thread));
        lock(&self.requests).push((ctx.node.clone(), ctx.thread.clone(), req.clone()));
        Ok(match ctx.node.as_str() {
            "agent" => orchestrator_answer(req),
            _ => task_answer(req),
        })
    }
}

/// The orchestrator over `work` (also in the pool), its background tools, `checkpointer`.
pub fn orchestrator(
    brain: Arc<Brain>,
    work: Work,
    checkpointer: Arc<dyn Checkpointer>,
) -> CompiledGraph {
    let work: Arc<dyn Tool> = Arc::new(work);
    let pool: ToolPool = Arc::new([("work".to_string(), work.clone())].into_iter().collect());
    let mut tools = Background::new(pool).tools();
    let status = tools
        .iter()
        .find(|t| t.name() == TASK_STATUS)
        .cloned()
        .expect("task_status");
    tools.push(work);
    let model: Arc<dyn ChatModel> = brain;
    let executor = ToolExecutorNode::new(tools).model(model.clone());
    let llm = LlmNode::new(model.clone())
        .system("You are the orchestrator.")
        .context(|state, _| Ok(state.str(STATUS).to_string()))
        .tools(executor.specs());
    // What the DSL's `tool { tool: task_status, model: main, output: background_status }` does.
    let tasks = node_fn(move |ctx| {
        let (status, model) = (status.clone(), model.clone());
        async move {
            let tctx = ToolContext::new(ctx.scoped(TASK_STATUS)).with_model(Some(model));
            let out = status
                .call(json!({}), &tctx)
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            let mut update = Update::new().set(STATUS, out.content);
            update.writes.extend(out.writes);
            Ok(update)
        }
    });
    GraphBuilder::new("orchestrator")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .channel(
            ChannelSpec::new(BACKGROUND_TASKS, ValueType::Json)
                .reducer(Arc::new(Merge))
                .default_value(json!({})),
        )
        .channel(ChannelSpec::new(STATUS, ValueType::String).default_value(json!("")))
        .node("tasks", tasks)
        .node("agent", Arc::new(llm))
        .node("tools", Arc::new(executor))
        .edge(START, "tasks")
        .edge("tasks", "agent")
        .route("agent", |s| {
            if has_tool_calls(s, "messages") {
                "tools"
            } else {
                END
            }
        })
        .edge("tools", "tasks")
        .compile()
        .expect("the orchestrator compiles")
        .with_checkpointer(checkpointer)
}

/// A human message as a run's input.
pub fn say(text: &str, id: &str) -> agentgraph_runtime::Input {
    agentgraph_runtime::Input::values(
        json!({"messages": [{"type": "human", "id": id, "content": text}]}),
    )
}

/// The text of the last message of a run's state.
pub fn last_text(values: &Value) -> String {
    values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(text_of)
        .unwrap_or_default()
}
