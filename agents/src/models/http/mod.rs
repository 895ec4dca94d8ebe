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
//!
//! Here: the client and its retry loop, `complete_streamed` and the provider setters; the
//! error mapping is in `errors`, the event-stream readers in `sse`, the message readers in
//! `messages`.

mod errors;
mod messages;
mod sse;
#[cfg(test)]
mod tests;

pub use errors::{
    error_from_response, error_message, network_error, parse_retry_after, send_once, status_error,
};
pub use messages::{message_role, message_text, message_tool_calls};
pub use sse::{check_cut_tool_call, parse_args, parse_json, settle_cut_answer, sse_events};

use super::{CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, ModelResponse};
use agentgraph_runtime::{RetryOn, RetryPolicy};
use async_trait::async_trait;
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
    /// See [`ChatModel::hints_named_tool_choice`].
    fn hints_named_tool_choice(&self) -> bool {
        false
    }
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

/// Every [`StreamingApi`] is a [`ChatModel`] named `provider/model`.
#[async_trait]
impl<T: StreamingApi + 'static> ChatModel for T {
    fn name(&self) -> String {
        format!("{}/{}", T::PROVIDER, self.model_id())
    }

    fn hints_named_tool_choice(&self) -> bool {
        StreamingApi::hints_named_tool_choice(self)
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        complete_streamed(self, req, ctx).await
    }
}

/// A whole completion on a [`StreamingApi`]: the body once, attempts retried by
/// [`HttpClient::call`] while nothing was forwarded, the model id filled in.
async fn complete_streamed<P: StreamingApi>(
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
        ModelError::ContextOverflow { .. } => "context_overflow",
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
