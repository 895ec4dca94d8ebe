//! The `llm` node: one chat-model call per task, streamed into the `messages` stream mode.

use crate::memory::ChatMemory;
use crate::models::structured::{complete_structured, StructuredError};
use crate::models::{
    CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, Pricing, SystemPart, ToolChoice,
    ToolSpec, Usage,
};
use agentgraph_runtime::reducer::{Reducer, ReducerError, Storage};
use agentgraph_runtime::stable_id;
use agentgraph_runtime::Mode;
use agentgraph_runtime::StateView;
use agentgraph_runtime::Update;
use agentgraph_runtime::{Node, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Renders a templated, non-cacheable system part from the state on every call.
pub type ContextFn = Arc<dyn Fn(&StateView) -> Result<String, NodeError> + Send + Sync>;

/// Picks the tool choice of a call from the state.
pub type ToolChoiceFn = Arc<dyn Fn(&StateView) -> Result<ToolChoice, NodeError> + Send + Sync>;

/// A node that calls a chat model with the conversation in `messages_channel` and appends the
/// answer (an `ai` message, with its tool calls) to it.
///
/// * The system prompt is the static `system` parts (cacheable) followed by the part `context`
///   renders from the state (not cacheable), when set.
/// * While the model answers, each piece is emitted in the `messages` stream mode as
///   `{"id": <message id>, "delta": "<text>"}` or `{"id", "tool_call_delta": {"index", "id",
///   "name", "args_delta"}}`, in arrival order; the message id is the id of the `ai` message
///   the node then writes.
/// * Model errors fail the node; rate limits, server and network errors are marked retryable
///   (give the node a retry policy), and the error code is `MODEL_<KIND>`.
/// * With `usage_channel` set, the node writes `{"total": u, "nodes": {<node>: u}, "runs":
///   {<run id>: u}}` to it, where `u` is the call's usage plus `calls: 1` and, with
///   [`LlmNode::pricing`], `cost_usd`; declare that channel with the [`UsageSum`] reducer so
///   calls add up per node, per run and in total over the thread.
/// * With [`LlmNode::structured`], the model must answer with JSON following a schema (see
///   [`crate::models::structured`], one repair attempt); the value goes to the output channel
///   and nothing is added to the conversation.
/// * With [`LlmNode::memory`], the session's remembered messages (session id: the run setting
///   `session_id`, else the thread id) are sent before the conversation, and a final answer (no
///   tool calls) is remembered with the human message it answers. Messages already remembered
///   (same id) are not added twice, so a re-run after a crash does not duplicate them.
/// * With [`LlmNode::max_iterations`], the node fails with `MAX_ITERATIONS` instead of calling
///   the model once the conversation holds that many AI messages after the last human one;
///   with [`LlmNode::max_calls`], with `MAX_CALLS` once it holds that many AI messages at all.
/// * With [`LlmNode::context_message`], the rendered context is sent as a final human message
///   after the conversation instead of a system part (never written to the state), so the
///   system prompt and the conversation stay a stable, cacheable prefix while the context
///   changes.
/// * With [`LlmNode::tool_choice_fn`], the tool choice is picked from the state on each call.
#[derive(Clone)]
pub struct LlmNode {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// Static system prompt parts (sent first, marked cacheable by [`LlmNode::system`]).
    pub system: Vec<SystemPart>,
    /// Renders the per-call, non-cacheable part of the system prompt.
    pub context: Option<ContextFn>,
    /// The message-list channel read as the conversation and written with the answer.
    pub messages_channel: String,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Picks the tool choice from the state on each call (wins over `tool_choice`).
    pub tool_choice_by_state: Option<ToolChoiceFn>,
    /// Sends the rendered context as a final human message instead of a system part.
    pub context_as_message: bool,
    /// Output limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Where usage is recorded (a channel with the [`UsageSum`] reducer), if anywhere.
    pub usage_channel: Option<String>,
    /// Prices for the cost in the usage record.
    pub pricing: Option<Pricing>,
    /// Structured output: the schema and the channel receiving the value.
    pub structured: Option<(Value, String)>,
    /// Conversation memory across threads and runs.
    pub memory: Option<Arc<dyn ChatMemory>>,
    /// The most AI answers after the last human message.
    pub max_iterations: Option<usize>,
    /// The most AI answers in the whole conversation.
    pub max_calls: Option<usize>,
}

impl LlmNode {
    /// A node calling `model` on the `messages` channel, with no system prompt and no tools.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmNode {
            model,
            system: Vec::new(),
            context: None,
            messages_channel: "messages".into(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            tool_choice_by_state: None,
            context_as_message: false,
            max_tokens: None,
            temperature: None,
            usage_channel: None,
            pricing: None,
            structured: None,
            memory: None,
            max_iterations: None,
            max_calls: None,
        }
    }

    /// Adds the cost of each call (at these prices) to the usage record.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// Asks for a JSON answer following `schema`, written to `channel`.
    pub fn structured(mut self, schema: Value, channel: impl Into<String>) -> Self {
        self.structured = Some((schema, channel.into()));
        self
    }

    /// Loads and saves the conversation in `memory` (see the type docs).
    pub fn memory(mut self, memory: Arc<dyn ChatMemory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Fails with `MAX_ITERATIONS` after `n` answers to one human message.
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// Fails with `MAX_CALLS` once the conversation holds `n` AI answers.
    pub fn max_calls(mut self, n: usize) -> Self {
        self.max_calls = Some(n);
        self
    }

    /// Sends the rendered context as a final human message after the conversation.
    pub fn context_as_message(mut self) -> Self {
        self.context_as_message = true;
        self
    }

    /// Picks the tool choice from the state on each call.
    pub fn tool_choice_fn<F>(mut self, f: F) -> Self
    where
        F: Fn(&StateView) -> Result<ToolChoice, NodeError> + Send + Sync + 'static,
    {
        self.tool_choice_by_state = Some(Arc::new(f));
        self
    }

    /// Adds a static, cacheable system prompt part.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system.push(SystemPart {
            text: text.into(),
            cacheable: true,
        });
        self
    }

    /// Sets the templated system part rendered from the state on each call.
    pub fn context<F>(mut self, f: F) -> Self
    where
        F: Fn(&StateView) -> Result<String, NodeError> + Send + Sync + 'static,
    {
        self.context = Some(Arc::new(f));
        self
    }

    /// Reads and writes the conversation in `channel` instead of `messages`.
    pub fn messages_channel(mut self, channel: impl Into<String>) -> Self {
        self.messages_channel = channel.into();
        self
    }

    /// Binds tools (e.g. `tools.iter().map(|t| t.spec())`).
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolSpec>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets the output limit.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Records usage in `channel` (declare it with the [`UsageSum`] reducer).
    pub fn usage_channel(mut self, channel: impl Into<String>) -> Self {
        self.usage_channel = Some(channel.into());
        self
    }

    /// The request this node sends for a state.
    pub fn request(&self, state: &StateView) -> Result<ModelRequest, NodeError> {
        let mut system = self.system.clone();
        let mut messages = state.list(&self.messages_channel).to_vec();
        if let Some(render) = &self.context {
            let text = render(state)?;
            if !text.is_empty() && self.context_as_message {
                messages.push(json!({"type": "human", "id": "context", "content": text}));
            } else if !text.is_empty() {
                system.push(SystemPart {
                    text,
                    cacheable: false,
                });
            }
        }
        let tool_choice = match &self.tool_choice_by_state {
            Some(pick) => pick(state)?,
            None => self.tool_choice.clone(),
        };
        Ok(ModelRequest {
            system,
            messages,
            tools: self.tools.clone(),
            tool_choice,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            response_schema: None,
        })
    }
}

