//! A named tool choice the model did not follow: the call is made once more with that tool
//! alone.
//!
//! Servers that cannot force one tool by name (llama.cpp's server drops an object
//! `tool_choice`) get a named choice as `required` plus a last message naming the tool
//! (`OPENAI_NAMED_TOOL_CHOICE=hint`, which keeps the tool list, and so the prompt cache, the
//! same for every call). A small model followed that hint on nearly every call, and once
//! answered a forced `add_trigger` with other tools: the multi-agent builder then built a
//! workflow without a trigger. When the answer calls tools but not the named one, the node asks
//! again with only the named tool in `tools` (with `required`, the server's grammar then allows
//! nothing else), and uses that answer. An answer without tool calls is left to the text-call
//! recovery.

use super::Answer;
use crate::models::{ModelRequest, ToolChoice};
use serde_json::{json, Value};

/// The request to send again when `answer` ignored `req`'s named tool choice, which the model
/// only `hinted` (a provider that enforces it, or a scripted model, is taken at its word): `req`
/// with that tool alone; `None` when the choice was followed, was not a name, or cannot be
/// narrowed.
pub(super) fn retry_request(
    req: &ModelRequest,
    answer: &Answer,
    hinted: bool,
) -> Option<ModelRequest> {
    let ToolChoice::Tool(name) = &req.tool_choice else {
        return None;
    };
    if !hinted {
        return None;
    }
    let Answer::Message(response) = answer else {
        return None;
    };
    // A name in other casing or separators is the named tool (the recovery renames it).
    let loose = |n: &str| -> String {
        n.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let ignored = !response.tool_calls.is_empty()
        && response
            .tool_calls
            .iter()
            .all(|c| loose(&c.name) != loose(name));
    if !ignored || req.tools.len() < 2 {
        return None;
    }
    let spec = req.tools.iter().find(|t| &t.name == name)?.clone();
    let mut retry = req.clone();
    retry.tools = vec![spec];
    Some(retry)
}

/// The tools the ignored answer called instead.
fn called(answer: &Answer) -> Vec<String> {
    match answer {
        Answer::Message(r) => r.tool_calls.iter().map(|c| c.name.clone()).collect(),
        Answer::Structured { .. } => Vec::new(),
    }
}

/// The custom event reporting the retry.
pub(super) fn event(node: &str, req: &ModelRequest, ignored: &Answer) -> Value {
    let tool = match &req.tool_choice {
        ToolChoice::Tool(name) => name.as_str(),
        _ => "",
    };
    let called = called(ignored);
    json!({
        "recovery": "named_tool_ignored",
        "node": node,
        "tool": tool,
        "called": called,
        "title": format!(
            "the model was asked for `{tool}` and called {} instead: asking again with `{tool}` \
             alone",
            called.join(", ")
        ),
    })
}

/// Adds the ignored answer's tokens to the answer that replaced it.
pub(super) fn add_usage(answer: &mut Answer, ignored: &Answer) {
    let spent = match ignored {
        Answer::Message(r) => r.usage,
        Answer::Structured { usage, .. } => *usage,
    };
    match answer {
        Answer::Message(r) => r.usage.add(&spent),
        Answer::Structured { usage, .. } => usage.add(&spent),
    }
}
