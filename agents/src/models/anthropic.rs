//! Anthropic Messages API provider: system blocks with `cache_control` on the static parts,
//! tools, `tool_use`/`tool_result` blocks, and streamed answers (server-sent events with text and
//! `input_json_delta` pieces, stop reasons, usage with cache reads and writes).

use super::http::{self, HttpClient, HttpOptions};
use super::{
    CallContext, ModelError, ModelEvent, ModelRequest, ModelResponse, SystemPart, ToolCall,
    ToolChoice, Usage,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Map, Value};

const PROVIDER: &str = "anthropic";
/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// The endpoint used when `ANTHROPIC_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The output limit used when neither the model nor the request sets one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Anthropic accepts at most this many `cache_control` breakpoints per request.
const MAX_CACHE_BREAKPOINTS: usize = 4;

/// A Claude model behind the Anthropic Messages API (or a compatible endpoint).
#[derive(Clone)]
pub struct AnthropicModel {
    model: String,
    api_key: String,
    base_url: String,
    max_tokens: u32,
    temperature: Option<f64>,
    http: HttpClient,
}

super::http::http_model_setters!(AnthropicModel);

impl std::fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// A model with an explicit key, the default endpoint and default HTTP options.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Result<Self, ModelError> {
        Ok(AnthropicModel {
            model: model.into(),
            api_key: api_key.into(),
            base_url: DEFAULT_BASE_URL.to_string(),
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            http: HttpClient::new(HttpOptions::default())?,
        })
    }

    /// A model configured like the official SDKs: `ANTHROPIC_API_KEY` (required) and
    /// `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`).
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::from_lookup(model, http::env_var)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(
        model: impl Into<String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ModelError> {
        let key = lookup("ANTHROPIC_API_KEY").ok_or_else(|| {
            ModelError::Config(
                "ANTHROPIC_API_KEY is not set: export it (or use AnthropicModel::new with a key)"
                    .into(),
            )
        })?;
        let mut m = Self::new(model, key)?;
        if let Some(url) = lookup("ANTHROPIC_BASE_URL") {
            m = m.with_base_url(url);
        }
        Ok(m)
    }

    /// Sets the default output limit (a request's own limit wins).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The request body for `req` (streaming).
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut system: Vec<SystemPart> = req.system.clone();
        let mut messages: Vec<Value> = Vec::new();
        for m in &req.messages {
            match http::message_role(m) {
                Some("system") => system.push(SystemPart {
                    text: http::message_text(m),
                    cacheable: false,
                }),
                Some("user") => {
                    let text = http::message_text(m);
                    if !text.is_empty() {
                        push_blocks(&mut messages, "user", vec![text_block(text)]);
                    }
                }
                Some("assistant") => push_blocks(&mut messages, "assistant", assistant_blocks(m)),
                Some("tool") => push_blocks(&mut messages, "user", vec![tool_result_block(m)]),
                _ => {}
            }
        }
        let mut body = json!({
            "model": self.model,
            "max_tokens": req.max_tokens.unwrap_or(self.max_tokens),
            "messages": messages,
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = system_blocks(&system);
        }
        if let Some(t) = req.temperature.or(self.temperature) {
            body["temperature"] = json!(t);
        }
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect();
            body["tool_choice"] = match &req.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            // One call per answer; `none` forbids calls altogether and takes no such flag.
            if req.parallel_tool_calls == Some(false) && req.tool_choice != ToolChoice::None {
                body["tool_choice"]["disable_parallel_tool_use"] = json!(true);
            }
        }
        body
    }
}

