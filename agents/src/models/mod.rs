//! Chat models: the provider-neutral request/response types and the [`ChatModel`] trait that
//! the `llm` node calls. Providers (Anthropic Messages, OpenAI Chat Completions, the scripted
//! model for tests and offline demos) implement it.
//!
//! Messages are the runtime's JSON messages (`{"type": "human"|"ai"|"tool"|"system", "id",
//! "content", "tool_calls": [{"id", "name", "args"}], "tool_call_id"}`); providers translate them
//! to and from their wire formats.

pub mod anthropic;
pub mod budget;
pub mod cut_json;
pub mod http;
mod metered;
pub use metered::MeteredModel;
pub mod openai;
mod pricing;
pub use pricing::Pricing;
pub mod scripted;
pub mod structured;
mod traced;
pub use traced::{chat_span, record_error, record_usage, TracedModel};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does (shown to the model).
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// A part of the system prompt. Static parts are marked cacheable (Anthropic `cache_control`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemPart {
    /// The text.
    pub text: String,
    /// Whether providers may cache it.
    pub cacheable: bool,
}

/// One call to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// System prompt parts, in order.
    pub system: Vec<SystemPart>,
    /// The conversation (runtime JSON messages).
    pub messages: Vec<Value>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Whether one answer may hold several tool calls (`None`: the provider's default).
    /// `Some(false)` asks for one call per answer: OpenAI's `parallel_tool_calls`, Anthropic's
    /// `disable_parallel_tool_use`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Output limit.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// A JSON schema the answer must follow (structured output).
    pub response_schema: Option<Value>,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (tool results refer to it).
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

/// Token usage of a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens (not counting cache reads).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// Adds another call's usage.
    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.cache_creation_tokens += o.cache_creation_tokens;
    }
}

/// A model's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The text (empty when the model only called tools).
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped (`end_turn`, `tool_use`, `max_tokens`, `stop`, …).
    pub stop_reason: String,
    /// Tokens used.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
}

impl ModelResponse {
    /// The answer as a runtime `ai` message with the given id.
    pub fn to_message(&self, id: impl Into<String>) -> Value {
        let mut m = json!({"type": "ai", "id": id.into(), "content": self.text});
        if !self.tool_calls.is_empty() {
            m["tool_calls"] = serde_json::to_value(&self.tool_calls).unwrap_or(Value::Null);
        }
        // An answer cut by the output limit says so, so readers (and memory) can tell.
        if self.truncated() {
            m["stop_reason"] = Value::String(self.stop_reason.clone());
        }
        m
    }

    /// Whether the answer was cut by the output limit (`max_tokens` on Anthropic, `length` on
    /// OpenAI-compatible servers).
    pub fn truncated(&self) -> bool {
        matches!(self.stop_reason.as_str(), "max_tokens" | "length")
    }
}

/// Pieces of an answer as they stream in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    /// More text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More of a tool call (arguments arrive as JSON text in pieces).
    ToolCallDelta {
        /// Position of the call in the answer.
        index: usize,
        /// The call id, on its first piece.
        id: Option<String>,
        /// The tool name, on its first piece.
        name: Option<String>,
        /// A piece of the arguments' JSON text.
        args_delta: String,
    },
}

/// Who is calling and how to report progress.
#[derive(Clone, Default)]
pub struct CallContext {
    /// The calling node (the scripted model matches on it).
    pub node: String,
    /// The calling node's subgraph path.
    pub ns: Vec<String>,
    /// Receives streamed pieces as they arrive.
    pub on_event: Option<Arc<dyn Fn(ModelEvent) + Send + Sync>>,
    /// Aborts the call (and its HTTP request).
    pub cancel: CancellationToken,
    /// The thread the call belongs to (the scripted model keeps one cursor per thread).
    pub thread: String,
}

