//! Turning a response (or a transport failure) into the tool's output or error: headers, a
//! capped body parsed as JSON when it is JSON, `HTTP_ERROR` for statuses of 400 and more.

use super::err;
use agentgraph_agents::tools::ToolError;
use serde_json::{json, Map, Value};
use url::Url;

/// Longest excerpt of an error response body kept in an `HTTP_ERROR` message.
const MAX_ERROR_EXCERPT: usize = 500;

pub(super) fn request_failed(url: &Url, e: reqwest::Error) -> ToolError {
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

pub(super) async fn read_response(
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
