//! The `tool_executor` node: runs every tool call of the last AI message concurrently.

mod batch;
mod repeats;

pub use repeats::REPEATED_CALL;

use crate::models::{ChatModel, MeteredModel, Pricing, TracedModel};
use crate::nodes::usage::{add_usage, usage_record};
use crate::tools::recover::{resolve_tool_name, unwrap_arguments, Recovery};
use crate::tools::{
    validate_args, ListedTools, Tool, ToolContext, ToolError, ToolOutput, UsageLedger,
};
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
///   so the run's usage covers nested calls too; so is the usage of the child runs tools
///   record in [`ToolContext::usage`] (sub-agents, planned tasks: their nodes as
///   `<node>/<label>/<child node>`). A child run gets the model unmetered
///   ([`ToolContext::child_model`]) and counts its own calls, checkpointed with its steps, so
///   a step that runs again after a crash or an interrupt adds each call once.
/// * A call that failed although an earlier call of the batch made writes, with an error its
///   tool says may depend on them ([`Tool::rerun_after_batch`]: a connection to a node added
///   in the same batch), runs again after the batch's other calls, seeing the writes of the
///   calls before it ([`ToolContext::batch_writes`]); its task id is the same, so ids derived
///   from it stay stable.
/// * A tool name in other casing or with other separators, and arguments wrapped in a JSON
///   string or an `arguments` object, are repaired as the `llm` node does
///   ([`crate::tools::recover`]; event `{"recovery", "tool", "detail", "node", "call_id",
///   "title"}`).
/// * A call failing with the same error as the attempts of the same call (same tool, same
///   arguments) right before it in the conversation, [`ToolExecutorNode::repeat_limit`] times
///   in a row (default 2), is answered with `REPEATED_CALL`: the message names the error and
///   says to change something; the content also carries `repeats` (the count) and `repeated`
///   (the original `{code, message}`). With [`ToolExecutorNode::repeats_channel`] the longest
///   run of identical failures among the batch's calls (0 when none failed) is written to that
///   `int` channel, for graphs that stop a phase.
/// * A call of a [`Tool::pure`] tool with the name and arguments of a call that already
///   succeeded earlier in the conversation is not run: it is answered `REPEATED_CALL`,
///   pointing at the result above. So is every call of an answer that repeats the previous
///   answer exactly, when those calls succeeded.
/// * A tool that asks a human (`ctx.interrupt(..)?` inside the tool) interrupts the node with
///   the interrupts of every such call; on resume all calls run again. Each call sees a task id
///   derived from the node's task id and the call id, so interrupt ids stay stable although
///   calls run concurrently.
#[derive(Clone)]
pub struct ToolExecutorNode {
    /// The tools, by name.
    pub tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Tools listed at the first run (an MCP server's), added to [`ToolExecutorNode::tools`].
    pub listed: ListedTools,
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
    /// After how many identical failures in a row a call is answered with `REPEATED_CALL`
    /// (`None`: never).
    pub repeat_limit: Option<usize>,
    /// An `int` channel receiving the longest run of identical failures of the batch.
    pub repeats_channel: Option<String>,
    /// The most calls one answer may make; the calls past it are answered `TOO_MANY_CALLS`
    /// without running (`None`: no limit).
    pub max_batch: Option<usize>,
}

/// What one call came to.
enum Outcome {
    Done(ToolOutput),
    Failed(ToolError),
}

/// One call: its id, the tool it went to (after name recovery), its arguments as run, and its
/// outcome.
struct CallResult {
    call_id: String,
    name: String,
    args: Value,
    outcome: Outcome,
}

impl ToolExecutorNode {
    /// An executor for `tools` on the `messages` channel.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        ToolExecutorNode {
            tools: tools
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect(),
            listed: ListedTools::default(),
            messages_channel: "messages".into(),
            model: None,
            settings: BTreeMap::new(),
            usage_channel: None,
            pricing: None,
            repeat_limit: Some(2),
            repeats_channel: None,
            max_batch: None,
        }
    }

    /// Also runs the tools of sources listed at the first run (an MCP server's).
    pub fn listed_tools(mut self, listed: ListedTools) -> Self {
        self.listed = listed;
        self
    }

    /// Runs at most `n` calls of one answer; the rest are answered `TOO_MANY_CALLS`.
    pub fn max_batch(mut self, n: Option<usize>) -> Self {
        self.max_batch = n;
        self
    }

    /// Answers a call failing the same way `n` times in a row with `REPEATED_CALL` (`None`:
    /// never).
    pub fn repeat_limit(mut self, n: Option<usize>) -> Self {
        self.repeat_limit = n;
        self
    }

    /// Writes the longest run of identical failures of each batch to `channel` (type `int`).
    pub fn repeats_channel(mut self, channel: impl Into<String>) -> Self {
        self.repeats_channel = Some(channel.into());
        self
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
        models: &Models,
        call: &Value,
        index: usize,
        batch_writes: Arc<Vec<(String, Value)>>,
    ) -> CallResult {
        let call_id = call
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call#{index}"));
        let given = call.get("name").and_then(Value::as_str).unwrap_or("");
        let mut args = call.get("args").cloned().unwrap_or_else(|| json!({}));
        let resolved = resolve_tool_name(given, self.tools.keys().map(String::as_str));
        let Some((name, tool)) = resolved.and_then(|n| self.tools.get_key_value(n)) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            let err = ToolError::new(
                "UNKNOWN_TOOL",
                format!(
                    "there is no tool named `{given}`; available tools: {}",
                    known.join(", ")
                ),
            );
            return CallResult {
                call_id,
                name: given.to_string(),
                args,
                outcome: Outcome::Failed(err),
            };
        };
        let name = name.as_str();
        let mut recoveries = Vec::new();
        if name != given {
            recoveries.push(Recovery::ToolName {
                from: given.to_string(),
                to: name.to_string(),
            });
        }
        if let Some((unwrapped, how)) = unwrap_arguments(&tool.input_schema(), &args) {
            args = unwrapped;
            let tool = name.to_string();
            recoveries.push(Recovery::Arguments { tool, how });
        }
        for r in &recoveries {
            tracing::info!(target: "agentgraph::recover", node = ctx.node(), kind = r.kind(),
                tool = r.tool(), call_id = call_id.as_str(), "recovered tool call: {r}");
            ctx.emit_custom(r.event(ctx.node(), &call_id)).await;
        }
        let done = |outcome| CallResult {
            call_id: call_id.clone(),
            name: name.to_string(),
            args: args.clone(),
            outcome,
        };
        if let Err(problems) = validate_args(&tool.input_schema(), &args) {
            let err = ToolError::new(
                "INVALID_ARGUMENTS",
                format!(
                    "invalid arguments for `{name}`: {}; fix them and call it again",
                    problems.join("; ")
                ),
            );
            return done(Outcome::Failed(err));
        }
        ctx.emit_custom(progress(
            name,
            &call_id,
            "running",
            format!("Running {name}"),
        ))
        .await;
        let tool_ctx = ToolContext::new(ctx.scoped(&call_id))
            .with_model(models.nested.clone())
            .with_child_model(self.model.clone(), self.pricing)
            .with_usage(models.ledger.clone())
            .with_settings(self.settings.get(name).cloned().unwrap_or_default())
            .with_batch_writes(batch_writes);
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format!("execute_tool {name}"),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %name,
            gen_ai.tool.call.id = %call_id,
            error.type = tracing::field::Empty,
        );
        let called =
            tracing::Instrument::instrument(tool.call(args.clone(), &tool_ctx), span.clone()).await;
        if let Err(e) = &called {
            span.record("error.type", e.code.as_str());
        }
        match called {
            Ok(out) => {
                let title = format!("{name} completed");
                ctx.emit_custom(progress(name, &call_id, "completed", title))
                    .await;
                done(Outcome::Done(out))
            }
            Err(e) => done(Outcome::Failed(e)),
        }
    }

    /// Runs again, in call order, each failed call whose tool says the batch's earlier writes
    /// may change the result, with those writes.
    async fn rerun_dependent(
        &self,
        ctx: &TaskContext,
        models: &Models,
        calls: &[Value],
        results: &mut [CallResult],
    ) {
        let mut earlier: Vec<(String, Value)> = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let rerun = match &results[i].outcome {
                Outcome::Failed(e) => {
                    !earlier.is_empty()
                        && e.interrupts.is_empty()
                        && self
                            .tools
                            .get(&results[i].name)
                            .is_some_and(|t| t.rerun_after_batch(e))
                }
                Outcome::Done(_) => false,
            };
            if rerun {
                tracing::debug!(
                    node = ctx.node(),
                    tool = results[i].name.as_str(),
                    "running a failed call again after its batch's earlier calls"
                );
                let writes = Arc::new(earlier.clone());
                results[i] = self.run_call(ctx, models, call, i, writes).await;
            }
            if let Outcome::Done(out) = &results[i].outcome {
                earlier.extend(out.writes.iter().cloned());
            }
        }
    }
}

