//! The `tool_executor` node: runs every tool call of the last AI message concurrently.

use crate::models::{ChatModel, MeteredModel, Pricing};
use crate::nodes::llm::usage_record;
use crate::tools::{validate_args, Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::stable_id;
use agentgraph_runtime::Update;
use agentgraph_runtime::{Interrupt, Node, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A node that runs the tool calls of the last `ai` message of `messages_channel`.
///
/// * Calls run concurrently. Each is checked first: an unknown tool (`UNKNOWN_TOOL`) or
///   arguments that do not follow the tool's input schema (`INVALID_ARGUMENTS`, naming each
///   problem) are not run.
/// * Every call yields one `tool` message `{"type": "tool", "id", "tool_call_id", "name",
///   "content"}`, in call order. A failed call's message has `"status": "error"` and content
///   `{"error": {"code", "message"}}`; it never stops the other calls.
/// * Around each call the node emits `custom` events `{"tool", "call_id", "status":
///   "running"|"completed"|"error", "title"}`.
/// * The update holds the tool messages and then each successful tool's `writes`, in call
///   order.
/// * With [`ToolExecutorNode::usage_channel`], the tokens of the model calls tools make through
///   the node's model (e.g. `update_node_parameters`) are written to it in the same shape as
///   the `llm` node's usage (per node, per run, total; cost with [`ToolExecutorNode::pricing`]),
///   so the run's usage covers nested calls too.
/// * A tool that asks a human (`ctx.interrupt(..)?` inside the tool) interrupts the node with
///   the interrupts of every such call; on resume all calls run again. Each call sees a task id
///   derived from the node's task id and the call id, so interrupt ids stay stable although
///   calls run concurrently.
#[derive(Clone)]
pub struct ToolExecutorNode {
    /// The tools, by name.
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    /// The message-list channel holding the AI message and receiving the tool messages.
    pub messages_channel: String,
    /// The model handed to tools for nested calls.
    pub model: Option<Arc<dyn ChatModel>>,
    /// Settings per tool name, handed to that tool.
    pub settings: BTreeMap<String, Arc<Value>>,
    /// Where the usage of tools' model calls is recorded (a `usage_sum` channel), if anywhere.
    pub usage_channel: Option<String>,
    /// Prices for the cost in the usage record.
    pub pricing: Option<Pricing>,
}

/// What one call came to.
enum Outcome {
    Done(ToolOutput),
    Failed(ToolError),
}

impl ToolExecutorNode {
    /// An executor for `tools` on the `messages` channel.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        ToolExecutorNode {
            tools: tools
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect(),
            messages_channel: "messages".into(),
            model: None,
            settings: BTreeMap::new(),
            usage_channel: None,
            pricing: None,
        }
    }

    /// Records the usage of tools' model calls in `channel` (declare it with the
    /// [`crate::nodes::UsageSum`] reducer).
    pub fn usage_channel(mut self, channel: impl Into<String>) -> Self {
        self.usage_channel = Some(channel.into());
        self
    }

    /// Adds the cost of tools' model calls (at these prices) to the usage record.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// Gives tools a model for nested calls (e.g. `update_node_parameters`).
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Gives the tool `name` its settings.
    pub fn settings(mut self, name: impl Into<String>, settings: Value) -> Self {
        self.settings.insert(name.into(), Arc::new(settings));
        self
    }

    /// Reads and writes the conversation in `channel` instead of `messages`.
    pub fn messages_channel(mut self, channel: impl Into<String>) -> Self {
        self.messages_channel = channel.into();
        self
    }

    /// The specs of the tools, for [`crate::nodes::LlmNode::tools`].
    pub fn specs(&self) -> Vec<crate::models::ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    async fn run_call(
        &self,
        ctx: &TaskContext,
        model: Option<Arc<dyn ChatModel>>,
        call: &Value,
        index: usize,
    ) -> (String, Outcome) {
        let call_id = call
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call#{index}"));
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
        let Some(tool) = self.tools.get(name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            let err = ToolError::new(
                "UNKNOWN_TOOL",
                format!(
                    "there is no tool named `{name}`; available tools: {}",
                    known.join(", ")
                ),
            );
            return (call_id, Outcome::Failed(err));
        };
        let progress = |status: &str, title: String| json!({"tool": name, "call_id": call_id, "status": status, "title": title});
        if let Err(problems) = validate_args(&tool.input_schema(), &args) {
            let err = ToolError::new(
                "INVALID_ARGUMENTS",
                format!(
                    "invalid arguments for `{name}`: {}; fix them and call it again",
                    problems.join("; ")
                ),
            );
            ctx.emit_custom(progress("error", err.message.clone()))
                .await;
            return (call_id, Outcome::Failed(err));
        }
        ctx.emit_custom(progress("running", format!("Running {name}")))
            .await;
        let call_ctx = ctx.scoped(&call_id);
        let tool_ctx = ToolContext::new(call_ctx)
            .with_model(model)
            .with_settings(self.settings.get(name).cloned().unwrap_or_default());
        let outcome = match tool.call(args, &tool_ctx).await {
            Ok(out) => {
                ctx.emit_custom(progress("completed", format!("{name} completed")))
                    .await;
                Outcome::Done(out)
            }
            Err(e) => {
                if e.interrupts.is_empty() {
                    ctx.emit_custom(progress("error", format!("{name} failed: {}", e.message)))
                        .await;
                }
                Outcome::Failed(e)
            }
        };
        (call_id, outcome)
    }
}

