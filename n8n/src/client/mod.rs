//! A client for a running n8n: its public API v1 (workflows, executions, tags, credential
//! schemas) with an API key, and a session login used only to read the instance's node types.
//!
//! The instance's address and key come from `N8N_API_URL` (e.g. `http://localhost:5678`, with
//! or without `/api/v1`) and `N8N_API_KEY`, as n8n-mcp takes them, or from the caller.
//! Requests time out (30 s by default); 429 is retried for every request (n8n did not process
//! it), 5xx only for requests that are safe to repeat (reads, updates, (de)activation,
//! deletes) — a create is never sent twice. Errors say what to fix ([`ClientError`]).
//!
//! n8n 1.123's public API cannot list credentials; this client reads credential *schemas* only
//! and never handles secrets beyond what a caller passes in.

mod api;
mod error;
mod payload;
mod session;

pub use api::{ExecutionQuery, WorkflowQuery};
pub use error::{node_named_in, ClientError};
pub use payload::{workflow_for_n8n, SETTINGS_KEYS};
pub use session::Session;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::time::Duration;

/// The environment variable holding the instance's address.
pub const URL_ENV: &str = "N8N_API_URL";
/// The environment variable holding the API key.
pub const KEY_ENV: &str = "N8N_API_KEY";

/// How requests are retried and timed out.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all (1: no retry).
    pub attempts: u32,
    /// The wait before the first retry; doubled for each further one (a `Retry-After` header
    /// wins when n8n sends one).
    pub backoff: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            backoff: Duration::from_millis(300),
            timeout: Duration::from_secs(30),
        }
    }
}

/// A client for one n8n instance's public API.
#[derive(Clone)]
pub struct N8nClient {
    http: reqwest::Client,
    /// The instance's root address, without a trailing slash or `/api/v1`.
    base: String,
    key: String,
    retry: RetryPolicy,
}

impl std::fmt::Debug for N8nClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("N8nClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// The instance's root address from what a user may write: trailing slashes and an
/// `/api/v1` suffix are dropped.
pub fn normalize_base(url: &str) -> Result<String, ClientError> {
    let trimmed = url.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/api/v1").unwrap_or(trimmed);
    let parsed = reqwest::Url::parse(trimmed).map_err(|e| {
        ClientError::Config(format!(
            "the n8n address {url:?} is not a URL ({e}); write it as http://host:port"
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ClientError::Config(format!(
            "the n8n address {url:?} must start with http:// or https://"
        )));
    }
    Ok(trimmed.to_string())
}

impl N8nClient {
    /// A client for the instance at `url` with API key `key`.
    pub fn new(url: &str, key: &str) -> Result<Self, ClientError> {
        Self::with_policy(url, key, RetryPolicy::default())
    }

    /// [`N8nClient::new`] with its own retries and timeout.
    pub fn with_policy(url: &str, key: &str, retry: RetryPolicy) -> Result<Self, ClientError> {
        if key.trim().is_empty() {
            return Err(ClientError::Config(format!(
                "no n8n API key: set {KEY_ENV} (n8n: Settings > n8n API > Create an API key)"
            )));
        }
        let http = reqwest::Client::builder()
            .timeout(retry.timeout)
            .user_agent(concat!("agentgraph/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(N8nClient {
            http,
            base: normalize_base(url)?,
            key: key.trim().to_string(),
            retry,
        })
    }

    /// The client `N8N_API_URL` and `N8N_API_KEY` describe, with `url` / `key` overriding
    /// them when given.
    pub fn from_env_or(url: Option<&str>, key: Option<&str>) -> Result<Self, ClientError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let url = url
            .map(str::to_string)
            .or_else(|| env(URL_ENV))
            .ok_or_else(|| {
                ClientError::Config(format!(
                    "no n8n address: set {URL_ENV} (e.g. http://localhost:5678) or pass --n8n-url"
                ))
            })?;
        let key = key
            .map(str::to_string)
            .or_else(|| env(KEY_ENV))
            .unwrap_or_default();
        Self::new(&url, &key)
    }

    /// The instance's root address.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Where a person opens workflow `id` in n8n's editor.
    pub fn editor_url(&self, id: &str) -> String {
        format!("{}/workflow/{id}", self.base)
    }

    fn api_url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    /// One public-API request, retried per the policy. `what` and `id` name the object for a
    /// 404; `sent` is the workflow a 400 may concern.
    pub(crate) async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        target: Target<'_>,
    ) -> Result<Value, ClientError> {
        let url = self.api_url(path);
        let repeatable = method != Method::POST || target.repeatable;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .request(method.clone(), &url)
                .header("X-N8N-API-KEY", &self.key)
                .header("accept", "application/json");
            if let Some(body) = body {
                req = req.json(body);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(e) => {
                    let err = transport_error(&url, &e, self.retry.timeout);
                    // A refused connection was never processed: safe to try again.
                    if e.is_connect() && attempt < self.retry.attempts {
                        tokio::time::sleep(self.backoff(attempt, None)).await;
                        continue;
                    }
                    return Err(err);
                }
            };
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = resp.text().await.map_err(|e| ClientError::Decode {
                url: url.clone(),
                reason: e.to_string(),
            })?;
            if status.is_success() {
                if text.trim().is_empty() {
                    return Ok(Value::Null);
                }
                return serde_json::from_str(&text).map_err(|e| ClientError::Decode {
                    url: url.clone(),
                    reason: format!("{e} in {:?}", text.chars().take(200).collect::<String>()),
                });
            }
            let retryable =
                status == StatusCode::TOO_MANY_REQUESTS || (status.is_server_error() && repeatable);
            if retryable && attempt < self.retry.attempts {
                tokio::time::sleep(self.backoff(attempt, retry_after)).await;
                continue;
            }
            return Err(status_error(status, &url, &text, &target, attempt));
        }
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .map(|d| d.min(Duration::from_secs(30)))
            .unwrap_or(self.retry.backoff * 2u32.saturating_pow(attempt.saturating_sub(1)))
    }
}

