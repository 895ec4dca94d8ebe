//! The `llm` node: one chat-model call per task, streamed into the `messages` stream mode.

mod build;
mod named_choice;
mod overflow;
mod recovery;
mod truncation;

pub use overflow::OverflowCompaction;

use super::usage::usage_record;
use crate::memory::ChatMemory;
use crate::models::structured::{complete_structured, StructuredError};
use crate::models::{
    CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, ModelResponse, Pricing,
    SystemPart, ToolChoice, ToolSpec, Usage,
};
use crate::tools::ListedTools;
use agentgraph_runtime::stable_id;
use agentgraph_runtime::Mode;
use agentgraph_runtime::StateView;
use agentgraph_runtime::Update;
use agentgraph_runtime::{Node, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// Renders a templated, non-cacheable system part on every call, from the state and the
/// task's `send` payload (`None` for a task no send started).
pub type ContextFn =
    Arc<dyn Fn(&StateView, Option<&Value>) -> Result<String, NodeError> + Send + Sync>;

/// Picks the tool choice of a call from the state and the task's `send` payload.
pub type ToolChoiceFn =
    Arc<dyn Fn(&StateView, Option<&Value>) -> Result<ToolChoice, NodeError> + Send + Sync>;

/// A node that calls a chat model with the conversation in `messages_channel` and appends the
/// answer (an `ai` message, with its tool calls) to it.
///
/// * The system prompt is the static `system` parts (cacheable) followed by the part `context`
///   renders from the state and the task's send payload (not cacheable), when set.
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
///   (same id) are not added twice, so a re-run after a crash does not duplicate them. With
///   [`LlmNode::store_memory`], the same on the graph's store, under a namespace computed from
///   each task's state (every thread of one user shares the conversation).
/// * With [`LlmNode::max_iterations`], the node fails with `MAX_ITERATIONS` instead of calling
///   the model once the conversation holds that many AI messages after the last human one;
///   with [`LlmNode::max_calls`], with `MAX_CALLS` once it holds that many AI messages at all.
/// * Tool calls are repaired where the intent is unambiguous ([`crate::tools::recover`]): a
///   tool name in other casing or with other separators, arguments wrapped in a JSON string or
///   an `arguments` object, calls written as text (the message then keeps the text around them
///   as content and the whole original text under `recovered_from_text`). Each repair is
///   logged (`tracing`, target `agentgraph::recover`), emitted as a `custom` event
///   `{"recovery": "tool_name"|"arguments"|"text_call", "tool", "detail", "node", "call_id",
///   "title"}` and counted under `recoveries` in the usage record.
/// * A request larger than the model's context ([`ModelError::ContextOverflow`]) is answered,
///   unless [`LlmNode::on_overflow`] is `None`, by compacting the conversation (a summary plus
///   the latest messages, written to the channel with the answer) and calling once more; a
///   second overflow fails with `MODEL_CONTEXT_OVERFLOW`, saying what is large.
/// * With [`LlmNode::context_message`], the rendered context is sent as a final human message
///   after the conversation instead of a system part (never written to the state), so the
///   system prompt and the conversation stay a stable, cacheable prefix while the context
///   changes.
/// * With [`LlmNode::tool_choice_fn`], the tool choice is picked from the state (and the send
///   payload) on each call.
/// * With [`LlmNode::deferred`], a call offers only the core tools and the tools named in the
///   loaded-tools channel (see [`crate::orchestration`]'s `search_tools` and `load_tool`).
/// * With [`LlmNode::state_part`], a channel's value (observations, working memory; see
///   [`crate::memory::observational`]) is sent after the static system parts as
///   `<tag>\n…\n</tag>`, when it is set and not empty.
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
    /// Tools listed at the first call (an MCP server's), offered after [`LlmNode::tools`].
    pub listed: ListedTools,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Picks the tool choice from the state on each call (wins over `tool_choice`).
    pub tool_choice_by_state: Option<ToolChoiceFn>,
    /// Whether one answer may hold several tool calls (`None`: the provider's default).
    pub parallel_tool_calls: Option<bool>,
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
    /// Conversation memory on the graph's store (takes precedence over `memory`).
    pub store_memory: Option<crate::memory::StoreMemorySpec>,
    /// The most AI answers after the last human message.
    pub max_iterations: Option<usize>,
    /// How a context overflow is handled (`None`: it fails the node).
    pub on_overflow: Option<OverflowCompaction>,
    /// The most AI answers in the whole conversation.
    pub max_calls: Option<usize>,
    /// Offers only the core tools plus those loaded in the thread ([`LlmNode::deferred`]).
    pub deferred: Option<crate::orchestration::DeferredTools>,
    /// Channels shown as system parts, `(channel, tag)` ([`LlmNode::state_part`]).
    pub state_parts: Vec<(String, String)>,
    /// A tool call the output limit cut is closed after its last complete value and made when
    /// the tool's schema accepts it ([`LlmNode::close_cut_calls`]); otherwise the model is
    /// called again with a note.
    pub close_cut_calls: bool,
}