impl CallContext {
    /// A context for a call made by `task`: its node, namespace, thread and a child of its
    /// cancellation token; no streaming.
    pub fn for_task(task: &agentgraph_runtime::TaskContext) -> Self {
        CallContext {
            node: task.node().to_string(),
            ns: task.ns().to_vec(),
            on_event: None,
            cancel: task.cancellation().child_token(),
            thread: task.thread_id().to_string(),
        }
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// 401/403: the key is wrong or missing.
    #[error("invalid credentials for {provider}: {message}")]
    InvalidCredentials {
        /// The provider.
        provider: String,
        /// What it said.
        message: String,
    },
    /// 429: slow down (retry after the given time if known).
    #[error("rate limited by {provider}{}", .retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    RateLimited {
        /// The provider.
        provider: String,
        /// From the `retry-after` header.
        retry_after: Option<Duration>,
    },
    /// 5xx or an overloaded service.
    #[error("{provider} server error {status}: {message}")]
    Server {
        /// The provider.
        provider: String,
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        message: String,
    },
    /// Other 4xx: the request itself is wrong.
    #[error("{provider} rejected the request ({status}): {message}")]
    BadRequest {
        /// The provider.
        provider: String,
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        message: String,
    },
    /// Connection or timeout.
    #[error("network error talking to {provider}: {message}")]
    Network {
        /// The provider.
        provider: String,
        /// What happened.
        message: String,
    },
    /// The request is larger than the model's context window (llama.cpp server
    /// `exceed_context_size_error`, OpenAI `context_length_exceeded`, Anthropic "prompt is too
    /// long"). Not retryable as it is: the conversation has to shrink.
    #[error(
        "the request is larger than the {provider} model's context{}: {message}",
        context_sizes(*.prompt_tokens, *.context_tokens)
    )]
    ContextOverflow {
        /// The provider.
        provider: String,
        /// What it said.
        message: String,
        /// The request's size in tokens, when the server said.
        prompt_tokens: Option<u64>,
        /// The context size in tokens, when the server said.
        context_tokens: Option<u64>,
    },
    /// The answer could not be understood (or did not follow the response schema).
    #[error("invalid response from {provider}: {message}")]
    InvalidResponse {
        /// The provider.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// The answer stream broke (a transient error: network, timeout, overload) after some of
    /// its pieces had already been forwarded to the caller, so the provider did not retry it in
    /// place. Retryable: a node retry policy may run the whole call again.
    #[error(
        "the {provider} stream broke after {chunks} chunk(s) had been streamed to the caller, so \
         it was not retried in place: {cause}"
    )]
    StreamInterrupted {
        /// The provider.
        provider: String,
        /// How many pieces had been forwarded to `on_event`.
        chunks: usize,
        /// The error that broke the stream.
        #[source]
        cause: Box<ModelError>,
    },
    /// The answer was cut off by the output limit in the middle of a tool call, so the call's
    /// arguments are incomplete. Not retryable: the limit has to be raised.
    #[error(
        "the model hit max_tokens ({}) in the middle of tool call `{tool}`; raise max_tokens in \
         the model block",
        .max_tokens.map(|n| n.to_string()).unwrap_or_else(|| "the provider's default".into())
    )]
    OutputTruncated {
        /// The provider.
        provider: String,
        /// The tool whose call was cut off.
        tool: String,
        /// The output limit sent with the request (`None`: the provider's default).
        max_tokens: Option<u32>,
        /// The cut call's arguments as far as they were streamed (a structured answer may
        /// still be complete enough: [`structured`]).
        partial: String,
        /// The usage the provider reported for the cut answer.
        usage: Usage,
    },
    /// The scripted model has no (matching) response left.
    #[error("scripted model: {0}")]
    Script(String),
    /// Missing configuration (no key, unknown model).
    #[error("model configuration: {0}")]
    Config(String),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
}

fn context_sizes(prompt: Option<u64>, context: Option<u64>) -> String {
    match (prompt, context) {
        (Some(p), Some(c)) => format!(" ({p} tokens for a context of {c})"),
        (None, Some(c)) => format!(" ({c} tokens)"),
        (Some(p), None) => format!(" ({p} tokens sent)"),
        (None, None) => String::new(),
    }
}

impl ModelError {
    /// Whether retrying may help (rate limits, server errors, network trouble, a stream that
    /// broke after part of the answer was streamed).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Server { .. }
                | ModelError::Network { .. }
                | ModelError::StreamInterrupted { .. }
        )
    }
}

/// A chat model.
#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// `provider/model`, for logs and usage records.
    fn name(&self) -> String;

    /// Whether a named tool choice ([`ToolChoice::Tool`]) is only asked for, not enforced: the
    /// model may answer with another tool (an OpenAI-compatible server in the `hint` mode, see
    /// [`openai::NamedToolChoice`]). The `llm` node then checks the answer and asks again with
    /// that tool alone when it was not followed.
    fn hints_named_tool_choice(&self) -> bool {
        false
    }

    /// Answers a request, streaming pieces through `ctx.on_event` as they arrive.
    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError>;
}