fn tool_message(task_id: &str, call_id: &str, name: &str, content: Value, error: bool) -> Value {
    let mut m = json!({
        "type": "tool",
        "id": format!("tool-{}", stable_id(&[task_id, call_id])),
        "tool_call_id": call_id,
        "name": name,
        "content": content,
    });
    if error {
        m["status"] = json!("error");
    }
    m
}

#[async_trait]
impl Node for ToolExecutorNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let calls: Vec<Value> = ctx
            .state()
            .list(&self.messages_channel)
            .last()
            .filter(|m| m.get("type").and_then(Value::as_str) == Some("ai"))
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Err(NodeError::fatal(format!(
                "tool executor `{}` found no tool calls: the last message of channel `{}` is \
                 not an AI message with tool calls; route here only when it is (see \
                 `nodes::has_tool_calls`)",
                ctx.node(),
                self.messages_channel
            ))
            .with_code("NO_TOOL_CALLS"));
        }
        // Metered per task when usage is recorded, so nested calls count towards the run.
        let metered = match (&self.model, &self.usage_channel) {
            (Some(m), Some(_)) => Some(Arc::new(MeteredModel::new(m.clone()))),
            _ => None,
        };
        let model: Option<Arc<dyn ChatModel>> = match &metered {
            Some(m) => Some(m.clone()),
            None => self.model.clone(),
        };
        let results = futures::future::join_all(
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| self.run_call(&ctx, model.clone(), c, i)),
        )
        .await;
        let interrupts: Vec<Interrupt> = results
            .iter()
            .filter_map(|(_, o)| match o {
                Outcome::Failed(e) => Some(e.interrupts.iter().cloned()),
                Outcome::Done(_) => None,
            })
            .flatten()
            .collect();
        if !interrupts.is_empty() {
            return Err(NodeError::Interrupted(interrupts));
        }
        let mut messages = Vec::with_capacity(results.len());
        let mut writes = Vec::new();
        for ((call_id, outcome), call) in results.into_iter().zip(&calls) {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            match outcome {
                Outcome::Done(out) => {
                    messages.push(tool_message(
                        ctx.task_id(),
                        &call_id,
                        name,
                        out.content,
                        false,
                    ));
                    writes.extend(out.writes);
                }
                Outcome::Failed(e) => {
                    let content = json!({"error": {"code": e.code, "message": e.message}});
                    messages.push(tool_message(ctx.task_id(), &call_id, name, content, true));
                }
            }
        }
        let mut update = Update::new().set(self.messages_channel.clone(), Value::Array(messages));
        update.writes.extend(writes);
        if let (Some(metered), Some(channel)) = (&metered, &self.usage_channel) {
            let (usage, calls) = metered.tally();
            if calls > 0 {
                let record = usage_record(&ctx, &usage, calls, self.pricing.as_ref());
                update = update.set(channel.clone(), record);
            }
        }
        Ok(update)
    }
}
