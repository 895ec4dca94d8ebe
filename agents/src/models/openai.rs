//! OpenAI Chat Completions provider, usable with any OpenAI-compatible server through the base
//! URL (Ollama, vLLM, llama.cpp server, …): tools, streamed answers with tool-call argument
//! fragments assembled by index, finish reasons, and usage (`stream_options.include_usage`).

use super::http::{self, HttpClient, HttpOptions};
use super::{
    CallContext, ModelError, ModelEvent, ModelRequest, ModelResponse, ToolCall, ToolChoice,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Value};

const PROVIDER: &str = "openai";
/// The endpoint used when `OPENAI_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How a tool choice naming one tool is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NamedToolChoice {
    /// `{"type": "function", "function": {"name": …}}` with every tool: OpenAI's API, vLLM.
    #[default]
    Native,
    /// `"required"` with only the named tool in `tools`. llama.cpp's server accepts only string
    /// tool choices (an object is dropped with a warning and the model chooses freely), Ollama
    /// ignores the field; restricting the tools is what every server honours. The tool list
    /// differs from the other calls', so a prompt cache is reused only up to the tools.
    OnlyTool,
    /// `"required"` with every tool, and the name asked for in a last user message ("Call the
    /// `x` tool now."). The tool list and the conversation stay byte-identical from call to
    /// call, so a server's prompt cache is reused up to the new messages: on a CPU-bound local
    /// server a forced call under `OnlyTool` re-read the whole tool list and conversation
    /// twice (the forced call, then the next free one), about two minutes per forced call for
    /// a 1.5B model on 2 cores. The model may still pick another tool; it must pick one.
    Hint,
}

/// A model behind the OpenAI Chat Completions API or a compatible server.
#[derive(Clone)]
pub struct OpenAiModel {
    model: String,
    api_key: Option<String>,
    base_url: String,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    named_choice: NamedToolChoice,
    http: HttpClient,
}

super::http::http_model_setters!(OpenAiModel);

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("has_api_key", &self.api_key.is_some())
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A model with an optional key (`None` sends no `Authorization` header, as local servers
    /// expect), the default endpoint and default HTTP options.
    pub fn new(model: impl Into<String>, api_key: Option<String>) -> Result<Self, ModelError> {
        Ok(OpenAiModel {
            model: model.into(),
            api_key,
            base_url: DEFAULT_BASE_URL.to_string(),
            max_tokens: None,
            temperature: None,
            named_choice: NamedToolChoice::Native,
            http: HttpClient::new(HttpOptions::default())?,
        })
    }

    /// A model configured like the official SDKs: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`) and `OPENAI_API_KEY`, which is required only for the
    /// official endpoint (a local server such as Ollama needs none).
    ///
    /// `OPENAI_NAMED_TOOL_CHOICE` (`native` or `only-tool`) says how a named tool choice is
    /// sent; unset, `native` for the official endpoint and `only-tool` for any other server
    /// ([`NamedToolChoice`]).
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::from_lookup(model, http::env_var)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(
        model: impl Into<String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ModelError> {
        let base = lookup("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let key = lookup("OPENAI_API_KEY");
        if key.is_none() && base.contains("api.openai.com") {
            return Err(ModelError::Config(
                "OPENAI_API_KEY is not set: export it, or point OPENAI_BASE_URL at a local \
                 OpenAI-compatible server"
                    .into(),
            ));
        }
        let official = base.contains("api.openai.com");
        let named = match lookup("OPENAI_NAMED_TOOL_CHOICE").as_deref().map(str::trim) {
            None | Some("") if official => NamedToolChoice::Native,
            None | Some("") => NamedToolChoice::OnlyTool,
            Some("native") => NamedToolChoice::Native,
            Some("only-tool") => NamedToolChoice::OnlyTool,
            Some("hint") => NamedToolChoice::Hint,
            Some(other) => {
                return Err(ModelError::Config(format!(
                    "OPENAI_NAMED_TOOL_CHOICE is `native`, `only-tool` or `hint`, got `{other}`"
                )))
            }
        };
        Ok(Self::new(model, key)?
            .with_base_url(base)
            .with_named_tool_choice(named))
    }

    /// Sets how a tool choice naming one tool is sent.
    pub fn with_named_tool_choice(mut self, how: NamedToolChoice) -> Self {
        self.named_choice = how;
        self
    }

    /// Sets the default output limit (a request's own limit wins).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The request body for `req` (streaming, usage included).
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut system: Vec<String> = req.system.iter().map(|p| p.text.clone()).collect();
        let mut messages: Vec<Value> = Vec::new();
        for m in &req.messages {
            let text = http::message_text(m);
            match http::message_role(m) {
                Some("system") => system.push(text),
                Some("user") => messages.push(json!({"role": "user", "content": text})),
                Some("assistant") => {
                    let calls: Vec<Value> = http::message_tool_calls(m)
                        .into_iter()
                        .map(|(id, name, args)| {
                            json!({"id": id, "type": "function",
                                   "function": {"name": name, "arguments": args.to_string()}})
                        })
                        .collect();
                    let mut msg = json!({"role": "assistant", "content": text});
                    if !calls.is_empty() {
                        if text.is_empty() {
                            msg["content"] = Value::Null;
                        }
                        msg["tool_calls"] = Value::Array(calls);
                    }
                    messages.push(msg);
                }
                Some("tool") => {
                    let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                    messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
                }
                _ => {}
            }
        }
        system.retain(|s| !s.is_empty());
        if !system.is_empty() {
            messages.insert(0, json!({"role": "system", "content": system.join("\n\n")}));
        }
        let hinted = match (&req.tool_choice, self.named_choice) {
            (ToolChoice::Tool(name), NamedToolChoice::Hint)
                if req.tools.iter().any(|t| &t.name == name) =>
            {
                Some(name.as_str())
            }
            _ => None,
        };
        if let Some(name) = hinted {
            messages
                .push(json!({"role": "user", "content": format!("Call the `{name}` tool now.")}));
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(n) = req.max_tokens.or(self.max_tokens) {
            body["max_tokens"] = json!(n);
        }
        if let Some(t) = req.temperature.or(self.temperature) {
            body["temperature"] = json!(t);
        }
        if !req.tools.is_empty() {
            // A named tool sent as `required` with that tool alone (when it is offered).
            let only = match (&req.tool_choice, self.named_choice) {
                (ToolChoice::Tool(name), NamedToolChoice::OnlyTool)
                    if req.tools.iter().any(|t| &t.name == name) =>
                {
                    Some(name.as_str())
                }
                _ => None,
            };
            body["tools"] = req
                .tools
                .iter()
                .filter(|t| only.is_none_or(|name| t.name == name))
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.input_schema}})
                })
                .collect();
            body["tool_choice"] = match &req.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(_) if only.is_some() || hinted.is_some() => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            if let Some(parallel) = req.parallel_tool_calls {
                body["parallel_tool_calls"] = json!(parallel);
            }
        }
        if let Some(schema) = &req.response_schema {
            body["response_format"] = json!({"type": "json_schema",
                "json_schema": {"name": "response", "schema": schema}});
        }
        body
    }
}

