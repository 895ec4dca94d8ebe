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
//! [`HttpPolicy::allowed_hosts`] skips the address check for named hosts (they are resolved
//! normally), and [`HttpPolicy::allow_private`] accepts private, loopback and link-local
//! addresses — but never the metadata endpoints, which only an allowed host reaches.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;
use url::{Host, Url};

/// Longest excerpt of an error response body kept in an `HTTP_ERROR` message.
const MAX_ERROR_EXCERPT: usize = 500;

/// What the `http_request` tool may reach and how long it may take.
///
/// The tool's settings (`ToolContext::settings`, e.g. from
/// `ToolExecutorNode::settings("http_request", …)`) override these fields one by one:
/// `{"allow_private": bool, "allowed_hosts": [..], "max_redirects": n, "timeout_secs": n,
/// "max_timeout_secs": n, "max_response_bytes": n}`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpPolicy {
    /// Accept private, loopback, link-local, CGNAT and unspecified addresses (never the
    /// metadata endpoints). Default `false`.
    pub allow_private: bool,
    /// Hosts reachable whatever they resolve to: exact names or IP literals
    /// (case-insensitive), or `*.example.com` for every subdomain. Default empty.
    pub allowed_hosts: Vec<String>,
    /// Redirects followed before `TOO_MANY_REDIRECTS`. Default 5; 0 returns 3xx answers as they
    /// are.
    pub max_redirects: usize,
    /// Limit on the whole call (all hops and the body) when the call gives none. Default 30 s.
    pub timeout: Duration,
    /// Largest `timeout_secs` a call may ask for. Default 120 s.
    pub max_timeout: Duration,
    /// Bytes of response body kept; the rest is dropped with a note. Default 1 MiB.
    pub max_response_bytes: usize,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        HttpPolicy {
            allow_private: false,
            allowed_hosts: Vec::new(),
            max_redirects: 5,
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(120),
            max_response_bytes: 1024 * 1024,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicySettings {
    /// Added by the DSL to every settings object (the graph file's folder); unused here.
    #[serde(default, rename = "base_dir")]
    _base_dir: Option<String>,
    allow_private: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    max_redirects: Option<usize>,
    timeout_secs: Option<f64>,
    max_timeout_secs: Option<f64>,
    max_response_bytes: Option<usize>,
}

fn secs(v: f64, field: &str) -> Result<Duration, ToolError> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            ToolError::new(
                "INVALID_SETTINGS",
                format!(
                    "http_request setting `{field}` must be a positive number of seconds, got {v}"
                ),
            )
        })
}

impl HttpPolicy {
    /// This policy with the fields present in `settings` (a JSON object, or `null` for none)
    /// replaced. Unknown fields or wrong types give `INVALID_SETTINGS`.
    pub fn with_settings(&self, settings: &Value) -> Result<HttpPolicy, ToolError> {
        if settings.is_null() {
            return Ok(self.clone());
        }
        let s: PolicySettings = serde_json::from_value(settings.clone()).map_err(|e| {
            ToolError::new(
                "INVALID_SETTINGS",
                format!(
                    "invalid http_request settings: {e}; expected an object with allow_private, \
                     allowed_hosts, max_redirects, timeout_secs, max_timeout_secs, \
                     max_response_bytes"
                ),
            )
        })?;
        let mut p = self.clone();
        if let Some(v) = s.allow_private {
            p.allow_private = v;
        }
        if let Some(v) = s.allowed_hosts {
            p.allowed_hosts = v;
        }
        if let Some(v) = s.max_redirects {
            p.max_redirects = v;
        }
        if let Some(v) = s.timeout_secs {
            p.timeout = secs(v, "timeout_secs")?;
        }
        if let Some(v) = s.max_timeout_secs {
            p.max_timeout = secs(v, "max_timeout_secs")?;
        }
        if let Some(v) = s.max_response_bytes {
            p.max_response_bytes = v;
        }
        Ok(p)
    }

