//! Reading streamed answers: server-sent events, their JSON data, tool-call arguments and the
//! check of a tool call cut off by the output limit.

use super::errors::{network_error, truncate};
use crate::models::{ModelError, ModelResponse, Usage};
use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;

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

/// Settles an answer the output limit cut off (Anthropic stop reason `max_tokens`, OpenAI
/// finish reason `length`). `calls` are its tool calls as streamed: (stream index, position in
/// `response.tool_calls`, argument text). A last call whose arguments are incomplete is dropped
/// and the complete calls before it are kept (the model goes on from the calls that were
/// made); a cut *only* call is [`ModelError::OutputTruncated`]. A cut text answer stays an
/// answer.
pub fn settle_cut_answer<K>(
    provider: &str,
    calls: &mut Vec<(K, usize, String)>,
    response: &mut ModelResponse,
    max_tokens: Option<u32>,
) -> Result<(), ModelError> {
    let last = calls.last().and_then(|(_, pos, text)| {
        let call = response.tool_calls.get(*pos)?;
        Some((call.name.as_str(), text.as_str()))
    });
    let Some((tool, text)) = last else {
        tracing::warn!(
            provider,
            ?max_tokens,
            "the answer was cut off by max_tokens"
        );
        return Ok(());
    };
    let Err(e) = check_cut_tool_call(provider, tool, text, max_tokens, response.usage) else {
        return Ok(());
    };
    if calls.len() < 2 {
        return Err(e);
    }
    if let Some((_, pos, _)) = calls.pop() {
        if pos < response.tool_calls.len() {
            response.tool_calls.remove(pos);
        }
    }
    tracing::warn!(
        provider,
        kept = response.tool_calls.len(),
        "dropped the last tool call, cut off by max_tokens: {e}"
    );
    Ok(())
}

/// Checks the last tool call of an answer the output limit cut off (Anthropic stop reason
/// `max_tokens`, OpenAI finish reason `length`): arguments that are empty or not JSON mean the
/// limit was hit in the middle of that call, which is [`ModelError::OutputTruncated`].
pub fn check_cut_tool_call(
    provider: &str,
    tool: &str,
    args_text: &str,
    max_tokens: Option<u32>,
    usage: Usage,
) -> Result<(), ModelError> {
    let complete = !args_text.trim().is_empty() && serde_json::from_str::<Value>(args_text).is_ok();
    if complete {
        return Ok(());
    }
    Err(ModelError::OutputTruncated {
        provider: provider.to_string(),
        tool: tool.to_string(),
        max_tokens,
        partial: args_text.to_string(),
        usage,
    })
}
