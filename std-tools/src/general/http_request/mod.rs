//! `http_request`: HTTP calls for agents, with SSRF protection.
//!
//! Every hop (the first URL and each redirect target, followed by hand so that each is checked)
//! goes through the same gate:
//!
//! 1. only `http` and `https` URLs with a host;
//! 2. the host is resolved with the system resolver and **every** address it resolves to must
//!    be public: private (10/8, 172.16/12, 192.168/16, fc00::/7), loopback, link-local
//!    (169.254/16, fe80::/10), unspecified, "this network" (0/8), CGNAT (100.64/10),
//!    multicast, broadcast and reserved ranges, the cloud metadata endpoints (169.254.169.254,
//!    fd00:ec2::254) and the IPv6 forms that embed one of those IPv4 addresses
//!    (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
//!    are refused with `BLOCKED_ADDRESS`;
//! 3. the request is sent by a per-request client whose resolver is pinned to the checked
//!    addresses, so a second DNS answer (DNS rebinding) cannot swap them, with proxies
//!    disabled so nothing else resolves the host.
//!
//! A redirect to another origin (scheme, host or port) carries none of the headers the caller
//! set and no body; a 307/308 of a request with a body to another origin is not followed
//! (`CROSS_ORIGIN_REDIRECT`). With `idempotency_key` (a call argument or the setting) the call's
//! key (`ToolContext::idempotency_key`, the same when a crashed step runs again) goes out as
//! `Idempotency-Key`, to the first origin only.
//!
//! [`HttpPolicy::allowed_hosts`] skips the address check for named hosts (they are resolved
//! normally), and [`HttpPolicy::allow_private`] accepts private, loopback and link-local
//! addresses — but never the metadata endpoints, which only an allowed host reaches.
//!
//! The tool itself is here; `policy` holds [`HttpPolicy`] and [`blocked_reason`], `target` the
//! per-hop gate, `call` the argument parsing and `response` the reading of answers.

mod call;
mod policy;
mod response;
mod target;

pub use policy::{blocked_reason, HttpPolicy};

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use call::{parse_call, Call};
use response::{read_response, request_failed};
use serde_json::{json, Value};
use target::{check_host, check_scheme};

/// The header a call's idempotency key is sent in.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

fn err(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message)
}

/// The `http_request` tool: sends an HTTP request and returns
/// `{"status", "url", "headers", "body", "truncated"}` — `body` is parsed JSON when the answer
/// is JSON, text otherwise; `url` is the final URL after redirects.
///
/// See the [module docs](self) for the SSRF checks. Errors: `INVALID_ARGUMENTS`,
/// `INVALID_URL` (not http/https, unparsable), `BLOCKED_ADDRESS`, `TIMEOUT`,
/// `TOO_MANY_REDIRECTS`, `CROSS_ORIGIN_REDIRECT` (a 307/308 with a body to another origin),
/// `HTTP_ERROR` (status ≥ 400, with the status and a body excerpt),
/// `REQUEST_FAILED` (DNS, connection, TLS), `INVALID_SETTINGS`, `CANCELLED`.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    policy: HttpPolicy,
}

impl HttpRequest {
    /// The tool with the default (strict) policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool with `policy` (tool settings still override it field by field).
    pub fn with_policy(policy: HttpPolicy) -> Self {
        HttpRequest { policy }
    }

    /// The policy given to the constructor.
    pub fn policy(&self) -> &HttpPolicy {
        &self.policy
    }