    /// Whether `host` (a name or IP literal, without port or brackets) is in
    /// [`allowed_hosts`](Self::allowed_hosts).
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.allowed_hosts.iter().any(|a| {
            let a = a
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim_end_matches('.')
                .to_ascii_lowercase();
            match a.strip_prefix("*.") {
                Some(suffix) => host.len() > suffix.len() && host.ends_with(&format!(".{suffix}")),
                None => host == a,
            }
        })
    }

    /// Why `ip` may not be reached under this policy; `None` when it may.
    pub fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        let reason = blocked_reason(ip)?;
        if self.allow_private && reason != METADATA {
            None
        } else {
            Some(reason)
        }
    }
}

const METADATA: &str = "a cloud metadata endpoint";

/// Why `ip` is not a public unicast address (private, loopback, link-local, metadata, …), or
/// `None` when it is. IPv6 addresses embedding an IPv4 address are judged by that address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(match o {
        [169, 254, 169, 254] | [169, 254, 170, 2] => METADATA,
        [0, ..] => "an unspecified (\"this network\") address",
        [127, ..] => "a loopback address",
        [10, ..] => "a private address (10.0.0.0/8)",
        [172, b, ..] if (16..=31).contains(&b) => "a private address (172.16.0.0/12)",
        [192, 168, ..] => "a private address (192.168.0.0/16)",
        [169, 254, ..] => "a link-local address",
        [100, b, ..] if (64..=127).contains(&b) => "a carrier-grade NAT address (100.64.0.0/10)",
        [192, 0, 0, _] => "an IETF protocol address (192.0.0.0/24)",
        [198, b, ..] if b == 18 || b == 19 => "a benchmarking address (198.18.0.0/15)",
        [a, ..] if (224..=239).contains(&a) => "a multicast address",
        [a, ..] if a >= 240 => "a reserved or broadcast address",
        _ => return None,
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return Some(METADATA);
    }
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d).
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        return v4_reason(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address too.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return v4_reason(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return v4_reason(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    match s[0] {
        x if x & 0xfe00 == 0xfc00 => Some("a unique-local (private) address (fc00::/7)"),
        x if x & 0xffc0 == 0xfe80 => Some("a link-local address (fe80::/10)"),
        x if x & 0xffc0 == 0xfec0 => Some("a site-local address (fec0::/10)"),
        x if x & 0xff00 == 0xff00 => Some("a multicast address"),
        _ => None,
    }
}

fn err(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message)
}

fn blocked(url: &Url, ip: IpAddr, reason: &str) -> ToolError {
    err(
        "BLOCKED_ADDRESS",
        format!(
            "refused to request {url}: its host resolves to {ip}, {reason}; only public \
             internet addresses may be requested (an operator can allow the host in the tool's \
             `allowed_hosts` setting)"
        ),
    )
}

/// Parses and checks the scheme and host of `raw`.
fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        err(
            "INVALID_URL",
            format!(
                "`{raw}` is not a valid absolute URL ({e}); give e.g. https://example.com/path"
            ),
        )
    })?;
    check_scheme(&url)?;
    Ok(url)
}

fn check_scheme(url: &Url) -> Result<(), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(err(
            "INVALID_URL",
            format!(
                "scheme `{}` is not allowed in {url}; only http and https URLs can be requested",
                url.scheme()
            ),
        ));
    }
    if url.host().is_none() {
        return Err(err("INVALID_URL", format!("{url} has no host")));
    }
    Ok(())
}

