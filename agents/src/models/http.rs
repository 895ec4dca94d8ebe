//! HTTP plumbing shared by the providers: client construction with timeouts, mapping of HTTP
//! statuses to [`ModelError`], a retry loop for transient failures (exponential backoff with
//! jitter, `retry-after` honoured), cancellation, server-sent-event streams, and the helpers
//! that read the runtime's JSON messages.
//!
//! A retry covers the whole attempt: the request and the streamed answer. A transient failure
//! while the answer streams in (an in-stream overload or server error, a read timeout, a stream
//! cut short) is retried like a failed request as long as no piece of the answer has been
//! forwarded to the caller yet. Once pieces have been forwarded, the call is not retried in
//! place (the caller would see the text twice); it fails with
//! [`ModelError::StreamInterrupted`], which is retryable, so a node retry policy can run the
//! whole call again.

use super::{CallContext, ModelError, ModelEvent, ModelRequest, ModelResponse};
use agentgraph_runtime::{RetryOn, RetryPolicy};
use async_trait::async_trait;
use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest excerpt of an error body kept in an error message.
const MAX_ERROR_BODY: usize = 500;

/// Timeouts and retries of a provider's HTTP calls.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// Limit on establishing the connection.
    pub connect_timeout: Duration,
    /// Limit on waiting for the next bytes of an answer (not on the whole answer, which may
    /// stream for a long time).
    pub read_timeout: Duration,
    /// Retries of transient failures (rate limits, 5xx, network errors).
    pub retry: RetryPolicy,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
        }
    }
}

/// An HTTP client configured by [`HttpOptions`].
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    options: HttpOptions,
}

impl HttpClient {
    /// Builds a client (rustls, no proxy discovery beyond reqwest's defaults).
    pub fn new(options: HttpOptions) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpClient { client, options })
    }

    /// The options it was built with.
    pub fn options(&self) -> &HttpOptions {
        &self.options
    }

    /// The underlying reqwest client.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Runs `attempt` (one request and its streamed answer) until it succeeds, retrying
    /// transient failures as the retry policy says, with exponential backoff and jitter
    /// (`retry-after` honoured), while `forwarded` counts no piece forwarded to the caller.
    /// After pieces have been forwarded, a failure the policy would retry becomes
    /// [`ModelError::StreamInterrupted`] instead. Cancellation aborts the attempt and any wait.
    pub async fn call<T, Fut>(
        &self,
        provider: &str,
        cancel: &CancellationToken,
        forwarded: &Forwarded,
        mut attempt: impl FnMut() -> Fut,
    ) -> Result<T, ModelError>
    where
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let policy = &self.options.retry;
        let mut n = 1u32;
        loop {
            let err = match cancellable(cancel, attempt()).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let retryable = should_retry(policy, &err);
            let chunks = forwarded.count();
            if chunks > 0 {
                if !retryable {
                    return Err(err);
                }
                tracing::debug!(provider, attempt = n, chunks, error = %err,
                    "model stream broke after pieces were forwarded; not retrying in place");
                return Err(ModelError::StreamInterrupted {
                    provider: provider.to_string(),
                    chunks,
                    cause: Box::new(err),
                });
            }
            if n >= policy.max_attempts.max(1) || !retryable {
                return Err(err);
            }
            let wait = match &err {
                ModelError::RateLimited {
                    retry_after: Some(d),
                    ..
                } => (*d).min(policy.max_interval),
                _ => policy.backoff(n),
            };
            tracing::debug!(provider, attempt = n, ?wait, error = %err, "retrying model call");
            cancellable(cancel, async {
                tokio::time::sleep(wait).await;
                Ok(())
            })
            .await?;
            n += 1;
        }
    }
}

