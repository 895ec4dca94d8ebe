//! A sub-agent run as a child run of the calling task: its own namespace of the same thread
//! (checkpointed like a subgraph, so a crash or an interrupt inside it resumes inside it), a
//! clean conversation (its task alone), a system prompt written by its orchestrator, a subset
//! of tools, and a step limit. Its events stream under its namespace; its final answer comes
//! back to the caller. Its model calls are counted in its own `usage` channel, checkpointed
//! with its steps, and handed to the caller's usage ledger when it ends (finished or not), so
//! a resumed sub-agent's calls count once.

use super::child_usage::{usage_channel, ChildUsage, USAGE};
use super::ORCHESTRATION_TOOLS;
use crate::nodes::{has_tool_calls, LlmNode, ToolExecutorNode};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::{
    AddMessages, ChannelSpec, GraphBuilder, Node, NodeError, Subgraph, ValueType, END, START,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// The most model calls a sub-agent makes unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 8;
/// The sub-agent's model node (scripts name it).
pub const AGENT_NODE: &str = "subagent";
/// The sub-agent's tool node.
pub const TOOLS_NODE: &str = "subagent_tools";
/// The channel holding how many times in a row the same call failed the same way.
const REPEATS: &str = "repeats";
/// A call failing the same way this many times in a row ends the sub-agent (a small local
/// model sent one failing `run_workflow` sixteen times, until its step limit).
pub const STOP_AFTER_REPEATS: i64 = 3;

/// The protocol every sub-agent's system prompt ends with.
pub(super) const PROTOCOL: &str =
    "Protocol: you are a sub-agent working for an orchestrator. Do the \
task with the tools you were given; you cannot delegate, plan or load other tools. Do not ask \
the orchestrator questions: when something is missing, say what in your final answer. Finish \
with a final answer (no tool call) that states the result and the facts the orchestrator needs.";

/// What a sub-agent is.
#[derive(Clone)]
pub struct SubAgent {
    /// Free-form role ("workflow debugger").
    pub role: String,
    /// Its task-specific system prompt.
    pub instructions: String,
    /// The tools it may call.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The most model calls it makes.
    pub max_steps: usize,
}

/// A tool a sub-agent is not given, answering with a refusal the model can act on (so a
/// sub-agent that calls `delegate` learns why it cannot).
pub(super) struct Refused(pub(super) &'static str);

#[async_trait::async_trait]
impl Tool for Refused {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "not available to sub-agents"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "NO_DELEGATION",
            format!(
                "sub-agents cannot use `{}`: do the task yourself with the tools you were \
                 given, and say in your final answer what is left",
                self.0
            ),
        ))
    }
}