    /// Runs a call under `policy` (no deadline of its own: [`Tool::call`] adds it).
    async fn run(
        &self,
        mut call: Call,
        policy: &HttpPolicy,
        key: &str,
    ) -> Result<Value, ToolError> {
        let mut hops = 0usize;
        loop {
            let pinned = check_host(&call.url, policy).await?;
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .timeout(call.timeout)
                .user_agent(concat!(
                    "agentgraph-http-request/",
                    env!("CARGO_PKG_VERSION")
                ));
            if let Some((domain, addrs)) = &pinned {
                builder = builder.resolve_to_addrs(domain, addrs);
            }
            let client = builder.build().map_err(|e| {
                err(
                    "REQUEST_FAILED",
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
            let mut headers = call.headers.clone();
            if call.idempotency_key && !headers.contains_key(IDEMPOTENCY_KEY) {
                if let Ok(v) = reqwest::header::HeaderValue::from_str(key) {
                    headers.insert(IDEMPOTENCY_KEY, v);
                }
            }
            let mut req = client
                .request(call.method.clone(), call.url.clone())
                .headers(headers);
            if let Some(b) = &call.body {
                req = req.body(b.clone());
            }
            let resp = req.send().await.map_err(|e| request_failed(&call.url, e))?;
            let status = resp.status();
            if status.is_redirection() && policy.max_redirects > 0 {
                if let Some(loc) = resp.headers().get(reqwest::header::LOCATION) {
                    if hops >= policy.max_redirects {
                        return Err(err(
                            "TOO_MANY_REDIRECTS",
                            format!(
                                "stopped after {hops} redirects (the limit) at {}; request the \
                                 final URL directly",
                                call.url
                            ),
                        ));
                    }
                    hops += 1;
                    let loc = loc.to_str().map_err(|_| {
                        err(
                            "REQUEST_FAILED",
                            format!("{} redirected to an unreadable Location", call.url),
                        )
                    })?;
                    let next = call.url.join(loc).map_err(|e| {
                        err(
                            "INVALID_URL",
                            format!("{} redirected to an invalid URL `{loc}`: {e}", call.url),
                        )
                    })?;
                    check_scheme(&next)?;
                    let keeps_method = matches!(status.as_u16(), 307 | 308);
                    if next.origin() != call.url.origin() {
                        // Another origin gets nothing the caller wrote: no header (keys,
                        // tokens, the idempotency key) and no body.
                        if keeps_method && call.body.is_some() {
                            return Err(err(
                                "CROSS_ORIGIN_REDIRECT",
                                format!(
                                    "{} answered {} to {next}, another origin; a request with a \
                                     body is not forwarded there (its headers and body stay \
                                     with the origin you called). Call {next} directly if you \
                                     mean to send it there",
                                    call.url,
                                    status.as_u16()
                                ),
                            ));
                        }
                        call.headers.clear();
                        call.body = None;
                        call.idempotency_key = false;
                    }
                    if !keeps_method && call.method != reqwest::Method::HEAD {
                        call.method = reqwest::Method::GET;
                        call.body = None;
                        call.headers.remove(reqwest::header::CONTENT_TYPE);
                        call.headers.remove(reqwest::header::CONTENT_LENGTH);
                    }
                    call.url = next;
                    continue;
                }
            }
            return read_response(resp, &call.url, policy.max_response_bytes).await;
        }
    }
}

#[async_trait]
impl Tool for HttpRequest {
    fn name(&self) -> &str {
        "http_request"
    }

    fn description(&self) -> &str {
        "Make an HTTP request to a public http(s) URL and return {status, url, headers, body, \
         truncated}; a JSON answer's body is returned parsed. Redirects are followed (up to a \
         limit). Private, loopback, link-local and cloud-metadata addresses are refused \
         (BLOCKED_ADDRESS). A status of 400 or more is reported as an HTTP_ERROR with the \
         status and the start of the body."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "Absolute http:// or https:// URL to request."
                },
                "method": {
                    "type": "string",
                    "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
                    "description": "HTTP method (default GET)."
                },
                "headers": {
                    "type": "object",
                    "description": "Request headers, name to string value.",
                    "additionalProperties": {"type": "string"}
                },
                "query": {
                    "type": "object",
                    "description": "Query parameters appended to the URL, name to a string, \
                                    number, boolean or a list of them (repeated parameter)."
                },
                "body": {
                    "type": "string",
                    "description": "Raw request body (set a Content-Type header yourself). \
                                    Not together with `json`."
                },
                "json": {
                    "description": "A JSON value sent as the body with Content-Type: \
                                    application/json. Not together with `body`."
                },
                "idempotency_key": {
                    "type": "boolean",
                    "description": "Send an Idempotency-Key header that stays the same if this \
                                    step is run again after a crash, so a service that \
                                    deduplicates requests does not act twice (default false)."
                },
                "timeout_secs": {
                    "type": "number",
                    "description": "Limit on the whole request in seconds (default 30, capped \
                                    by the operator's maximum)."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let policy = self.policy.with_settings(ctx.settings())?;
        let call = parse_call(&args, &policy)?;
        let (url, timeout) = (call.url.clone(), call.timeout);
        let key = ctx.idempotency_key();
        let run = tokio::time::timeout(timeout, self.run(call, &policy, &key));
        let result = tokio::select! {
            r = run => r.map_err(|_| err(
                "TIMEOUT",
                format!("the request to {url} took longer than {timeout:?}; retry later or \
                         ask for a larger `timeout_secs`"),
            ))?,
            _ = ctx.cancellation().cancelled() => {
                Err(err("CANCELLED", "the run was cancelled"))
            }
        }?;
        Ok(ToolOutput {
            content: result,
            writes: Vec::new(),
        })
    }
}