/// System parts as text blocks; the last part of each run of cacheable parts gets a
/// `cache_control` breakpoint (which caches everything before it too), at most four.
fn system_blocks(parts: &[SystemPart]) -> Value {
    let mut breakpoints = 0;
    let blocks: Vec<Value> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.text.is_empty())
        .map(|(i, p)| {
            let mut b = text_block(p.text.clone());
            let run_ends = !matches!(parts.get(i + 1), Some(next) if next.cacheable);
            if p.cacheable && run_ends && breakpoints < MAX_CACHE_BREAKPOINTS {
                breakpoints += 1;
                b["cache_control"] = json!({"type": "ephemeral"});
            }
            b
        })
        .collect();
    Value::Array(blocks)
}

fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

fn assistant_blocks(m: &Value) -> Vec<Value> {
    let text = http::message_text(m);
    let mut blocks = Vec::new();
    if !text.is_empty() {
        blocks.push(text_block(text));
    }
    for (id, name, args) in http::message_tool_calls(m) {
        blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": args}));
    }
    blocks
}

fn tool_result_block(m: &Value) -> Value {
    let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
    let mut b = json!({"type": "tool_result", "tool_use_id": id, "content": http::message_text(m)});
    let failed = m.get("status").and_then(Value::as_str) == Some("error")
        || m.get("is_error").and_then(Value::as_bool) == Some(true);
    if failed {
        b["is_error"] = json!(true);
    }
    b
}

/// Appends blocks as a message of `role`, merged into the previous message when it has the same
/// role (the API wants alternating turns; consecutive tool results become one user message).
fn push_blocks(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut() {
        if last["role"] == role {
            if let Some(content) = last["content"].as_array_mut() {
                content.extend(blocks);
                return;
            }
        }
    }
    messages.push(json!({"role": role, "content": blocks}));
}

/// Assembles a streamed answer from its events.
#[derive(Default)]
pub struct StreamState {
    response: ModelResponse,
    /// Per content block index: the tool call position and its argument text so far.
    tool_blocks: Vec<(usize, usize, String)>,
    done: bool,
    /// The output limit sent with the request (for the error when it cuts a tool call).
    max_tokens: Option<u32>,
}

impl StreamState {
    /// A state for a request sent with this output limit.
    pub fn new(max_tokens: Option<u32>) -> Self {
        StreamState {
            max_tokens,
            ..StreamState::default()
        }
    }