pub(super) fn final_answer(state: &Value) -> String {
    state["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["type"] == "ai")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

impl SubAgent {
    /// The child graph: model → tools → model …, ending at an answer without tool calls.
    fn graph(&self, ctx: &ToolContext) -> Result<agentgraph_runtime::CompiledGraph, ToolError> {
        let model = ctx.child_model()?.clone();
        let mut executor = ToolExecutorNode::new(
            self.tools.iter().cloned().chain(
                ORCHESTRATION_TOOLS
                    .iter()
                    .map(|n| Arc::new(Refused(n)) as Arc<dyn Tool>),
            ),
        )
        .model(model.clone())
        // The second identical failure is answered REPEATED_CALL instead of run again.
        .repeat_limit(Some(2))
        .repeats_channel(REPEATS)
        .usage_channel(USAGE);
        // The offered tools win over a refusal of the same name (never given: the pool check).
        for t in &self.tools {
            executor.tools.insert(t.name().to_string(), t.clone());
        }
        let system = format!(
            "You are a sub-agent. Role: {}.\n\n{}\n\n{PROTOCOL}",
            self.role, self.instructions
        );
        let mut llm = LlmNode::new(model)
            .system(system)
            .tools(self.tools.iter().map(|t| t.spec()))
            .max_calls(self.max_steps.max(1))
            .usage_channel(USAGE);
        if let Some(p) = ctx.pricing() {
            llm = llm.pricing(p);
            executor = executor.pricing(p);
        }
        GraphBuilder::new("subagent")
            .channel(
                ChannelSpec::new("messages", ValueType::Messages)
                    .reducer(Arc::new(AddMessages))
                    .default_value(json!([])),
            )
            .channel(usage_channel())
            // Its own verify loop (report_verdict), when it is given that tool.
            .channel(ChannelSpec::new(super::VERIFY_LOOP, ValueType::Json).default_value(json!({})))
            .channel(ChannelSpec::new(REPEATS, ValueType::Int).default_value(json!(0)))
            .node(AGENT_NODE, Arc::new(llm))
            .node(TOOLS_NODE, Arc::new(executor))
            .edge(START, AGENT_NODE)
            .route(AGENT_NODE, |s| {
                if has_tool_calls(s, "messages") {
                    TOOLS_NODE
                } else {
                    END
                }
            })
            .route(TOOLS_NODE, |s| {
                if s.i64(REPEATS) >= STOP_AFTER_REPEATS {
                    END
                } else {
                    AGENT_NODE
                }
            })
            .compile()
            .map_err(|e| ToolError::new("SUBAGENT_INVALID", format!("the sub-agent graph: {e}")))
    }

    /// Runs the sub-agent on `task` as a child run of `ctx`'s task scoped by `key` (the same
    /// key on a re-run finds the same child run and resumes it). Returns its final answer.
    /// Its usage goes to `ctx`'s ledger labelled `key`.
    pub async fn run(&self, ctx: &ToolContext, key: &str, task: &str) -> Result<String, ToolError> {
        let graph = self.graph(ctx)?;
        let task = task.to_string();
        let usage = ChildUsage::default();
        let seen = usage.clone();
        let sub = Subgraph::new(graph)
            .map_in(move |_| {
                Ok(json!({"messages": [{"type": "human", "id": "task", "content": task}]}))
            })
            .map_out(move |state| {
                seen.keep(state);
                let stuck = state[REPEATS].as_i64().unwrap_or(0) >= STOP_AFTER_REPEATS;
                Ok(vec![
                    ("answer".to_string(), json!(final_answer(state))),
                    ("stuck".to_string(), json!(stuck.then(|| last_error(state)))),
                ])
            });
        let child = ctx.task().scoped(key);
        let ran = sub.run(child.clone()).await;
        usage.hand_over(ctx, &child, key);
        let update = match ran {
            Ok(u) => u,
            Err(e @ (NodeError::Interrupted(_) | NodeError::Cancelled)) => return Err(e.into()),
            Err(e) => {
                let msg = e.to_string();
                let code = if msg.contains("MAX_CALLS") || msg.contains("max_calls") {
                    "SUBAGENT_STEP_LIMIT"
                } else {
                    "SUBAGENT_FAILED"
                };
                return Err(ToolError::new(
                    code,
                    format!(
                        "the sub-agent ({}) did not finish: {msg}. Give it a narrower task or \
                         do it directly",
                        self.role
                    ),
                ));
            }
        };
        let written = |key: &str| {
            update
                .writes
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.as_str().map(str::to_owned))
        };
        if let Some(error) = written("stuck") {
            return Err(ToolError::new(
                "SUBAGENT_STUCK",
                format!(
                    "the sub-agent ({}) stopped: it sent the same call {STOP_AFTER_REPEATS} \
                     times and it failed the same way each time ({error}). Do that step \
                     yourself, or delegate it again with the tools and facts it lacked",
                    self.role
                ),
            ));
        }
        Ok(written("answer").unwrap_or_default())
    }
}

/// The newest failed tool message of `state`: `name: code: message`.
fn last_error(state: &Value) -> String {
    state["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["type"] == "tool" && m["status"] == "error")
        .map(|m| {
            let e = &m["content"]["error"];
            let e = e.get("repeated").unwrap_or(e);
            format!(
                "{}: {}: {}",
                m["name"].as_str().unwrap_or("a tool"),
                e["code"].as_str().unwrap_or("ERROR"),
                e["message"].as_str().unwrap_or("")
            )
        })
        .unwrap_or_default()
}
