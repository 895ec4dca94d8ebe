//! `plan`: a dependency-aware task list. The plan is checked (unique ids, known deps and
//! kinds, no cycle), written to a thread channel, shown to the user for approval (an
//! interrupt), then run: each task starts once all its deps succeeded (tasks whose deps are
//! done run concurrently), each as a sub-agent child run of its own; a task whose dep failed is
//! skipped. The tasks' results come back to the orchestrator as the tool result and in the
//! channel.
//!
//! Kinds: `delegate` (a sub-agent with the task's `role` and `tools`), `research` (a sub-agent
//! with the research tools the application configured), and any kind the application gives a
//! [`TaskRunner`] for (the n8n product: `build-workflow`). A `build-workflow` task without a
//! runner is refused: delegate such a task instead.

use super::delegate::DelegateTool;
use super::subagent::{SubAgent, DEFAULT_MAX_STEPS};
use super::{approved, ToolPool};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The tool's name.
pub const PLAN: &str = "plan";
/// The channel receiving the plan (type `json`).
pub const PLAN_CHANNEL: &str = "plan";

/// One task of a plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlannedTask {
    /// Unique id within the plan.
    pub id: String,
    /// `delegate`, `research`, or a kind with a [`TaskRunner`] (`build-workflow`).
    pub kind: String,
    /// One line for the user.
    pub title: String,
    /// What to do: the sub-agent's instructions.
    pub spec: String,
    /// Ids of the tasks that must succeed first.
    #[serde(default)]
    pub deps: Vec<String>,
    /// `delegate` tasks: the sub-agent's role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// `delegate` tasks: the tools it may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// `pending`, `running`, `succeeded`, `failed`, `skipped`.
    #[serde(default = "pending")]
    pub status: String,
    /// The sub-agent's answer, or why the task failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

fn pending() -> String {
    "pending".into()
}

/// Whether the calling graph declares `channel` (a graph without it gets the result only).
fn has_channel(ctx: &ToolContext, channel: &str) -> bool {
    ctx.state().schema().index_of(channel).is_some()
}

const KINDS: [&str; 2] = ["delegate", "research"];

/// Runs the tasks of one kind (an application's: the workflow builder for `build-workflow`).
#[async_trait::async_trait]
pub trait TaskRunner: Send + Sync {
    /// Runs `task` with `input` (its title, spec and its deps' results) as a child of `ctx`'s
    /// task keyed by `key` (the same key on a re-run must find the same child run); returns
    /// the result reported to the orchestrator.
    async fn run(
        &self,
        ctx: &ToolContext,
        key: &str,
        task: &PlannedTask,
        input: &str,
    ) -> Result<String, ToolError>;
}

/// Runs dependency-aware task plans after the user approves them.
pub struct PlanTool {
    pool: ToolPool,
    research_tools: Vec<String>,
    max_steps: usize,
    runners: BTreeMap<String, std::sync::Arc<dyn TaskRunner>>,
}

impl PlanTool {
    /// Plans whose sub-agents use tools of `pool`; `research` tasks get `research_tools`.
    pub fn new(pool: ToolPool, research_tools: Vec<String>) -> Self {
        PlanTool {
            pool,
            research_tools,
            max_steps: DEFAULT_MAX_STEPS,
            runners: BTreeMap::new(),
        }
    }

    /// Runs the tasks of kind `kind` with `runner`.
    pub fn with_runner(
        mut self,
        kind: impl Into<String>,
        runner: std::sync::Arc<dyn TaskRunner>,
    ) -> Self {
        self.runners.insert(kind.into(), runner);
        self
    }