/// The addresses to pin for `url`'s host: `None` when the host is allowed by name (resolve
/// normally) or is an IP literal (nothing to resolve). Fails with `BLOCKED_ADDRESS` when any
/// resolved address is refused.
async fn check_host(
    url: &Url,
    policy: &HttpPolicy,
) -> Result<Option<(String, Vec<SocketAddr>)>, ToolError> {
    let host_str = url.host_str().unwrap_or_default();
    if policy.host_allowed(host_str) {
        return Ok(None);
    }
    let port = url.port_or_known_default().unwrap_or(80);
    match url.host() {
        Some(Host::Ipv4(ip)) => match policy.refusal(IpAddr::V4(ip)) {
            Some(reason) => Err(blocked(url, IpAddr::V4(ip), reason)),
            None => Ok(None),
        },
        Some(Host::Ipv6(ip)) => match policy.refusal(IpAddr::V6(ip)) {
            Some(reason) => Err(blocked(url, IpAddr::V6(ip), reason)),
            None => Ok(None),
        },
        Some(Host::Domain(domain)) => {
            // `localhost.` and `localhost` name the same host; some resolvers know only the
            // latter.
            let lookup = domain.strip_suffix('.').unwrap_or(domain);
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((lookup, port))
                .await
                .map_err(|e| {
                    err(
                        "REQUEST_FAILED",
                        format!("cannot resolve host `{domain}`: {e}; check the URL"),
                    )
                })?
                .collect();
            if addrs.is_empty() {
                return Err(err(
                    "REQUEST_FAILED",
                    format!("host `{domain}` resolves to no address; check the URL"),
                ));
            }
            for a in &addrs {
                if let Some(reason) = policy.refusal(a.ip()) {
                    return Err(blocked(url, a.ip(), reason));
                }
            }
            Ok(Some((domain.to_string(), addrs)))
        }
        None => Err(err("INVALID_URL", format!("{url} has no host"))),
    }
}

fn request_failed(url: &Url, e: reqwest::Error) -> ToolError {
    if e.is_timeout() {
        return err("TIMEOUT", format!("the request to {url} timed out"));
    }
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    err(
        "REQUEST_FAILED",
        format!("the request to {url} failed: {msg}"),
    )
}

/// A parsed call.
struct Call {
    method: reqwest::Method,
    url: Url,
    headers: reqwest::header::HeaderMap,
    body: Option<Vec<u8>>,
    timeout: Duration,
}

fn parse_call(args: &Value, policy: &HttpPolicy) -> Result<Call, ToolError> {
    let bad = |m: String| err("INVALID_ARGUMENTS", m);
    let raw_url = args
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`url` must be a string".into()))?;
    let mut url = parse_url(raw_url)?;
    let method_name = args
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let method = match method_name.as_str() {
        "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS" => {
            reqwest::Method::from_bytes(method_name.as_bytes())
                .map_err(|_| bad(format!("unknown method `{method_name}`")))?
        }
        other => {
            return Err(bad(format!(
                "method `{other}` is not supported; use GET, POST, PUT, PATCH, DELETE, HEAD or \
                 OPTIONS"
            )))
        }
    };
    if let Some(q) = args.get("query").filter(|v| !v.is_null()) {
        let q = q
            .as_object()
            .ok_or_else(|| bad("`query` must be an object of parameter names to values".into()))?;
        let mut pairs = url.query_pairs_mut();
        for (k, v) in q {
            let items: Vec<&Value> = match v {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for item in items {
                let s = match item {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(bad(format!(
                            "query parameter `{k}` must be a string, number, boolean or a list \
                             of them"
                        )))
                    }
                };
                pairs.append_pair(k, &s);
            }
        }
        drop(pairs);
    }
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(h) = args.get("headers").filter(|v| !v.is_null()) {
        let h = h
            .as_object()
            .ok_or_else(|| bad("`headers` must be an object of header names to strings".into()))?;
        for (k, v) in h {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(bad(format!("header `{k}` must have a string value"))),
            };
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| bad(format!("`{k}` is not a valid header name")))?;
            let value = reqwest::header::HeaderValue::from_str(&v).map_err(|_| {
                bad(format!(
                    "the value of header `{k}` is not a valid header value"
                ))
            })?;
            headers.append(name, value);
        }
    }
    let body_text = args.get("body").filter(|v| !v.is_null());
    let body_json = args.get("json").filter(|v| !v.is_null());
    let body = match (body_text, body_json) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "give either `body` (raw text) or `json` (a JSON value), not both".into(),
            ))
        }
        (Some(Value::String(s)), None) => Some(s.clone().into_bytes()),
        (Some(_), None) => {
            return Err(bad(
                "`body` must be a string; send JSON values with `json` instead".into(),
            ))
        }
        (None, Some(j)) => {
            if !headers.contains_key(reqwest::header::CONTENT_TYPE) {
                headers.insert(
                    reqwest::header::CONTENT_TYPE,
                    reqwest::header::HeaderValue::from_static("application/json"),
                );
            }
            Some(j.to_string().into_bytes())
        }
        (None, None) => None,
    };
    let timeout = match args.get("timeout_secs").and_then(Value::as_f64) {
        Some(t) => {
            let d = Duration::try_from_secs_f64(t)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| bad(format!("`timeout_secs` must be positive, got {t}")))?;
            d.min(policy.max_timeout)
        }
        None => policy.timeout.min(policy.max_timeout),
    };
    Ok(Call {
        method,
        url,
        headers,
        body,
        timeout,
    })
}