fn node_error(model: &str, e: ModelError) -> NodeError {
    let code = match &e {
        ModelError::InvalidCredentials { .. } => "MODEL_CREDENTIALS",
        ModelError::RateLimited { .. } => "MODEL_RATE_LIMITED",
        ModelError::Server { .. } => "MODEL_SERVER",
        ModelError::BadRequest { .. } => "MODEL_BAD_REQUEST",
        ModelError::Network { .. } => "MODEL_NETWORK",
        ModelError::InvalidResponse { .. } => "MODEL_INVALID_RESPONSE",
        ModelError::StreamInterrupted { .. } => "MODEL_STREAM_INTERRUPTED",
        ModelError::OutputTruncated { .. } => "MODEL_OUTPUT_TRUNCATED",
        ModelError::Script(_) => "MODEL_SCRIPT",
        ModelError::Config(_) => "MODEL_CONFIG",
        ModelError::Cancelled => return NodeError::Cancelled,
    };
    let message = format!("model {model}: {e}");
    let err = if e.is_transient() {
        NodeError::transient(message)
    } else {
        NodeError::fatal(message)
    };
    err.with_code(code)
}

fn chunk(id: &str, ev: ModelEvent) -> Value {
    match ev {
        ModelEvent::TextDelta { text } => json!({"id": id, "delta": text}),
        ModelEvent::ToolCallDelta {
            index,
            id: call_id,
            name,
            args_delta,
        } => json!({"id": id, "tool_call_delta": {
            "index": index, "id": call_id, "name": name, "args_delta": args_delta}}),
    }
}