    /// Sets the most model calls of each task's sub-agent.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.max_steps = n.max(1);
        self
    }

    /// Checks a plan: ids unique and non-empty, deps known, kinds runnable, tools in the pool,
    /// no cycle. Returns the tasks in an order where every task follows its deps.
    pub fn check(&self, tasks: &[PlannedTask]) -> Result<Vec<usize>, ToolError> {
        let invalid = |m: String| ToolError::new("INVALID_PLAN", m);
        if tasks.is_empty() {
            return Err(invalid("the plan has no tasks".into()));
        }
        let mut index = BTreeMap::new();
        for (i, t) in tasks.iter().enumerate() {
            if t.id.trim().is_empty() {
                return Err(invalid(format!("task {i} has an empty id")));
            }
            if index.insert(t.id.as_str(), i).is_some() {
                return Err(invalid(format!("two tasks have the id `{}`", t.id)));
            }
        }
        for t in tasks {
            if self.runners.contains_key(&t.kind) {
                // Checked by its runner when it runs.
            } else if t.kind == "build-workflow" {
                return Err(ToolError::new(
                    "UNSUPPORTED_KIND",
                    format!(
                        "task `{}`: kind `build-workflow` cannot run yet; make it a `delegate` \
                         task with the builder tools it needs",
                        t.id
                    ),
                ));
            } else if !KINDS.contains(&t.kind.as_str()) {
                return Err(invalid(format!(
                    "task `{}` has kind `{}`; kinds: {}",
                    t.id,
                    t.kind,
                    KINDS.join(", ")
                )));
            }
            for d in &t.deps {
                if !index.contains_key(d.as_str()) {
                    return Err(invalid(format!(
                        "task `{}` depends on `{d}`, which is not in the plan",
                        t.id
                    )));
                }
            }
            if t.kind == "delegate" {
                DelegateTool::pick(&self.pool, &t.tools).map_err(|e| {
                    ToolError::new(e.code, format!("task `{}`: {}", t.id, e.message))
                })?;
            }
        }
        // Kahn's algorithm, lowest index first among the ready ones.
        let mut indegree: Vec<usize> = tasks.iter().map(|t| t.deps.len()).collect();
        let mut ready: BTreeSet<usize> = (0..tasks.len()).filter(|i| indegree[*i] == 0).collect();
        let mut order = Vec::new();
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for (j, t) in tasks.iter().enumerate() {
                let n = t.deps.iter().filter(|d| **d == tasks[i].id).count();
                if n > 0 {
                    indegree[j] -= n;
                    if indegree[j] == 0 {
                        ready.insert(j);
                    }
                }
            }
        }
        if order.len() < tasks.len() {
            let stuck: Vec<&str> = (0..tasks.len())
                .filter(|i| !order.contains(i))
                .map(|i| tasks[i].id.as_str())
                .collect();
            return Err(invalid(format!(
                "the dependencies form a cycle among {}; remove one dependency",
                stuck.join(", ")
            )));
        }
        Ok(order)
    }

    fn agent(&self, t: &PlannedTask) -> Result<SubAgent, ToolError> {
        let (role, names) = match t.kind.as_str() {
            "research" => ("researcher".to_string(), self.research_tools.clone()),
            _ => (
                t.role.clone().unwrap_or_else(|| "assistant".into()),
                t.tools.clone(),
            ),
        };
        Ok(SubAgent {
            role,
            instructions: format!("Your task: {}\n\n{}", t.title, t.spec),
            tools: DelegateTool::pick(&self.pool, &names)?,
            max_steps: self.max_steps,
        })
    }

    /// Runs the approved plan: waves of tasks whose deps all succeeded.
    async fn execute(&self, ctx: &ToolContext, tasks: &mut [PlannedTask]) -> Result<(), ToolError> {
        loop {
            let ready: Vec<usize> = (0..tasks.len())
                .filter(|i| tasks[*i].status == "pending")
                .filter(|i| {
                    tasks[*i]
                        .deps
                        .iter()
                        .all(|d| tasks.iter().any(|t| &t.id == d && t.status == "succeeded"))
                })
                .collect();
            if ready.is_empty() {
                break;
            }
            let runs = ready.iter().map(|&i| {
                let t = tasks[i].clone();
                let context: Vec<String> = t
                    .deps
                    .iter()
                    .filter_map(|d| tasks.iter().find(|x| &x.id == d))
                    .map(|d| {
                        format!(
                            "- {} ({}): {}",
                            d.id,
                            d.title,
                            d.result.clone().unwrap_or_default()
                        )
                    })
                    .collect();
                async move {
                    let mut input = format!("{}\n\n{}", t.title, t.spec);
                    if !context.is_empty() {
                        input.push_str("\n\nResults of the tasks this one depends on:\n");
                        input.push_str(&context.join("\n"));
                    }
                    ctx.emit_custom(
                        json!({"plan_task": t.id, "status": "running", "title": t.title}),
                    )
                    .await;
                    let key = format!("plan:{}", t.id);
                    let out = match (self.runners.get(&t.kind), self.agent(&t)) {
                        (Some(runner), _) => runner.run(ctx, &key, &t, &input).await,
                        (None, Ok(agent)) => agent.run(ctx, &key, &input).await,
                        (None, Err(e)) => Err(e),
                    };
                    (i, out)
                }
            });
            let done = futures::future::join_all(runs).await;
            // An interrupt inside a task pauses the whole plan; on resume, finished tasks'
            // child runs answer from their checkpoints and the paused one resumes inside.
            let interrupts: Vec<_> = done
                .iter()
                .filter_map(|(_, o)| o.as_ref().err())
                .flat_map(|e| e.interrupts.iter().cloned())
                .collect();
            if !interrupts.is_empty() {
                return Err(ToolError {
                    code: "INTERRUPTED".into(),
                    message: "waiting for a human answer".into(),
                    interrupts,
                });
            }
            for (i, out) in done {
                let (status, result) = match out {
                    Ok(answer) => ("succeeded", answer),
                    Err(e) => ("failed", format!("{}: {}", e.code, e.message)),
                };
                tasks[i].status = status.into();
                tasks[i].result = Some(result);
                ctx.emit_custom(json!({"plan_task": tasks[i].id, "status": status}))
                    .await;
            }
        }
        for t in tasks.iter_mut().filter(|t| t.status == "pending") {
            t.status = "skipped".into();
            t.result = Some("a task it depends on did not succeed".into());
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Tool for PlanTool {
    fn name(&self) -> &str {
        PLAN
    }

    fn description(&self) -> &str {
        "Plan multi-step work as tasks with dependencies; the user approves the plan, then each \
         task runs once the tasks it depends on succeeded. Kinds: `delegate` (a sub-agent: give \
         `role` and `tools`), `research`, and the application's (`build-workflow`). Returns \
         every task's result."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "tasks": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "kind": {"type": "string", "enum": ["delegate", "research", "build-workflow"]},
                        "title": {"type": "string"},
                        "spec": {"type": "string", "description": "What to do and what to return."},
                        "deps": {"type": "array", "items": {"type": "string"}},
                        "role": {"type": "string"},
                        "tools": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["id", "kind", "title", "spec"]
                }}
            },
            "required": ["tasks"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut tasks: Vec<PlannedTask> = serde_json::from_value(args["tasks"].clone())
            .map_err(|e| ToolError::new("INVALID_PLAN", format!("the tasks do not parse: {e}")))?;
        for t in &mut tasks {
            t.status = pending();
            t.result = None;
        }
        self.check(&tasks)?;
        let channel = ctx.settings()["channel"]
            .as_str()
            .unwrap_or(PLAN_CHANNEL)
            .to_string();
        let answer = ctx.interrupt_keyed(
            "plan-approval",
            json!({
                "kind": "plan_review",
                "message": "Approve this plan? Its tasks run once you approve.",
                "tasks": tasks,
            }),
        )?;
        if !approved(&answer) {
            let feedback = answer.get("feedback").and_then(Value::as_str).unwrap_or("");
            let mut out = ToolOutput::text(format!(
                "The user rejected the plan; nothing ran. {feedback} Ask what to change or \
                 propose another plan."
            ));
            for t in &mut tasks {
                t.status = "rejected".into();
            }
            if has_channel(ctx, &channel) {
                out = out.write(channel, json!({"tasks": tasks, "approved": false}));
            }
            return Ok(out);
        }
        self.execute(ctx, &mut tasks).await?;
        let summary: Vec<Value> = tasks
            .iter()
            .map(|t| json!({"id": t.id, "status": t.status, "result": t.result}))
            .collect();
        let mut out = ToolOutput {
            content: json!({"tasks": summary}),
            writes: Vec::new(),
        };
        if has_channel(ctx, &channel) {
            out = out.write(channel, json!({"tasks": tasks, "approved": true}));
        }
        Ok(out)
    }
}