/// A provider whose answers stream over server-sent events: what differs between providers
/// (endpoint, body, one attempt's request and stream parsing). [`complete_streamed`] is the
/// rest of a `ChatModel::complete`, written once.
#[async_trait]
pub(crate) trait StreamingApi: Send + Sync {
    /// The provider's name in errors and logs.
    const PROVIDER: &'static str;
    /// The HTTP client with its timeouts and retry policy.
    fn http(&self) -> &HttpClient;
    /// The configured model id (used when the answer names none).
    fn model_id(&self) -> &str;
    /// The endpoint the request goes to.
    fn url(&self) -> String;
    /// The request body for `req`.
    fn request_body(&self, req: &ModelRequest) -> Value;
    /// One request and its streamed answer; pieces go to `emit`.
    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        max_tokens: Option<u32>,
        ctx: &CallContext,
        emit: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelResponse, ModelError>;
}

/// A whole completion on a [`StreamingApi`]: the body once, attempts retried by
/// [`HttpClient::call`] while nothing was forwarded, the model id filled in.
pub(crate) async fn complete_streamed<P: StreamingApi>(
    api: &P,
    req: &ModelRequest,
    ctx: &CallContext,
) -> Result<ModelResponse, ModelError> {
    let body = api.request_body(req);
    let max_tokens = body["max_tokens"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok());
    let url = api.url();
    let forwarded = Forwarded::default();
    let emit = emitter(ctx, &forwarded);
    let mut response = api
        .http()
        .call(P::PROVIDER, &ctx.cancel, &forwarded, || {
            api.attempt(&url, &body, max_tokens, ctx, &emit)
        })
        .await?;
    if response.model.is_empty() {
        response.model = api.model_id().to_string();
    }
    Ok(response)
}

/// Counts the pieces of an answer forwarded to the caller during one call (see
/// [`HttpClient::call`]).
#[derive(Debug, Default)]
pub struct Forwarded(AtomicUsize);

impl Forwarded {
    /// How many pieces have been forwarded.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one more piece.
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Forwards pieces to `ctx.on_event`, counting them in `forwarded`. Without `on_event` nothing
/// is forwarded, nor counted.
pub fn emitter<'a>(
    ctx: &'a CallContext,
    forwarded: &'a Forwarded,
) -> impl Fn(ModelEvent) + Send + Sync + 'a {
    move |e| {
        if let Some(f) = &ctx.on_event {
            forwarded.add();
            f(e)
        }
    }
}

/// Whether the policy retries this error. A cut-off answer ([`ModelError::OutputTruncated`]) is
/// never retried: the output limit has to be raised.
fn should_retry(policy: &RetryPolicy, err: &ModelError) -> bool {
    match &policy.retry_on {
        RetryOn::Transient => err.is_transient(),
        RetryOn::Any => !matches!(
            err,
            ModelError::Cancelled | ModelError::Config(_) | ModelError::OutputTruncated { .. }
        ),
        RetryOn::Codes(codes) => codes.iter().any(|c| c == error_code(err)),
    }
}

/// A short stable name for an error's kind (matched by [`RetryOn::Codes`]).
pub fn error_code(err: &ModelError) -> &'static str {
    match err {
        ModelError::InvalidCredentials { .. } => "invalid_credentials",
        ModelError::RateLimited { .. } => "rate_limited",
        ModelError::Server { .. } => "server",
        ModelError::BadRequest { .. } => "bad_request",
        ModelError::Network { .. } => "network",
        ModelError::InvalidResponse { .. } => "invalid_response",
        ModelError::StreamInterrupted { .. } => "stream_interrupted",
        ModelError::OutputTruncated { .. } => "output_truncated",
        ModelError::Script(_) => "script",
        ModelError::Config(_) => "config",
        ModelError::Cancelled => "cancelled",
    }
}

/// Runs `fut` unless `cancel` fires first; then `fut` is dropped (which aborts its HTTP
/// request) and the result is [`ModelError::Cancelled`].
pub async fn cancellable<T>(
    cancel: &CancellationToken,
    fut: impl Future<Output = Result<T, ModelError>>,
) -> Result<T, ModelError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::Cancelled),
        r = fut => r,
    }
}

/// Sends one request; a status other than success is mapped to an error (no retry).
pub async fn send_once(
    provider: &str,
    req: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ModelError> {
    let resp = req.send().await.map_err(|e| network_error(provider, &e))?;
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(error_from_response(provider, resp).await)
    }
}

