//! The `llm` node: one chat-model call per task, streamed into the `messages` stream mode.

use crate::ids::stable_id;
use crate::models::{
    CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, SystemPart, ToolChoice, ToolSpec,
};
use crate::node::{Node, NodeError, TaskContext};
use crate::reducer::{Reducer, ReducerError, Storage};
use crate::state::StateView;
use crate::stream::Mode;
use crate::update::Update;
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Renders a templated, non-cacheable system part from the state on every call.
pub type ContextFn = Arc<dyn Fn(&StateView) -> Result<String, NodeError> + Send + Sync>;

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
/// * With `usage_channel` set, the node writes `{"total": usage, "nodes": {<node>: usage}}` to
///   it; declare that channel with the [`UsageSum`] reducer so calls add up, per node and in
///   total over the thread.
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
    /// Output limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Where usage is recorded (a channel with the [`UsageSum`] reducer), if anywhere.
    pub usage_channel: Option<String>,
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
            max_tokens: None,
            temperature: None,
            usage_channel: None,
        }
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
        if let Some(render) = &self.context {
            let text = render(state)?;
            if !text.is_empty() {
                system.push(SystemPart {
                    text,
                    cacheable: false,
                });
            }
        }
        Ok(ModelRequest {
            system,
            messages: state.list(&self.messages_channel).to_vec(),
            tools: self.tools.clone(),
            tool_choice: self.tool_choice.clone(),
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

#[async_trait]
impl Node for LlmNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let req = self.request(ctx.state())?;
        let msg_id = format!(
            "ai-{}",
            stable_id(&[&ctx.ns().join("|"), ctx.task_id(), "llm"])
        );
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
            node: ctx.node().to_string(),
            ns: ctx.ns().to_vec(),
            on_event,
            cancel: ctx.cancellation().child_token(),
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
                ctx.emit_message(chunk(&msg_id, ev)).await;
            }
        };
        let (result, ()) = tokio::join!(call, forward);
        let response = result.map_err(|e| node_error(&model_name, e))?;
        let mut update = Update::new().set(
            self.messages_channel.clone(),
            response.to_message(msg_id.clone()),
        );
        if let Some(channel) = &self.usage_channel {
            let usage = serde_json::to_value(response.usage).unwrap_or(Value::Null);
            let mut nodes = Map::new();
            nodes.insert(ctx.node().to_string(), usage.clone());
            update = update.set(channel.clone(), json!({"total": usage, "nodes": nodes}));
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
