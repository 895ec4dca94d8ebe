//! The thread's task list: its entries in the parent's channel, brought up to date from the
//! registry and the tasks' own threads (resuming, after a restart, the tasks that were
//! running), and the status block the orchestrator reads each turn. A task's model calls
//! are added to the parent's usage once, when its end is recorded in the list.

use super::child::{self, first_input, Storage, TaskSpec};
use super::registry::{registry, Claim, LiveStatus, TaskState};
use super::Background;
use crate::orchestration::delegate::DelegateTool;
use crate::tools::{ToolContext, ToolError};
use agentgraph_runtime::Input;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The channel holding the thread's task list (`json = {} reduce merge`: id → entry).
pub const BACKGROUND_TASKS: &str = "background_tasks";

/// Finished tasks listed in the status block (the newest ones).
const FINISHED_SHOWN: usize = 10;
/// Characters of a result shown in the status block.
const RESULT_SHOWN: usize = 600;

/// One task as the parent's channel keeps it: what it does, where it runs, where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEntry {
    /// Unique in the thread (chosen by the model).
    pub id: String,
    /// The sub-agent's role.
    pub role: String,
    /// Its system prompt.
    pub instructions: String,
    /// What it was asked.
    pub task: String,
    /// The tools it may call.
    pub tools: Vec<String>,
    /// The thread of its child run.
    pub thread: String,
    /// Where it stands.
    pub state: TaskState,
    /// The final answer or the error; while running, the line on its last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The parent's step that started it (the list's order).
    pub step: i64,
    /// The starting call's idempotency key (a re-run of that call finds its task).
    pub call: String,
    /// Its usage once it ended and that was added to the parent's usage (`None`: not yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// Whether the calling graph declares `channel`.
pub(crate) fn has_channel(ctx: &ToolContext, channel: &str) -> bool {
    ctx.state().schema().index_of(channel).is_some()
}

/// The entries of the thread's task list, by id.
pub(crate) fn entries(ctx: &ToolContext) -> BTreeMap<String, TaskEntry> {
    ctx.state()
        .get(BACKGROUND_TASKS)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            serde_json::from_value::<TaskEntry>(v.clone())
                .ok()
                .map(|e| (k.clone(), e))
        })
        .collect()
}

/// The write that records `entry` (none when the graph has no task list).
pub(crate) fn record(ctx: &ToolContext, entry: &TaskEntry) -> Option<(String, Value)> {
    has_channel(ctx, BACKGROUND_TASKS).then(|| {
        (
            BACKGROUND_TASKS.to_string(),
            json!({ entry.id.clone(): entry }),
        )
    })
}

/// The run's storage, or why there is none.
pub(crate) fn storage(ctx: &ToolContext) -> Result<Storage, ToolError> {
    let checkpointer = ctx.task().checkpointer().ok_or_else(|| {
        ToolError::new(
            "NO_CHECKPOINTER",
            "background tasks need a graph with a checkpointer (their runs are checkpointed \
             threads); use delegate instead",
        )
    })?;
    Ok(Storage {
        checkpointer,
        store: ctx.store().cloned(),
    })
}

/// What [`resume`] does with a task whose thread has not ended.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Resume {
    /// Runs it: from its task, or from its last checkpoint.
    Run,
    /// Only records it as the list says it ended (a cancel the process did not see end).
    Record,
}