fn node_error(model: &str, e: ModelError) -> NodeError {
    let code = match &e {
        ModelError::InvalidCredentials { .. } => "MODEL_CREDENTIALS",
        ModelError::RateLimited { .. } => "MODEL_RATE_LIMITED",
        ModelError::Server { .. } => "MODEL_SERVER",
        ModelError::BadRequest { .. } => "MODEL_BAD_REQUEST",
        ModelError::ContextOverflow { .. } => "MODEL_CONTEXT_OVERFLOW",
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
    ) -> Result<ModelResponse, ModelError> {
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
        result
    }

    /// One answer to `req`: a message, or a structured value.
    async fn attempt(
        &self,
        ctx: &TaskContext,
        req: &ModelRequest,
        msg_id: &str,
    ) -> Result<Answer, Failure> {
        use tracing::Instrument;
        // One model call, with the OpenTelemetry GenAI attributes (also timed for /metrics).
        let span = crate::models::chat_span(&self.model.name());
        let result = self
            .attempt_unmeasured(ctx, req, msg_id)
            .instrument(span.clone())
            .await;
        let pricing = self.pricing.as_ref();
        match &result {
            Ok(Answer::Message(r)) => {
                crate::models::record_usage(&span, Some(&r.model), &r.usage, pricing);
            }
            Ok(Answer::Structured { usage, .. }) => {
                crate::models::record_usage(&span, None, usage, pricing);
            }
            Err(Failure::Model(e)) => crate::models::record_error(&span, e),
            Err(Failure::Node(_)) => {
                span.record("error.type", "unusable_answer");
            }
        }
        result
    }

    async fn attempt_unmeasured(
        &self,
        ctx: &TaskContext,
        req: &ModelRequest,
        msg_id: &str,
    ) -> Result<Answer, Failure> {
        let Some((schema, _)) = &self.structured else {
            return Ok(Answer::Message(
                self.call_streaming(ctx, req.clone(), msg_id)
                    .await
                    .map_err(Failure::Model)?,
            ));
        };
        let call_ctx = CallContext::for_task(ctx);
        match complete_structured(self.model.as_ref(), req, schema, &call_ctx).await {
            Ok(out) => Ok(Answer::Structured {
                value: out.value,
                usage: out.usage,
            }),
            Err(StructuredError::Model(e)) => Err(Failure::Model(e)),
            Err(e @ StructuredError::Invalid { .. }) => Err(Failure::Node(
                NodeError::fatal(format!("model {}: {e}", self.model.name()))
                    .with_code("STRUCTURED_OUTPUT_INVALID"),
            )),
        }
    }

    /// Remembers a final answer with the human message it answers (those not remembered yet).
    async fn remember(
        &self,
        ctx: &TaskContext,
        memory: &dyn ChatMemory,
        session: &str,
        remembered: &[Value],
        answer: &Value,
    ) -> Result<(), NodeError> {
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
        memory.append(session, &new).await.map_err(memory_error)
    }

    fn failure(&self, f: Failure) -> NodeError {
        match f {
            Failure::Model(e) => node_error(&self.model.name(), e),
            Failure::Node(e) => e,
        }
    }

    /// Answers `req`; after a context overflow, compacts the conversation and answers the
    /// smaller request once more (`remembered`: the memory's messages, sent first); after a
    /// tool call cut off by the output limit, asks once more with a note, and when that answer
    /// is cut too, answers with text saying so (`truncation`); after an answer that ignored a
    /// named tool choice, asks once more with that tool alone (`named_choice`).
    async fn answer(
        &self,
        ctx: &TaskContext,
        mut req: ModelRequest,
        remembered: &[Value],
        msg_id: &str,
    ) -> Result<(Answer, Option<overflow::Compacted>), NodeError> {
        let cause = match self.attempt(ctx, &req, msg_id).await {
            Ok(answer) => {
                let hinted = self.model.hints_named_tool_choice();
                let Some(retry) = named_choice::retry_request(&req, &answer, hinted) else {
                    return Ok((answer, None));
                };
                tracing::warn!(
                    target: "agentgraph::recover",
                    node = ctx.node(),
                    "named tool choice not followed: calling the model again with that tool alone"
                );
                ctx.emit_custom(named_choice::event(ctx.node(), &req, &answer))
                    .await;
                return match self.attempt(ctx, &retry, msg_id).await {
                    Ok(mut again) => {
                        named_choice::add_usage(&mut again, &answer);
                        Ok((again, None))
                    }
                    Err(other) => Err(self.failure(other)),
                };
            }
            Err(Failure::Model(e @ ModelError::ContextOverflow { .. })) => e,
            Err(Failure::Model(e @ ModelError::OutputTruncated { .. }))
                if !self.tools.is_empty() =>
            {
                let closed = self
                    .close_cut_calls
                    .then(|| truncation::closed_call(&e, &req.tools, &self.model.name(), msg_id))
                    .flatten();
                if let Some(answer) = closed {
                    tracing::warn!(
                        target: "agentgraph::recover",
                        node = ctx.node(),
                        "tool call cut off by the output limit: made as far as it was complete ({e})"
                    );
                    return Ok((Answer::Message(answer), None));
                }
                tracing::warn!(
                    target: "agentgraph::recover",
                    node = ctx.node(),
                    "tool call cut off by the output limit: calling the model again ({e})"
                );
                ctx.emit_custom(truncation::event(ctx.node(), &e)).await;
                let retry = truncation::retry_request(&req, &e);
                return match self.attempt(ctx, &retry, msg_id).await {
                    Ok(answer) => Ok((answer, None)),
                    // Cut again: the turn goes on with an answer that says so (the graph's
                    // routing decides what comes next) instead of failing the run.
                    Err(Failure::Model(again @ ModelError::OutputTruncated { .. })) => {
                        tracing::warn!(
                            target: "agentgraph::recover",
                            node = ctx.node(),
                            "tool call cut off by the output limit again: answering without it                              ({again})"
                        );
                        ctx.emit_custom(truncation::gave_up_event(ctx.node(), &again))
                            .await;
                        Ok((
                            Answer::Message(truncation::gave_up(&again, &self.model.name())),
                            None,
                        ))
                    }
                    Err(other) => Err(self.failure(other)),
                };
            }
            Err(other) => return Err(self.failure(other)),
        };
        let Some(policy) = &self.on_overflow else {
            return Err(node_error(&self.model.name(), cause));
        };
        let compacted = overflow::compact(self, policy, ctx, &cause).await?;
        tracing::warn!(
            target: "agentgraph::recover",
            node = ctx.node(),
            summarized = compacted.compaction.remove.len(),
            "context overflow: conversation compacted, calling the model again ({cause})"
        );
        ctx.emit_custom(compacted.event(ctx.node(), &cause)).await;
        req.messages = remembered
            .iter()
            .cloned()
            .chain(std::iter::once(
                compacted.compaction.summary_message.clone(),
            ))
            .chain(compacted.compaction.kept.iter().cloned())
            .collect();
        match self.attempt(ctx, &req, msg_id).await {
            Ok(answer) => Ok((answer, Some(compacted))),
            Err(Failure::Model(e @ ModelError::ContextOverflow { .. })) => {
                Err(overflow::still_too_large(self, &e, &req))
            }
            Err(other) => Err(self.failure(other)),
        }
    }
}