fn kind(m: &Value) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

/// AI messages after the last human message.
fn iterations(messages: &[Value]) -> usize {
    messages
        .iter()
        .rev()
        .take_while(|m| kind(m) != "human")
        .filter(|m| kind(m) == "ai")
        .count()
}

fn memory_error(e: crate::memory::MemoryError) -> NodeError {
    NodeError::transient(format!("conversation memory: {e}")).with_code("MEMORY")
}

impl LlmNode {
    fn session(ctx: &TaskContext) -> String {
        ctx.configurable()
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| ctx.thread_id().to_string())
    }

    /// Streams one model call, forwarding chunks to the `messages` stream mode.
    async fn call_streaming(
        &self,
        ctx: &TaskContext,
        req: ModelRequest,
        msg_id: &str,
    ) -> Result<crate::models::ModelResponse, NodeError> {
        let model_name = self.model.name();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ModelEvent>();
        let on_event: Option<Arc<dyn Fn(ModelEvent) + Send + Sync>> =
            if ctx.streaming(Mode::Messages) {
                Some(Arc::new(move |ev| {
                    let _ = tx.send(ev);
                }))
            } else {
                drop(tx);
                None
            };
        let call_ctx = CallContext {
            on_event,
            ..CallContext::for_task(ctx)
        };
        let model = self.model.clone();
        let call = async move {
            let r = model.complete(&req, &call_ctx).await;
            // Dropping the context closes the event channel, which ends the forwarding.
            drop(call_ctx);
            r
        };
        let forward = async {
            while let Some(ev) = rx.recv().await {
                ctx.emit_message(chunk(msg_id, ev)).await;
            }
        };
        let (result, ()) = tokio::join!(call, forward);
        result.map_err(|e| node_error(&model_name, e))
    }

    fn usage_write(&self, ctx: &TaskContext, usage: &Usage) -> Value {
        usage_record(ctx, usage, 1, self.pricing.as_ref())
    }
}

/// The usage write of `calls` model calls made by the task: `{"total": u, "nodes": {<node>:
/// u}, "runs": {<run id>: u}}`, where `u` is `usage` plus `calls` and, with prices,
/// `cost_usd` (for a channel with the [`UsageSum`] reducer).
pub(crate) fn usage_record(
    ctx: &TaskContext,
    usage: &Usage,
    calls: u64,
    pricing: Option<&Pricing>,
) -> Value {
    let mut u = serde_json::to_value(usage).unwrap_or_else(|_| json!({}));
    u["calls"] = json!(calls);
    if let Some(p) = pricing {
        u["cost_usd"] = json!(p.cost(usage));
    }
    let mut nodes = Map::new();
    nodes.insert(ctx.node().to_string(), u.clone());
    let mut runs = Map::new();
    if !ctx.run_id().is_empty() {
        runs.insert(ctx.run_id().to_string(), u.clone());
    }
    json!({"total": u, "nodes": nodes, "runs": runs})
}