/// A transport error as [`ModelError::Network`].
pub fn network_error(provider: &str, e: &reqwest::Error) -> ModelError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "transport error"
    };
    ModelError::Network {
        provider: provider.to_string(),
        message: format!("{what}: {e}"),
    }
}

/// Reads a failed response and maps it to an error.
pub async fn error_from_response(provider: &str, resp: reqwest::Response) -> ModelError {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = resp.text().await.unwrap_or_default();
    status_error(provider, status, retry_after, &body)
}

/// Parses a `retry-after` value given in (possibly fractional) seconds. HTTP dates are not
/// understood and give `None` (the backoff applies then).
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Maps an HTTP error status and body to an error: 401/403 invalid credentials, 429 rate
/// limited, 5xx (and Anthropic's 529 "overloaded") server error, other statuses bad request.
pub fn status_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> ModelError {
    let provider = provider.to_string();
    let message = error_message(body);
    match status {
        401 | 403 => ModelError::InvalidCredentials { provider, message },
        429 => ModelError::RateLimited {
            provider,
            retry_after,
        },
        500..=599 => ModelError::Server {
            provider,
            status,
            message,
        },
        _ => ModelError::BadRequest {
            provider,
            status,
            message,
        },
    }
}

/// The provider's error message from a body: `error.message` (Anthropic and OpenAI), `message`,
/// a string `error`, or else the body itself, shortened.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    truncate(&text, MAX_ERROR_BODY)
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The server-sent events of a streamed answer, transport and parse errors mapped.
pub fn sse_events(
    provider: &str,
    resp: reqwest::Response,
) -> impl Stream<Item = Result<Event, ModelError>> + Send + 'static {
    let provider = provider.to_string();
    resp.bytes_stream().eventsource().map(move |r| {
        r.map_err(|e| match e {
            eventsource_stream::EventStreamError::Transport(e) => network_error(&provider, &e),
            other => ModelError::InvalidResponse {
                provider: provider.clone(),
                message: format!("malformed event stream: {other}"),
            },
        })
    })
}

/// Parses one event's JSON data.
pub fn parse_json(provider: &str, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| ModelError::InvalidResponse {
        provider: provider.to_string(),
        message: format!("bad JSON in stream ({e}): {}", truncate(data, 200)),
    })
}

/// Parses a tool call's accumulated argument text (empty means no arguments).
pub fn parse_args(provider: &str, tool: &str, text: &str) -> Result<Value, ModelError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|e| ModelError::InvalidResponse {
        provider: provider.to_string(),
        message: format!(
            "arguments of tool `{tool}` are not JSON ({e}): {}",
            truncate(text, 200)
        ),
    })
}

/// Checks the last tool call of an answer the output limit cut off (Anthropic stop reason
/// `max_tokens`, OpenAI finish reason `length`): arguments that are empty or not JSON mean the
/// limit was hit in the middle of that call, which is [`ModelError::OutputTruncated`].
pub fn check_cut_tool_call(
    provider: &str,
    tool: &str,
    args_text: &str,
    max_tokens: Option<u32>,
) -> Result<(), ModelError> {
    let complete = !args_text.trim().is_empty() && serde_json::from_str::<Value>(args_text).is_ok();
    if complete {
        return Ok(());
    }
    Err(ModelError::OutputTruncated {
        provider: provider.to_string(),
        tool: tool.to_string(),
        max_tokens,
    })
}

/// A runtime message's role: `system`, `user`, `assistant` or `tool` (from `type` or `role`;
/// `human`/`ai` are accepted as synonyms). Unknown kinds give `None`.
pub fn message_role(m: &Value) -> Option<&'static str> {
    let kind = m
        .get("type")
        .or_else(|| m.get("role"))
        .and_then(Value::as_str)?;
    match kind {
        "system" | "developer" => Some("system"),
        "human" | "user" => Some("user"),
        "ai" | "assistant" => Some("assistant"),
        "tool" => Some("tool"),
        _ => None,
    }
}

/// A message's content as text: a string, or the `text` of its parts joined.
pub fn message_text(m: &Value) -> String {
    content_text(m.get("content").unwrap_or(&Value::Null))
}

fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                other => other
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A message's tool calls as `(id, name, args)`.
pub fn message_tool_calls(m: &Value) -> Vec<(String, String, Value)> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    let args = c
                        .get("args")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    (s("id"), s("name"), args)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reads an environment variable, treating an empty value as unset.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The setters both HTTP providers share: `with_base_url`, `with_temperature`,
/// `with_http_options`, `with_retry_policy` (the type needs `base_url: String`,
/// `temperature: Option<f64>` and `http: HttpClient` fields).
macro_rules! http_model_setters {
    ($model:ty) => {
        impl $model {
            /// Uses another endpoint, including its version path where the API has one
            /// (e.g. `http://localhost:11434/v1` for an OpenAI-compatible server).
            pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
                self.base_url = url.into().trim_end_matches('/').to_string();
                self
            }

            /// Sets the default temperature (a request's own temperature wins).
            pub fn with_temperature(mut self, temperature: f64) -> Self {
                self.temperature = Some(temperature);
                self
            }

            /// Replaces the timeouts and retry policy.
            pub fn with_http_options(
                mut self,
                options: $crate::models::http::HttpOptions,
            ) -> Result<Self, $crate::models::ModelError> {
                self.http = $crate::models::http::HttpClient::new(options)?;
                Ok(self)
            }

            /// Replaces the retry policy, keeping the timeouts.
            pub fn with_retry_policy(
                self,
                retry: agentgraph_runtime::RetryPolicy,
            ) -> Result<Self, $crate::models::ModelError> {
                let options = $crate::models::http::HttpOptions {
                    retry,
                    ..self.http.options().clone()
                };
                self.with_http_options(options)
            }
        }
    };
}
pub(crate) use http_model_setters;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_typed_errors() {
        let e = status_error("p", 401, None, r#"{"error":{"message":"bad key"}}"#);
        assert!(
            matches!(e, ModelError::InvalidCredentials { ref message, .. } if message == "bad key")
        );
        let e = status_error("p", 429, Some(Duration::from_secs(2)), "");
        assert!(
            matches!(e, ModelError::RateLimited { retry_after: Some(d), .. } if d.as_secs() == 2)
        );
        assert!(matches!(
            status_error("p", 529, None, "x"),
            ModelError::Server { status: 529, .. }
        ));
        let e = status_error(
            "p",
            400,
            None,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens missing"}}"#,
        );
        assert!(
            matches!(e, ModelError::BadRequest { ref message, .. } if message == "max_tokens missing")
        );
    }

    #[test]
    fn a_cut_answer_is_never_retried() {
        let cut = ModelError::OutputTruncated {
            provider: "p".into(),
            tool: "t".into(),
            max_tokens: Some(5),
        };
        let any = RetryPolicy {
            retry_on: RetryOn::Any,
            ..RetryPolicy::default()
        };
        assert!(!should_retry(&any, &cut));
        assert!(!should_retry(&RetryPolicy::default(), &cut));
        let broke = ModelError::StreamInterrupted {
            provider: "p".into(),
            chunks: 2,
            cause: Box::new(ModelError::Network {
                provider: "p".into(),
                message: "timed out".into(),
            }),
        };
        assert!(should_retry(&RetryPolicy::default(), &broke));
        let by_code = RetryPolicy {
            retry_on: RetryOn::Codes(vec!["stream_interrupted".into()]),
            ..RetryPolicy::default()
        };
        assert!(should_retry(&by_code, &broke) && !should_retry(&by_code, &cut));
    }

    #[test]
    fn retry_after_parses_seconds() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn long_bodies_are_cut_on_char_boundaries() {
        let body = "é".repeat(400);
        let m = error_message(&body);
        assert!(m.len() <= MAX_ERROR_BODY + '…'.len_utf8());
    }

    #[test]
    fn message_helpers_read_both_spellings() {
        let m = serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, "b"],
            "tool_calls": [{"id": "1", "name": "t", "args": {"x": 1}}]});
        assert_eq!(message_role(&m), Some("assistant"));
        assert_eq!(message_text(&m), "ab");
        assert_eq!(message_tool_calls(&m)[0].2["x"], 1);
    }
}