/// Adds `n` recovered tool calls to a usage record (total, node and run alike).
fn add_recoveries(record: &mut Value, n: usize) {
    let mut add = |u: &mut Value| {
        if let Some(o) = u.as_object_mut() {
            o.insert("recoveries".into(), json!(n));
        }
    };
    add(&mut record["total"]);
    for part in ["nodes", "runs"] {
        if let Some(map) = record[part].as_object_mut() {
            map.values_mut().for_each(&mut add);
        }
    }
}

/// What one model call gave.
enum Answer {
    /// A message (text, tool calls).
    Message(ModelResponse),
    /// A structured value.
    Structured { value: Value, usage: Usage },
}

/// Why a model call gave nothing.
enum Failure {
    /// The model failed.
    Model(ModelError),
    /// The answer was unusable.
    Node(NodeError),
}

#[async_trait]
impl Node for LlmNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        if self.listed.is_empty() {
            return self.run_with_tools(ctx).await;
        }
        let listed = self.listed.for_node(ctx.node()).await?;
        let mut node = self.clone();
        node.tools.extend(listed.iter().map(|t| t.spec()));
        node.listed = ListedTools::default();
        node.run_with_tools(ctx).await
    }
}

impl LlmNode {
    /// One call, with every tool known.
    async fn run_with_tools(&self, ctx: TaskContext) -> Result<Update, NodeError> {
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
        let mut req = self.request(ctx.state(), ctx.payload())?;
        // A memory on the graph's store is opened per task (its namespace comes from the
        // state); its namespace names the conversation, so there is no session.
        let (memory, session) = match &self.store_memory {
            Some(spec) => (Some(spec.open(&ctx)?), String::new()),
            None => (self.memory.clone(), Self::session(&ctx)),
        };
        let mut remembered = Vec::new();
        if let Some(memory) = &memory {
            remembered = memory.load(&session).await.map_err(memory_error)?;
            let mut messages = remembered.clone();
            messages.append(&mut req.messages);
            req.messages = messages;
        }
        let msg_id = format!(
            "ai-{}",
            stable_id(&[&ctx.ns().join("|"), ctx.task_id(), "llm"])
        );
        let (answer, compacted) = self.answer(&ctx, req, &remembered, &msg_id).await?;
        let mut update = Update::new();
        let mut usage = Usage::default();
        let mut calls = 1;
        let mut recoveries = 0;
        let mut messages_write: Vec<Value> = Vec::new();
        if let Some(c) = &compacted {
            usage.add(&c.usage);
            calls += c.calls;
            if let Value::Array(items) = c.compaction.messages_write() {
                messages_write.extend(items);
            }
            if let Some(ch) = self
                .on_overflow
                .as_ref()
                .and_then(|p| p.summary_channel.as_ref())
            {
                update = update.set(ch.clone(), Value::String(c.compaction.summary.clone()));
            }
        }
        match answer {
            Answer::Structured { value, usage: u } => {
                if let Some((_, channel)) = &self.structured {
                    update = update.set(channel.clone(), value);
                }
                usage.add(&u);
            }
            Answer::Message(mut response) => {
                let recovered =
                    recovery::recover_calls(&mut response, &self.tools, &self.tool_choice, &msg_id);
                recoveries = recovered.repairs.len();
                for (r, call_id) in &recovered.repairs {
                    tracing::info!(
                        target: "agentgraph::recover",
                        node = ctx.node(),
                        kind = r.kind(),
                        tool = r.tool(),
                        call_id = call_id.as_str(),
                        "recovered tool call: {r}"
                    );
                    ctx.emit_custom(r.event(ctx.node(), call_id)).await;
                }
                if response.truncated() && !response.tool_calls.is_empty() {
                    let stop = response.stop_reason.clone();
                    let event =
                        truncation::kept_event(ctx.node(), response.tool_calls.len(), &stop);
                    ctx.emit_custom(event).await;
                }
                let answer = recovery::mark(response.to_message(msg_id.clone()), &recovered);
                if let (Some(memory), true) = (&memory, response.tool_calls.is_empty()) {
                    self.remember(&ctx, memory.as_ref(), &session, &remembered, &answer)
                        .await?;
                }
                messages_write.push(answer);
                usage.add(&response.usage);
            }
        }
        if !messages_write.is_empty() {
            let write = if compacted.is_some() {
                Value::Array(messages_write)
            } else {
                messages_write.remove(0)
            };
            update = update.set(self.messages_channel.clone(), write);
        }
        if let Some(channel) = &self.usage_channel {
            let mut record = usage_record(&ctx, &usage, calls, self.pricing.as_ref());
            if recoveries > 0 {
                add_recoveries(&mut record, recoveries);
            }
            update = update.set(channel.clone(), record);
        }
        Ok(update)
    }
}