#[async_trait]
impl Node for LlmNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let conversation = ctx.state().list(&self.messages_channel);
        if let Some(max) = self.max_calls {
            let calls = conversation.iter().filter(|m| kind(m) == "ai").count();
            if calls >= max {
                return Err(NodeError::fatal(format!(
                    "model-call budget ({max}) spent: node `{}` answered {calls} times in this \
                     conversation; raise `max_calls` or check the tools' results",
                    ctx.node()
                ))
                .with_code("MAX_CALLS"));
            }
        }
        if let Some(max) = self.max_iterations {
            if iterations(conversation) >= max {
                return Err(NodeError::fatal(format!(
                    "max iterations ({max}) reached: node `{}` answered {max} times without a \
                     final answer; raise `max_iterations` or check the tools' results",
                    ctx.node()
                ))
                .with_code("MAX_ITERATIONS"));
            }
        }
        let mut req = self.request(ctx.state())?;
        let session = Self::session(&ctx);
        let mut remembered = Vec::new();
        if let Some(memory) = &self.memory {
            remembered = memory.load(&session).await.map_err(memory_error)?;
            let mut messages = remembered.clone();
            messages.append(&mut req.messages);
            req.messages = messages;
        }
        let msg_id = format!(
            "ai-{}",
            stable_id(&[&ctx.ns().join("|"), ctx.task_id(), "llm"])
        );
        let mut update = Update::new();
        let usage = if let Some((schema, channel)) = &self.structured {
            let call_ctx = CallContext::for_task(&ctx);
            let out = complete_structured(self.model.as_ref(), &req, schema, &call_ctx)
                .await
                .map_err(|e| match e {
                    StructuredError::Model(e) => node_error(&self.model.name(), e),
                    e @ StructuredError::Invalid { .. } => {
                        NodeError::fatal(format!("model {}: {e}", self.model.name()))
                            .with_code("STRUCTURED_OUTPUT_INVALID")
                    }
                })?;
            update = update.set(channel.clone(), out.value);
            out.usage
        } else {
            let response = self.call_streaming(&ctx, req, &msg_id).await?;
            let answer = response.to_message(msg_id.clone());
            if let (Some(memory), true) = (&self.memory, response.tool_calls.is_empty()) {
                let known: std::collections::HashSet<&str> = remembered
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .collect();
                let question = ctx
                    .state()
                    .list(&self.messages_channel)
                    .iter()
                    .rev()
                    .find(|m| kind(m) == "human")
                    .cloned();
                let new: Vec<Value> = question
                    .into_iter()
                    .chain(std::iter::once(answer.clone()))
                    .filter(|m| {
                        m.get("id")
                            .and_then(Value::as_str)
                            .is_none_or(|id| !known.contains(id))
                    })
                    .collect();
                memory.append(&session, &new).await.map_err(memory_error)?;
            }
            update = update.set(self.messages_channel.clone(), answer);
            response.usage
        };
        if let Some(channel) = &self.usage_channel {
            update = update.set(channel.clone(), self.usage_write(&ctx, &usage));
        }
        Ok(update)
    }
}

/// A reducer that adds objects of counters: numbers at the same path are summed, nested
/// objects are merged the same way, anything else is replaced. Use it for the usage channel of
/// [`LlmNode`] (type `json`).
pub struct UsageSum;

fn add_into(current: &mut Value, write: Value) {
    match (current, write) {
        (Value::Object(cur), Value::Object(new)) => {
            for (k, v) in new {
                match cur.get_mut(&k) {
                    Some(slot) => add_into(slot, v),
                    None => {
                        cur.insert(k, v);
                    }
                }
            }
        }
        (cur @ Value::Number(_), Value::Number(n)) => {
            let sum = match (cur.as_u64(), n.as_u64()) {
                (Some(a), Some(b)) => json!(a.saturating_add(b)),
                _ => json!(cur.as_f64().unwrap_or(0.0) + n.as_f64().unwrap_or(0.0)),
            };
            *cur = sum;
        }
        (cur, new) => *cur = new,
    }
}

impl Reducer for UsageSum {
    fn name(&self) -> &str {
        "usage_sum"
    }
    fn storage(&self) -> Storage {
        Storage::Value
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        if !write.is_object() {
            return Err(ReducerError(format!(
                "usage_sum needs an object of counters, got {write}"
            )));
        }
        match current {
            Some(cur) if cur.is_object() => add_into(cur, write),
            _ => *current = Some(write),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sum_adds_nested_counters() {
        let mut cur = None;
        let r = UsageSum;
        r.apply(
            &mut cur,
            json!({"total": {"a": 1}, "nodes": {"x": {"a": 1}}}),
        )
        .unwrap();
        r.apply(
            &mut cur,
            json!({"total": {"a": 2}, "nodes": {"y": {"a": 2}}}),
        )
        .unwrap();
        assert_eq!(
            cur,
            Some(json!({"total": {"a": 3}, "nodes": {"x": {"a": 1}, "y": {"a": 2}}}))
        );
        assert!(r.apply(&mut cur, json!(3)).is_err());
    }
}