/// What a request is about, for its errors.
pub(crate) struct Target<'a> {
    /// For a 404: `workflow`, `execution`, …
    pub what: &'static str,
    /// For a 404: the id asked for.
    pub id: &'a str,
    /// For a 400: the workflow sent, whose node n8n's message may name.
    pub sent: Option<&'a Value>,
    /// Whether a POST may be repeated after a 5xx (activation is; a create is not).
    pub repeatable: bool,
}

impl<'a> Target<'a> {
    pub(crate) fn new(what: &'static str, id: &'a str) -> Self {
        Target {
            what,
            id,
            sent: None,
            repeatable: false,
        }
    }
}

fn transport_error(url: &str, e: &reqwest::Error, timeout: Duration) -> ClientError {
    if e.is_timeout() {
        ClientError::Timeout {
            url: url.to_string(),
            secs: timeout.as_secs(),
        }
    } else {
        // The innermost cause says the most ("Connection refused").
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            reason = s.to_string();
            source = s.source();
        }
        ClientError::Unreachable {
            url: url.to_string(),
            reason,
        }
    }
}

fn status_error(
    status: StatusCode,
    url: &str,
    body: &str,
    target: &Target<'_>,
    attempts: u32,
) -> ClientError {
    let message = error::message_of(body);
    match status.as_u16() {
        401 => ClientError::Unauthorized {
            url: url.to_string(),
        },
        403 => ClientError::Forbidden {
            url: url.to_string(),
            message,
        },
        404 => ClientError::NotFound {
            what: target.what,
            id: target.id.to_string(),
        },
        400 | 409 | 422 => ClientError::Rejected {
            what: target.what,
            node: node_named_in(&message, target.sent),
            message,
        },
        s if s == 429 || s >= 500 => ClientError::Server {
            status: s,
            url: url.to_string(),
            message,
            attempts,
        },
        s => ClientError::Status {
            status: s,
            url: url.to_string(),
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalized_and_checked() {
        assert_eq!(
            normalize_base("http://localhost:5678/api/v1/").unwrap(),
            "http://localhost:5678"
        );
        assert_eq!(
            normalize_base(" https://n8n.example.org ").unwrap(),
            "https://n8n.example.org"
        );
        assert!(normalize_base("localhost:5678").is_err());
        assert!(normalize_base("ftp://x").is_err());
        assert!(matches!(
            N8nClient::new("http://localhost:5678", " "),
            Err(ClientError::Config(m)) if m.contains("N8N_API_KEY")
        ));
    }
}
