//! Domain access gating: before a tool reaches a host on the web, the user approves that host
//! (an interrupt `{"kind": "domain_access", "host", "url", "message"}`). Approved hosts are kept
//! in a thread channel ([`APPROVED_DOMAINS`], `list<string>` with reducer `append`) so the user
//! is asked once per host and thread; a graph without that channel asks on every call.

use super::approved;
use crate::tools::{ToolContext, ToolError};
use serde_json::{json, Value};

/// The default channel of approved hosts.
pub const APPROVED_DOMAINS: &str = "approved_domains";

/// What the gate decided for an allowed URL: the write that remembers a new approval, if any.
pub type Remember = Option<(String, Value)>;

/// The host of `url`, lower-cased; an error the model can act on for anything but http(s).
pub fn host_of(url: &str) -> Result<String, ToolError> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| {
        ToolError::new(
            "INVALID_URL",
            format!("`{url}` is not an absolute URL ({e}); write it as https://host/path"),
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ToolError::new(
            "INVALID_URL",
            format!(
                "only http and https URLs can be fetched, not `{}`",
                parsed.scheme()
            ),
        ));
    }
    parsed
        .host_str()
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| ToolError::new("INVALID_URL", format!("`{url}` has no host")))
}

/// Lets a call reach `url` once its host is approved in this thread (channel `channel`), or
/// asks the user. `Ok(Some(write))` on a new approval: add it to the tool's output so the
/// host stays approved. A denial is `DOMAIN_DENIED`.
pub fn gate_url(ctx: &ToolContext, url: &str, channel: &str) -> Result<Remember, ToolError> {
    let host = host_of(url)?;
    let known = ctx
        .state()
        .get(channel)
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|h| h.as_str() == Some(host.as_str())));
    if known {
        return Ok(None);
    }
    let answer = ctx.interrupt_keyed(
        &format!("domain:{host}"),
        json!({
            "kind": "domain_access",
            "host": host,
            "url": url,
            "message": format!("Allow the assistant to read from {host}?"),
        }),
    )?;
    if !approved(&answer) {
        return Err(ToolError::new(
            "DOMAIN_DENIED",
            format!(
                "the user did not allow access to {host}; do not fetch from it again unless \
                 they ask, and say what you could not check"
            ),
        ));
    }
    let declared = ctx.state().schema().index_of(channel).is_some();
    Ok(declared.then(|| (channel.to_string(), json!([host]))))
}