/// What one batch hands its tools: the model for nested calls (metered when usage is
/// recorded, traced) and the ledger of their child runs' usage.
struct Models {
    nested: Option<Arc<dyn ChatModel>>,
    metered: Option<Arc<MeteredModel>>,
    ledger: UsageLedger,
}

impl Models {
    /// The usage write of the batch: the nested calls' record plus the child runs' usage.
    fn usage_write(&self, ctx: &TaskContext, pricing: Option<&Pricing>) -> Option<Value> {
        let mut write = self.metered.as_ref().and_then(|m| {
            let (usage, calls) = m.tally();
            (calls > 0).then(|| usage_record(ctx, &usage, calls, pricing))
        });
        if let Some(children) = self.ledger.total(ctx.node()) {
            match &mut write {
                Some(w) => add_usage(w, children),
                None => write = Some(children),
            }
        }
        write
    }
}

fn progress(tool: &str, call_id: &str, status: &str, title: String) -> Value {
    json!({"tool": tool, "call_id": call_id, "status": status, "title": title})
}

fn interrupts_of(results: &[CallResult]) -> Vec<Interrupt> {
    results
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Failed(e) => Some(e.interrupts.iter().cloned()),
            Outcome::Done(_) => None,
        })
        .flatten()
        .collect()
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
        if self.listed.is_empty() {
            return self.run_with_tools(ctx).await;
        }
        let listed = self.listed.for_node(ctx.node()).await?;
        let mut node = self.clone();
        for t in listed {
            node.tools.insert(t.name().to_string(), t.clone());
        }
        node.listed = ListedTools::default();
        node.run_with_tools(ctx).await
    }
}

