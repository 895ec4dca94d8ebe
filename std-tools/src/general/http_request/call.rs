//! Reading a call's arguments (method, URL, query, headers, body, timeout) into a [`Call`].

use super::err;
use super::policy::HttpPolicy;
use super::target::parse_url;
use agentgraph_agents::tools::ToolError;
use serde_json::Value;
use std::time::Duration;
use url::Url;

/// A parsed call.
pub(super) struct Call {
    pub(super) method: reqwest::Method,
    pub(super) url: Url,
    pub(super) headers: reqwest::header::HeaderMap,
    pub(super) body: Option<Vec<u8>>,
    pub(super) timeout: Duration,
    /// Whether the call's idempotency key goes out as `Idempotency-Key`.
    pub(super) idempotency_key: bool,
}

pub(super) fn parse_call(args: &Value, policy: &HttpPolicy) -> Result<Call, ToolError> {
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
    let idempotency_key = match args.get("idempotency_key") {
        None | Some(Value::Null) => policy.idempotency_key,
        Some(Value::Bool(b)) => *b || policy.idempotency_key,
        Some(_) => return Err(bad("`idempotency_key` must be true or false".into())),
    };
    Ok(Call {
        method,
        url,
        headers,
        body,
        timeout,
        idempotency_key,
    })
}