/// Assembles a streamed answer from its chunks.
#[derive(Default)]
pub struct StreamState {
    response: ModelResponse,
    /// Per streamed tool-call index: its position in the answer and its argument text so far.
    calls: Vec<(u64, usize, String)>,
    finished: bool,
    /// The output limit sent with the request (for the error when it cuts a tool call).
    max_tokens: Option<u32>,
    /// The request asked for one tool call per answer (`parallel_tool_calls: false`).
    one_call: bool,
    /// A second call began although one was asked for: the answer ends at the first.
    stopped_early: bool,
}

impl StreamState {
    /// A state for a request sent with this output limit (`None`: the server's default).
    pub fn new(max_tokens: Option<u32>) -> Self {
        StreamState {
            max_tokens,
            ..StreamState::default()
        }
    }

    /// Enforces one tool call per answer on the client: some servers (llama-server with a
    /// renamed tool-call template, others) accept `parallel_tool_calls: false` and still send
    /// several calls. The answer then ends where the second call begins ([`Self::stopped_early`])
    /// and the reader closes the stream, which stops the server's generation.
    pub fn one_call_per_answer(mut self, one_call: bool) -> Self {
        self.one_call = one_call;
        self
    }

    /// Whether the answer ended at its first tool call because a second one began; the rest
    /// of the stream is not read (its usage, sent last, is then unknown).
    pub fn stopped_early(&self) -> bool {
        self.stopped_early
    }