impl ToolExecutorNode {
    /// One batch, with every tool known.
    async fn run_with_tools(&self, ctx: TaskContext) -> Result<Update, NodeError> {
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
        // Nested calls are traced like the `llm` node's own (a `chat` span inside the tool's).
        let models = Models {
            nested: model
                .map(|m| Arc::new(TracedModel::new(m, self.pricing)) as Arc<dyn ChatModel>),
            metered,
            ledger: UsageLedger::default(),
        };
        let none = Arc::new(Vec::new());
        let history = ctx.state().list(&self.messages_channel);
        let history = &history[..history.len().saturating_sub(1)];
        let plan = if repeats::repeats_previous_answer(history, &calls) {
            vec![Some(repeats::repeated_answer()); calls.len()]
        } else {
            let mut plan = batch::plan(&calls, self.max_batch);
            for (c, slot) in calls.iter().zip(plan.iter_mut()) {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                let args = c.get("args").unwrap_or(&Value::Null);
                let pure = self.tools.get(name).is_some_and(|t| t.pure());
                if slot.is_none() && pure {
                    if let Some(result) = repeats::earlier_success(history, name, args) {
                        *slot = Some(repeats::answered_before(name, &result));
                    }
                }
            }
            plan
        };
        let mut results = futures::future::join_all(calls.iter().enumerate().map(|(i, c)| {
            let none = none.clone();
            let skip = plan[i].clone();
            let (ctx, models) = (&ctx, &models);
            async move {
                match skip {
                    None => self.run_call(ctx, models, c, i, none).await,
                    Some(err) => batch::skipped(c, i, err),
                }
            }
        }))
        .await;
        let interrupts = interrupts_of(&results);
        if !interrupts.is_empty() {
            return Err(NodeError::Interrupted(interrupts));
        }
        self.rerun_dependent(&ctx, &models, &calls, &mut results)
            .await;
        let interrupts = interrupts_of(&results);
        if !interrupts.is_empty() {
            return Err(NodeError::Interrupted(interrupts));
        }
        let mut messages = Vec::with_capacity(results.len());
        let mut writes = Vec::new();
        let mut longest = 0;
        for r in results {
            match r.outcome {
                Outcome::Done(out) => {
                    messages.push(tool_message(
                        ctx.task_id(),
                        &r.call_id,
                        &r.name,
                        out.content,
                        false,
                    ));
                    writes.extend(out.writes);
                }
                Outcome::Failed(e) => {
                    let n = repeats::streak(history, &r.name, &r.args, &e);
                    longest = longest.max(n);
                    let (content, shown) = match self.repeat_limit.filter(|l| n >= *l) {
                        Some(_) => {
                            let repeat = repeats::repeated(&r.name, &e, n);
                            let content = repeats::repeated_content(&repeat, &e, n);
                            (content, repeat)
                        }
                        None => (json!({"error": {"code": e.code, "message": e.message}}), e),
                    };
                    let mut event = progress(
                        &r.name,
                        &r.call_id,
                        "error",
                        format!("{} failed: {}", r.name, shown.message),
                    );
                    if n > 1 {
                        event["repeats"] = json!(n);
                    }
                    ctx.emit_custom(event).await;
                    messages.push(tool_message(
                        ctx.task_id(),
                        &r.call_id,
                        &r.name,
                        content,
                        true,
                    ));
                }
            }
        }
        let mut update = Update::new().set(self.messages_channel.clone(), Value::Array(messages));
        update.writes.extend(writes);
        if let Some(channel) = &self.repeats_channel {
            update = update.set(channel.clone(), json!(longest));
        }
        if let Some(channel) = &self.usage_channel {
            if let Some(record) = models.usage_write(&ctx, self.pricing.as_ref()) {
                update = update.set(channel.clone(), record);
            }
        }
        Ok(update)
    }
}