/// Starts or resumes the run of `entry` in this process: a thread without a checkpoint
/// starts from the task, one with checkpoints continues from its last, one that ended is
/// only recorded (with [`Resume::Record`], any is). Returns the live status.
pub(crate) async fn resume(
    bg: &Background,
    ctx: &ToolContext,
    entry: &TaskEntry,
    limit: Option<usize>,
    how: Resume,
) -> Result<LiveStatus, ToolError> {
    let parent = ctx.thread_id();
    let spec = TaskSpec {
        role: entry.role.clone(),
        instructions: entry.instructions.clone(),
        task: entry.task.clone(),
        tools: DelegateTool::pick(&bg.pool, &entry.tools)?,
        max_steps: bg.max_steps,
        pricing: ctx.pricing(),
    };
    // Not the caller's metered model: the task counts its own calls.
    let model = ctx.child_model()?.clone();
    let storage = storage(ctx)?;
    let live = match registry().claim(parent, &entry.id, &entry.thread, &entry.call, limit) {
        Ok(Claim::Exists(live)) if live.call == entry.call => return Ok(live.status()),
        Ok(Claim::Exists(live)) => {
            return Err(ToolError::new(
                "DUPLICATE_TASK",
                format!(
                    "this conversation already has a task `{}` ({}); choose another id",
                    entry.id,
                    live.status().state.as_str()
                ),
            ))
        }
        Ok(Claim::New(live)) => live,
        Err(e) => return Err(ToolError::new(e.code(), e.to_string())),
    };
    let built = async {
        let graph = child::graph(&spec, model, live.clone(), &storage)?;
        let fail = |e: agentgraph_runtime::RunError| ToolError::new("TASK_STORAGE", e.to_string());
        let thread = child::read(&graph, &entry.thread).await.map_err(fail)?;
        if let Some((state, result)) = thread.ended {
            return Ok(Some((state, result, thread.usage)));
        }
        if how == Resume::Record {
            return Ok(Some((entry.state, entry.result.clone(), thread.usage)));
        }
        let input = if thread.started {
            Input::Continue
        } else {
            first_input(&spec.task)
        };
        child::spawn(graph, live.clone(), input);
        Ok::<_, ToolError>(None)
    }
    .await;
    match built {
        Ok(Some((state, result, usage))) => registry().finish(&live, state, result, usage),
        Ok(None) => {}
        Err(e) => registry().finish(&live, TaskState::Failed, Some(e.to_string()), Value::Null),
    }
    registry().watch_run(parent, ctx.run_id(), ctx.cancellation().clone());
    Ok(live.status())
}

/// The thread's task list brought up to date: finished tasks recorded, running ones not
/// known in this process resumed. Returns the entries (in start order) and the writes.
pub(crate) async fn sync(
    bg: &Background,
    ctx: &ToolContext,
) -> Result<(Vec<TaskEntry>, Vec<(String, Value)>), ToolError> {
    let parent = ctx.thread_id().to_string();
    let mut list = entries(ctx);
    // Tasks of this process the list does not hold (a graph without the channel).
    for st in registry().list(&parent) {
        list.entry(st.id.clone()).or_insert_with(|| TaskEntry {
            id: st.id.clone(),
            role: String::new(),
            instructions: String::new(),
            task: String::new(),
            tools: Vec::new(),
            thread: st.thread.clone(),
            state: st.state,
            result: st.result.clone(),
            step: i64::MAX,
            call: String::new(),
            usage: None,
        });
    }
    // Usage is counted only where the list remembers it was (else it would count each time).
    let counts = has_channel(ctx, BACKGROUND_TASKS);
    let mut writes = Vec::new();
    for entry in list.values_mut() {
        if entry.state.is_terminal() {
            // Recorded as ended (a cancel, a start that found it ended): its usage once it
            // has stopped.
            if !counts || entry.usage.is_some() {
                continue;
            }
            let live = match registry().get(&parent, &entry.id) {
                Some(st) => st,
                None => match resume(bg, ctx, entry, None, Resume::Record).await {
                    Ok(st) => st,
                    Err(_) => continue,
                },
            };
            if live.state.is_terminal() {
                count_usage(ctx, entry, &live.usage);
                writes.extend(record(ctx, entry));
            }
            continue;
        }
        let live = match registry().get(&parent, &entry.id) {
            Some(st) => st,
            None => match resume(bg, ctx, entry, None, Resume::Run).await {
                Ok(st) => st,
                Err(e) => {
                    entry.result = Some(format!("not resumed yet: {e}"));
                    continue;
                }
            },
        };
        entry.result = live.result;
        if live.state.is_terminal() {
            entry.state = live.state;
            if counts {
                count_usage(ctx, entry, &live.usage);
            }
            writes.extend(record(ctx, entry));
        }
    }
    // A cancel of this run stops the thread's tasks too.
    registry().watch_run(&parent, ctx.run_id(), ctx.cancellation().clone());
    let mut out: Vec<TaskEntry> = list.into_values().collect();
    out.sort_by(|a, b| (a.step, &a.id).cmp(&(b.step, &b.id)));
    Ok((out, writes))
}