    /// Takes one chunk, forwarding text and tool-call pieces to `emit`.
    pub fn handle(&mut self, chunk: &Value, emit: &dyn Fn(ModelEvent)) -> Result<(), ModelError> {
        if let Some(err) = chunk.get("error") {
            let body = json!({ "error": err }).to_string();
            return Err(http::status_error(
                PROVIDER,
                stream_error_status(err),
                None,
                &body,
            ));
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            if self.response.model.is_empty() {
                self.response.model = model.to_string();
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let field = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = field("/prompt_tokens_details/cached_tokens");
            self.response.usage.input_tokens = field("/prompt_tokens").saturating_sub(cached);
            self.response.usage.output_tokens = field("/completion_tokens");
            self.response.usage.cache_read_tokens = cached;
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.response.text.push_str(text);
                emit(ModelEvent::TextDelta {
                    text: text.to_string(),
                });
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (i, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                let new_call = !self.calls.iter().any(|c| c.0 == index);
                if self.one_call && new_call && !self.calls.is_empty() {
                    self.response.stop_reason = "tool_calls".into();
                    self.finished = true;
                    self.stopped_early = true;
                    return Ok(());
                }
                self.tool_call_delta(i, c, emit);
            }
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.response.stop_reason = r.to_string();
            self.finished = true;
        }
        Ok(())
    }

    fn tool_call_delta(&mut self, i: usize, c: &Value, emit: &dyn Fn(ModelEvent)) {
        let index = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
        let id = c.get("id").and_then(Value::as_str).map(str::to_string);
        let name = c.pointer("/function/name").and_then(Value::as_str);
        let name = name.map(str::to_string);
        // Some servers send the arguments as an object in one piece rather than as text.
        let args = match c.pointer("/function/arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let pos = match self.calls.iter().position(|c| c.0 == index) {
            Some(p) => p,
            None => {
                self.calls
                    .push((index, self.response.tool_calls.len(), String::new()));
                self.response.tool_calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    args: Value::Null,
                });
                self.calls.len() - 1
            }
        };
        let (_, call_pos, text) = &mut self.calls[pos];
        text.push_str(&args);
        let call_pos = *call_pos;
        if let Some(call) = self.response.tool_calls.get_mut(call_pos) {
            // Ids come whole; some servers repeat them (and the name) on every piece.
            if let Some(id) = id.as_ref().filter(|_| call.id.is_empty()) {
                call.id = id.clone();
            }
            if let Some(name) = name.as_ref().filter(|n| **n != call.name) {
                call.name.push_str(name);
            }
        }
        emit(ModelEvent::ToolCallDelta {
            index: call_pos,
            id,
            name,
            args_delta: args,
        });
    }

    /// The assembled answer, tool arguments parsed; fails if the stream was cut short, and
    /// with [`ModelError::OutputTruncated`] when the output limit (finish reason `length`) cut
    /// its only tool call (complete calls before a cut one are kept: [`http::settle_cut_answer`]). A text answer cut by the limit is returned (stop reason `length`).
    pub fn finish(mut self, saw_done: bool) -> Result<ModelResponse, ModelError> {
        if !self.finished && !saw_done {
            return Err(ModelError::Network {
                provider: PROVIDER.into(),
                message: "the stream ended before a finish_reason or [DONE]".into(),
            });
        }
        if self.response.stop_reason == "length" {
            http::settle_cut_answer(
                PROVIDER,
                &mut self.calls,
                &mut self.response,
                self.max_tokens,
            )?;
        }
        for (_, pos, text) in &self.calls {
            if let Some(call) = self.response.tool_calls.get_mut(*pos) {
                call.args = http::parse_args(PROVIDER, &call.name, text)?;
            }
        }
        Ok(self.response)
    }
}

/// The HTTP status an in-stream error stands for: a numeric `code`, else its `type`
/// (`invalid_request_error` is a bad request, which is not retried), else a server error.
fn stream_error_status(err: &Value) -> u16 {
    if let Some(code) = err.get("code").and_then(Value::as_u64) {
        return u16::try_from(code).unwrap_or(500);
    }
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => 429,
        _ => 500,
    }
}

#[async_trait]
impl http::StreamingApi for OpenAiModel {
    const PROVIDER: &'static str = PROVIDER;

    fn http(&self) -> &HttpClient {
        &self.http
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn request_body(&self, req: &ModelRequest) -> Value {
        OpenAiModel::request_body(self, req)
    }

    fn hints_named_tool_choice(&self) -> bool {
        matches!(self.named_choice, NamedToolChoice::Hint)
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
        let mut request = self
            .http
            .client()
            .post(url)
            .header("accept", "text/event-stream")
            .json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let resp = http::send_once(PROVIDER, request).await?;
        let one_call = body.get("parallel_tool_calls") == Some(&Value::Bool(false));
        let mut state = StreamState::new(max_tokens).one_call_per_answer(one_call);
        let mut saw_done = false;
        let mut events = Box::pin(http::sse_events(PROVIDER, resp));
        while let Some(ev) = events.next().await {
            // Buffered events are handled without yielding, so check between them too.
            if ctx.cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let ev = ev?;
            if ev.data.trim() == "[DONE]" {
                saw_done = true;
                break;
            }
            let chunk = http::parse_json(PROVIDER, &ev.data)?;
            state.handle(&chunk, emit)?;
            if state.stopped_early() {
                // Dropping the stream closes the connection: the server stops generating.
                break;
            }
        }
        state.finish(saw_done)
    }
}