    /// Takes one event's JSON data, forwarding text and tool-call pieces to `emit`.
    pub fn handle(&mut self, ev: &Value, emit: &dyn Fn(ModelEvent)) -> Result<(), ModelError> {
        let kind = ev.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                let msg = &ev["message"];
                if let Some(model) = msg.get("model").and_then(Value::as_str) {
                    self.response.model = model.to_string();
                }
                self.read_usage(&msg["usage"]);
            }
            "content_block_start" => {
                let block = &ev["content_block"];
                let index = block_index(ev)?;
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let pos = self.response.tool_calls.len();
                        let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                        self.response.tool_calls.push(ToolCall {
                            id: id.to_string(),
                            name: name.to_string(),
                            args: Value::Null,
                        });
                        self.tool_blocks.push((index, pos, String::new()));
                        emit(ModelEvent::ToolCallDelta {
                            index: pos,
                            id: Some(id.to_string()),
                            name: Some(name.to_string()),
                            args_delta: String::new(),
                        });
                    }
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.push_text(text, emit);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = block_index(ev)?;
                let delta = &ev["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.push_text(text, emit);
                    }
                    Some("input_json_delta") => {
                        let piece = delta.get("partial_json").and_then(Value::as_str);
                        let piece = piece.unwrap_or("");
                        let Some(tb) = self.tool_blocks.iter_mut().find(|t| t.0 == index) else {
                            return Err(invalid(format!(
                                "input_json_delta for block {index}, which is not a tool_use block"
                            )));
                        };
                        tb.2.push_str(piece);
                        emit(ModelEvent::ToolCallDelta {
                            index: tb.1,
                            id: None,
                            name: None,
                            args_delta: piece.to_string(),
                        });
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = ev.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.response.stop_reason = r.to_string();
                }
                self.read_usage(&ev["usage"]);
            }
            "message_stop" => self.done = true,
            "error" => return Err(stream_error(&ev["error"])),
            // content_block_stop, ping, and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn push_text(&mut self, text: &str, emit: &dyn Fn(ModelEvent)) {
        if !text.is_empty() {
            self.response.text.push_str(text);
            emit(ModelEvent::TextDelta {
                text: text.to_string(),
            });
        }
    }

    /// Usage fields are cumulative: the latest value of each one present wins.
    fn read_usage(&mut self, u: &Value) {
        let field = |k: &str| u.get(k).and_then(Value::as_u64);
        let usage: &mut Usage = &mut self.response.usage;
        if let Some(v) = field("input_tokens") {
            usage.input_tokens = v;
        }
        if let Some(v) = field("output_tokens") {
            usage.output_tokens = v;
        }
        if let Some(v) = field("cache_read_input_tokens") {
            usage.cache_read_tokens = v;
        }
        if let Some(v) = field("cache_creation_input_tokens") {
            usage.cache_creation_tokens = v;
        }
    }

    /// The assembled answer, tool arguments parsed; fails if `message_stop` never came, and
    /// with [`ModelError::OutputTruncated`] when `max_tokens` cut a tool call. A text answer cut
    /// by `max_tokens` is returned (stop reason `max_tokens`).
    pub fn finish(mut self) -> Result<ModelResponse, ModelError> {
        if !self.done {
            return Err(ModelError::Network {
                provider: PROVIDER.into(),
                message: "the stream ended before message_stop".into(),
            });
        }
        if self.response.stop_reason == "max_tokens" {
            http::settle_cut_answer(
                PROVIDER,
                &mut self.tool_blocks,
                &mut self.response,
                self.max_tokens,
            )?;
        }
        for (_, pos, text) in &self.tool_blocks {
            if let Some(call) = self.response.tool_calls.get_mut(*pos) {
                call.args = http::parse_args(PROVIDER, &call.name, text)?;
            }
        }
        Ok(self.response)
    }
}

fn block_index(ev: &Value) -> Result<usize, ModelError> {
    ev.get("index")
        .and_then(Value::as_u64)
        .map(|i| i as usize)
        .ok_or_else(|| invalid(format!("event without a block index: {ev}")))
}

fn invalid(message: String) -> ModelError {
    ModelError::InvalidResponse {
        provider: PROVIDER.into(),
        message,
    }
}

/// An `error` event (e.g. `overloaded_error` mid-stream) as a typed error.
fn stream_error(err: &Value) -> ModelError {
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    let status = match kind {
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "overloaded_error" => 529,
        _ => 400,
    };
    let mut body = Map::new();
    body.insert("error".into(), err.clone());
    http::status_error(PROVIDER, status, None, &Value::Object(body).to_string())
}

#[async_trait]
impl http::StreamingApi for AnthropicModel {
    const PROVIDER: &'static str = PROVIDER;

    fn http(&self) -> &HttpClient {
        &self.http
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn request_body(&self, req: &ModelRequest) -> Value {
        AnthropicModel::request_body(self, req)
    }

    /// One request and its streamed answer.
    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        max_tokens: Option<u32>,
        ctx: &CallContext,
        emit: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let request = self
            .http
            .client()
            .post(url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", API_VERSION)
            .header("accept", "text/event-stream")
            .json(body);
        let resp = http::send_once(PROVIDER, request).await?;
        let mut state = StreamState::new(max_tokens);
        let mut events = Box::pin(http::sse_events(PROVIDER, resp));
        while let Some(ev) = events.next().await {
            // Buffered events are handled without yielding, so check between them too.
            if ctx.cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let ev = ev?;
            let data = http::parse_json(PROVIDER, &ev.data)?;
            state.handle(&data, emit)?;
            if state.done {
                break;
            }
        }
        state.finish()
    }
}