/// Adds the usage of `entry`'s ended task to the caller's ledger (labelled
/// `background:<id>`, keyed by its thread, so one step counts it once) and notes it in the
/// entry, whose record is written in the same step.
fn count_usage(ctx: &ToolContext, entry: &mut TaskEntry, usage: &Value) {
    ctx.usage()
        .record(&entry.thread, &format!("background:{}", entry.id), usage);
    entry.usage = Some(match usage {
        Value::Null => json!({}),
        u => u.clone(),
    });
}

fn cut(s: &str, n: usize) -> String {
    let s = s.trim();
    if s.chars().count() > n {
        format!("{}…", s.chars().take(n).collect::<String>())
    } else {
        s.to_string()
    }
}

/// The status block: every running task and the newest finished ones, with id, state,
/// role, task and last result.
pub fn status_block(list: &[TaskEntry]) -> String {
    if list.is_empty() {
        return "No background tasks in this thread.".into();
    }
    let finished = list.iter().filter(|e| e.state.is_terminal()).count();
    let skip = finished.saturating_sub(FINISHED_SHOWN);
    let mut skipped = 0;
    let mut lines = vec!["Background tasks of this thread (by id):".to_string()];
    for e in list {
        if e.state.is_terminal() && skipped < skip {
            skipped += 1;
            continue;
        }
        let mut line = format!("- {} [{}]", e.id, e.state.as_str());
        if !e.role.is_empty() {
            line.push_str(&format!(" {}: {}", e.role, cut(&e.task, 100)));
        }
        let label = match e.state {
            TaskState::Running => "last step",
            TaskState::Done => "result",
            TaskState::Failed => "error",
            TaskState::Cancelled => "note",
        };
        if let Some(r) = e.result.as_deref().filter(|r| !r.trim().is_empty()) {
            line.push_str(&format!(" | {label}: {}", cut(r, RESULT_SHOWN)));
        }
        lines.push(line);
    }
    if skipped > 0 {
        lines.push(format!("({skipped} older finished task(s) not shown)"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, step: i64, state: TaskState, result: Option<&str>) -> TaskEntry {
        TaskEntry {
            id: id.into(),
            role: "researcher".into(),
            instructions: String::new(),
            task: format!("look into {id}"),
            tools: Vec::new(),
            thread: format!("p:task:{id}"),
            state,
            result: result.map(str::to_owned),
            step,
            call: String::new(),
            usage: None,
        }
    }

    #[test]
    fn the_block_lists_running_tasks_and_the_newest_finished_ones() {
        assert_eq!(status_block(&[]), "No background tasks in this thread.");
        let mut list: Vec<TaskEntry> = (0..12)
            .map(|i| entry(&format!("old{i}"), i, TaskState::Done, Some("fine")))
            .collect();
        list.push(entry(
            "busy",
            12,
            TaskState::Running,
            Some("called fetch_url"),
        ));
        list.push(entry("gone", 13, TaskState::Cancelled, None));
        let block = status_block(&list);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], "Background tasks of this thread (by id):");
        // 13 finished: the oldest 3 are left out.
        assert!(
            !block.contains("- old0 ") && !block.contains("- old2 "),
            "{block}"
        );
        assert!(
            lines.contains(&"- old3 [done] researcher: look into old3 | result: fine"),
            "{block}"
        );
        assert!(lines.contains(
            &"- busy [running] researcher: look into busy | last step: called fetch_url"
        ));
        assert!(lines.contains(&"- gone [cancelled] researcher: look into gone"));
        assert_eq!(lines.last(), Some(&"(3 older finished task(s) not shown)"));
    }
}
