//! The four background tools: `start_background_task`, `task_status`, `send_to_task`,
//! `cancel_task`.

use super::registry::{registry, BackgroundError, TaskState};
use super::status::{self, record, resume, status_block, sync, Resume, TaskEntry};
use super::Background;
use crate::orchestration::delegate::DelegateTool;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::{is_valid_thread_id, stable_id};
use serde_json::{json, Value};
use std::sync::Arc;

/// Starts a background task.
pub const START_BACKGROUND_TASK: &str = "start_background_task";
/// The thread's tasks (or one), brought up to date.
pub const TASK_STATUS: &str = "task_status";
/// Queues a correction to a running task.
pub const SEND_TO_TASK: &str = "send_to_task";
/// Cancels a task (or all of the thread's).
pub const CANCEL_TASK: &str = "cancel_task";

pub(super) fn all(bg: Arc<Background>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Start(bg.clone())),
        Arc::new(Status(bg.clone())),
        Arc::new(Send(bg.clone())),
        Arc::new(Cancel(bg)),
    ]
}

fn text(args: &Value, key: &str) -> Result<String, ToolError> {
    match args.get(key).and_then(Value::as_str).map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ToolError::new(
            "INVALID_ARGUMENTS",
            format!("`{key}` must be a non-empty string"),
        )),
    }
}

fn refused(e: BackgroundError) -> ToolError {
    ToolError::new(e.code(), e.to_string())
}

/// A task id: 1 to 40 letters, digits, `-` and `_`.
fn task_id(args: &Value) -> Result<String, ToolError> {
    let id = text(args, "id")?;
    if id.len() > 40
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ToolError::new(
            "INVALID_ARGUMENTS",
            format!("task id `{id}`: use 1 to 40 letters, digits, `-` and `_`"),
        ));
    }
    Ok(id)
}

/// The thread of task `id` of `parent`: `<parent>:task:<id>`, or a hash of the parent when
/// that would be too long.
fn child_thread(parent: &str, id: &str) -> String {
    let t = format!("{parent}:task:{id}");
    if is_valid_thread_id(&t) {
        t
    } else {
        format!("task:{}:{id}", stable_id(&["background", parent]))
    }
}

struct Start(Arc<Background>);

#[async_trait::async_trait]
impl Tool for Start {
    fn name(&self) -> &str {
        START_BACKGROUND_TASK
    }

    fn description(&self) -> &str {
        "Run a sub-agent in the background (long work the user need not wait for) and go on \
         at once. Fields as delegate, plus an id unique in this conversation. Its status is in \
         your context each turn. At most 5 at once."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Short: letters, digits, - and _."},
                "role": {"type": "string"},
                "instructions": {"type": "string", "description": "Its system prompt."},
                "task": {"type": "string"},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "Tool names."}
            },
            "required": ["id", "role", "instructions", "task", "tools"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = task_id(&args)?;
        let names: Vec<String> = args["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        DelegateTool::pick(&self.0.pool, &names)?;
        let call = ctx.idempotency_key();
        let parent = ctx.thread_id().to_string();
        let entry = match status::entries(ctx).remove(&id) {
            // The same call again (its step re-runs after a crash): the same task.
            Some(e) if e.call == call => e,
            Some(e) => {
                return Err(ToolError::new(
                    "DUPLICATE_TASK",
                    format!(
                        "this conversation already has a task `{id}` ({}); choose another id",
                        e.state.as_str()
                    ),
                ))
            }
            None => TaskEntry {
                thread: child_thread(&parent, &id),
                id: id.clone(),
                role: text(&args, "role")?,
                instructions: text(&args, "instructions")?,
                task: text(&args, "task")?,
                tools: names,
                state: TaskState::Running,
                result: None,
                step: ctx.step(),
                call,
                usage: None,
            },
        };
        let live = resume(&self.0, ctx, &entry, Some(self.0.limit), Resume::Run).await?;
        let mut entry = entry;
        entry.state = live.state;
        entry.result = live.result;
        let mut out = ToolOutput {
            content: json!({
                "id": id,
                "state": entry.state,
                "thread": entry.thread,
                "note": "runs in the background; its status is in your context each turn"
            }),
            writes: Vec::new(),
        };
        out.writes.extend(record(ctx, &entry));
        Ok(out)
    }
}

struct Status(Arc<Background>);

#[async_trait::async_trait]
impl Tool for Status {
    fn name(&self) -> &str {
        TASK_STATUS
    }

    fn description(&self) -> &str {
        "The background tasks of this conversation: id, state (running, done, failed, \
         cancelled) and last result. With `id`, that task's whole result."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "One task's id."}},
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (list, writes) = sync(&self.0, ctx).await?;
        let content = match args.get("id").and_then(Value::as_str) {
            None => Value::String(status_block(&list)),
            Some(id) => {
                let e = list.iter().find(|e| e.id == id).ok_or_else(|| {
                    refused(BackgroundError::UnknownTask {
                        id: id.to_string(),
                        known: list.iter().map(|e| e.id.clone()).collect(),
                    })
                })?;
                json!({"id": e.id, "state": e.state, "role": e.role, "task": e.task,
                       "result": e.result})
            }
        };
        Ok(ToolOutput { content, writes })
    }
}

struct Send(Arc<Background>);

#[async_trait::async_trait]
impl Tool for Send {
    fn name(&self) -> &str {
        SEND_TO_TASK
    }

    fn description(&self) -> &str {
        "Send a correction to a running background task: it reads it before its next step."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "message": {"type": "string"}
            },
            "required": ["id", "message"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = text(&args, "id")?;
        let message = text(&args, "message")?;
        // Tasks a restart left are resumed first, so they can be corrected.
        let (_, writes) = sync(&self.0, ctx).await?;
        let st = registry()
            .send(ctx.thread_id(), &id, &message)
            .map_err(refused)?;
        Ok(ToolOutput {
            content: json!({"id": id, "state": st.state, "queued": st.pending_corrections,
                            "note": "the task reads it before its next step"}),
            writes,
        })
    }
}

struct Cancel(Arc<Background>);

#[async_trait::async_trait]
impl Tool for Cancel {
    fn name(&self) -> &str {
        CANCEL_TASK
    }

    fn description(&self) -> &str {
        "Stop a background task (\"stop that\"); id `all` stops every one."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = text(&args, "id")?;
        let (list, mut writes) = sync(&self.0, ctx).await?;
        let parent = ctx.thread_id();
        let ids = if id == "all" {
            registry().cancel_thread(parent)
        } else {
            registry().cancel(parent, &id).map_err(refused)?;
            vec![id]
        };
        for e in list.into_iter().filter(|e| ids.contains(&e.id)) {
            let entry = TaskEntry {
                state: TaskState::Cancelled,
                result: Some("cancelled by the orchestrator".into()),
                ..e
            };
            writes.extend(record(ctx, &entry));
        }
        Ok(ToolOutput {
            content: json!({"cancelled": ids}),
            writes,
        })
    }
}
