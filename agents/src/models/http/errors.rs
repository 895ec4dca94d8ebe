//! HTTP failures as [`ModelError`]s: transport errors, statuses (with `retry-after`) and the
//! provider's error message read from the body.

use crate::models::ModelError;
use serde_json::Value;
use std::time::Duration;

/// Longest excerpt of an error body kept in an error message.
pub(super) const MAX_ERROR_BODY: usize = 500;

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
/// limited, 5xx (and Anthropic's 529 "overloaded") server error, a 400 or 413 that says the
/// request is larger than the context ([`context_overflow`]) context overflow, other statuses
/// bad request.
pub fn status_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> ModelError {
    if matches!(status, 400 | 413) {
        if let Some(e) = context_overflow(provider, body) {
            return e;
        }
    }
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

/// A context-overflow error read from an error body: llama.cpp server's
/// `exceed_context_size_error` (with `n_prompt_tokens` and `n_ctx`), OpenAI's
/// `context_length_exceeded` or "maximum context length is N tokens … resulted in M tokens"
/// (vLLM says the same), Anthropic's "prompt is too long: M tokens > N maximum". `None` for
/// any other body.
pub fn context_overflow(provider: &str, body: &str) -> Option<ModelError> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = v.get("error").unwrap_or(&Value::Null);
    let field = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or("");
    let message = error_message(body);
    let lower = message.to_lowercase();
    let numbers = numbers(&lower);
    let (prompt_tokens, context_tokens) = if field("type") == "exceed_context_size_error"
        || lower.contains("exceeds the available context size")
    {
        let n = |k: &str| err.get(k).and_then(Value::as_u64);
        (
            n("n_prompt_tokens").or(numbers.first().copied()),
            n("n_ctx").or(numbers.get(1).copied()),
        )
    } else if lower.contains("prompt is too long") {
        (numbers.first().copied(), numbers.get(1).copied())
    } else if field("code") == "context_length_exceeded" || lower.contains("maximum context length")
    {
        (numbers.get(1).copied(), numbers.first().copied())
    } else {
        return None;
    };
    Some(ModelError::ContextOverflow {
        provider: provider.to_string(),
        message,
        prompt_tokens,
        context_tokens,
    })
}

/// The whole numbers in a text, in order.
fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect()
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