/// The `http_request` tool: sends an HTTP request and returns
/// `{"status", "url", "headers", "body", "truncated"}` — `body` is parsed JSON when the answer
/// is JSON, text otherwise; `url` is the final URL after redirects.
///
/// See the [module docs](self) for the SSRF checks. Errors: `INVALID_ARGUMENTS`,
/// `INVALID_URL` (not http/https, unparsable), `BLOCKED_ADDRESS`, `TIMEOUT`,
/// `TOO_MANY_REDIRECTS`, `HTTP_ERROR` (status ≥ 400, with the status and a body excerpt),
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
    async fn run(&self, mut call: Call, policy: &HttpPolicy) -> Result<Value, ToolError> {
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
            let mut req = client
                .request(call.method.clone(), call.url.clone())
                .headers(call.headers.clone());
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
                    if next.origin() != call.url.origin() {
                        for h in [
                            reqwest::header::AUTHORIZATION,
                            reqwest::header::COOKIE,
                            reqwest::header::PROXY_AUTHORIZATION,
                        ] {
                            call.headers.remove(h);
                        }
                    }
                    let keeps_method = matches!(status.as_u16(), 307 | 308);
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

async fn read_response(
    mut resp: reqwest::Response,
    url: &Url,
    cap: usize,
) -> Result<Value, ToolError> {
    let status = resp.status();
    let mut headers = Map::new();
    for (k, v) in resp.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        match headers.get_mut(k.as_str()) {
            Some(Value::String(prev)) => {
                prev.push_str(", ");
                prev.push_str(&v);
            }
            _ => {
                headers.insert(k.as_str().to_string(), Value::String(v));
            }
        }
    }
    let is_json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("json"));
    let mut bytes: Vec<u8> = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = resp.chunk().await.map_err(|e| request_failed(url, e))? {
        let room = cap.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if status.is_client_error() || status.is_server_error() {
        let excerpt: String = text.chars().take(MAX_ERROR_EXCERPT).collect();
        let more = if text.chars().count() > MAX_ERROR_EXCERPT {
            "…"
        } else {
            ""
        };
        return Err(err(
            "HTTP_ERROR",
            format!(
                "{url} answered HTTP {}{}{}",
                status.as_u16(),
                status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default(),
                if excerpt.is_empty() {
                    String::new()
                } else {
                    format!(": {excerpt}{more}")
                }
            ),
        ));
    }
    let body = match (is_json && !truncated)
        .then(|| serde_json::from_slice::<Value>(&bytes).ok())
        .flatten()
    {
        Some(v) => v,
        None => Value::String(text),
    };
    let mut out = json!({
        "status": status.as_u16(),
        "url": url.as_str(),
        "headers": headers,
        "body": body,
        "truncated": truncated,
    });
    if truncated {
        out["note"] = json!(format!(
            "the response body was longer than {cap} bytes and was cut there"
        ));
    }
    Ok(out)
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
        let run = tokio::time::timeout(timeout, self.run(call, &policy));
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
