//! Reading the runtime's JSON messages: role, text and tool calls, whichever spelling they use.

use serde_json::Value;

/// A runtime message's role: `system`, `user`, `assistant` or `tool` (from `type` or `role`;
/// `human`/`ai` are accepted as synonyms). Unknown kinds give `None`.
pub fn message_role(m: &Value) -> Option<&'static str> {
    let kind = m
        .get("type")
        .or_else(|| m.get("role"))
        .and_then(Value::as_str)?;
    match kind {
        "system" | "developer" => Some("system"),
        "human" | "user" => Some("user"),
        "ai" | "assistant" => Some("assistant"),
        "tool" => Some("tool"),
        _ => None,
    }
}

/// A message's content as text: a string, or the `text` of its parts joined.
pub fn message_text(m: &Value) -> String {
    content_text(m.get("content").unwrap_or(&Value::Null))
}

fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                other => other
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A message's tool calls as `(id, name, args)`.
pub fn message_tool_calls(m: &Value) -> Vec<(String, String, Value)> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    let args = c
                        .get("args")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    (s("id"), s("name"), args)
                })
                .collect()
        })
        .unwrap_or_default()
}
