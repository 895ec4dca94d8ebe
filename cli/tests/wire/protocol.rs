//! What the real provider APIs reject, checked on every request the mock provider receives
//! (the rules behind the usual 400 errors of Chat Completions and of the Messages API).

use super::{offered_tools, Wire};
use serde_json::{json, Value};

/// What both APIs demand of the offered tools: unique names of 1 to 64 letters, digits, `_`
/// or `-`, and an input schema of type object.
fn tools_protocol(wire: Wire, body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let names = offered_tools(wire, body);
    for (k, name) in names.iter().enumerate() {
        let ok = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            problems.push(format!("tools[{k}]: the name `{name}` is not allowed"));
        }
        if names[..k].contains(name) {
            problems.push(format!("tools[{k}]: `{name}` is offered twice"));
        }
    }
    let schema = match wire {
        Wire::OpenAi => "/function/parameters/type",
        Wire::Anthropic => "/input_schema/type",
    };
    for (k, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if t.pointer(schema) != Some(&json!("object")) {
            problems.push(format!(
                "tools[{k}]: the input schema is not of type object"
            ));
        }
        let root = schema.trim_end_matches("/type");
        if let Some(s) = t.pointer(root) {
            for key in ["anyOf", "oneOf", "allOf", "not"] {
                if s.get(key).is_some() {
                    problems.push(format!(
                        "tools[{k}]: `{key}` at the top of the input schema"
                    ));
                }
            }
            schema_protocol(&format!("tools[{k}]"), s, &mut problems);
        }
    }
    problems
}

/// Shapes inside a tool's schema that the APIs refuse: an array without one `items` schema
/// (a tuple list, or none), a `$ref` (not followed by every provider), `properties` that is
/// not an object.
fn schema_protocol(at: &str, s: &Value, problems: &mut Vec<String>) {
    let Some(o) = s.as_object() else { return };
    if o.contains_key("$ref") {
        problems.push(format!("{at}: a `$ref` in the schema"));
    }
    let is_array = o.get("type") == Some(&json!("array"))
        || o.get("type")
            .and_then(Value::as_array)
            .is_some_and(|ts| ts.contains(&json!("array")));
    if is_array && !o.get("items").is_some_and(Value::is_object) {
        problems.push(format!("{at}: an array schema without one `items` schema"));
    }
    if o.get("properties").is_some_and(|p| !p.is_object()) {
        problems.push(format!("{at}: `properties` is not an object"));
    }
    for (key, v) in o {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    schema_protocol(&format!("{at}.{key}.{name}"), sub, problems);
                }
            }
            "items" | "additionalProperties" | "not" => {
                schema_protocol(&format!("{at}.{key}"), v, problems)
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                    schema_protocol(&format!("{at}.{key}[{i}]"), sub, problems);
                }
            }
            _ => {}
        }
    }
}

/// What the Chat Completions API rejects: tool calls not answered right after, tool messages
/// answering nothing, a forced tool that is not offered, empty content without tool calls,
/// bad tools.
pub fn openai_protocol(body: &Value) -> Vec<String> {
    let mut problems = tools_protocol(Wire::OpenAi, body);
    if body["stream"] != true {
        problems.push("`stream` is not true".to_string());
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return vec!["no messages".into()];
    };
    let mut pending: Vec<String> = Vec::new();
    for (k, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("");
            match pending.iter().position(|p| p == id) {
                Some(p) => {
                    pending.remove(p);
                }
                None => problems.push(format!(
                    "messages[{k}]: tool message for `{id}`, which no preceding assistant \
                     message called (or was already answered)"
                )),
            }
            if !m["content"].is_string() {
                problems.push(format!("messages[{k}]: tool content is not text"));
            }
            continue;
        }
        if !pending.is_empty() {
            problems.push(format!(
                "messages[{k}] ({role}): tool calls {pending:?} were not answered by tool \
                 messages right after the assistant message"
            ));
            pending.clear();
        }
        match role {
            "system" | "user" => {
                if m["content"].as_str().is_none_or(str::is_empty) {
                    problems.push(format!("messages[{k}] ({role}): empty content"));
                }
            }
            "assistant" => {
                let calls = m["tool_calls"].as_array();
                for c in calls.into_iter().flatten() {
                    pending.push(c["id"].as_str().unwrap_or("").to_string());
                    let args = c["function"]["arguments"].as_str();
                    if args
                        .and_then(|a| serde_json::from_str::<Value>(a).ok())
                        .is_none()
                    {
                        problems.push(format!(
                            "messages[{k}]: tool call arguments are not a JSON text: {c}"
                        ));
                    }
                }
                if calls.is_none_or(Vec::is_empty) && m["content"].as_str().is_none() {
                    problems.push(format!("messages[{k}]: assistant without content or calls"));
                }
            }
            other => problems.push(format!("messages[{k}]: unknown role `{other}`")),
        }
    }
    if !pending.is_empty() {
        problems.push(format!("tool calls {pending:?} were never answered"));
    }
    if let Some(name) = body
        .pointer("/tool_choice/function/name")
        .and_then(Value::as_str)
    {
        if !offered_tools(Wire::OpenAi, body).iter().any(|t| t == name) {
            problems.push(format!("tool_choice forces `{name}`, which is not offered"));
        }
    }
    problems
}

/// What the Messages API rejects: a first message that is not the user's, roles that do not
/// alternate, empty text blocks, tool uses without results in the next user message, results
/// answering nothing or after text, a forced tool that is not offered, no `max_tokens`, more
/// than four cache breakpoints, bad tools.
pub fn anthropic_protocol(body: &Value) -> Vec<String> {
    let mut problems = tools_protocol(Wire::Anthropic, body);
    let breakpoints = body.to_string().matches("\"cache_control\"").count();
    if breakpoints > 4 {
        problems.push(format!(
            "{breakpoints} cache_control breakpoints (at most 4)"
        ));
    }
    if body["stream"] != true {
        problems.push("`stream` is not true".to_string());
    }
    if !body["max_tokens"].is_u64() {
        problems.push("no `max_tokens`".to_string());
    }
    for (k, b) in body["system"].as_array().into_iter().flatten().enumerate() {
        if b["text"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("system[{k}]: empty text block"));
        }
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return vec!["no messages".into()];
    };
    if messages[0]["role"] != "user" {
        problems.push("the first message is not the user's".into());
    }
    let mut pending: Vec<String> = Vec::new();
    for (k, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if k > 0 && messages[k - 1]["role"] == m["role"] {
            problems.push(format!("messages[{k}]: two `{role}` messages in a row"));
        }
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) if !a.is_empty() => a.clone(),
            _ => {
                problems.push(format!("messages[{k}]: empty content"));
                continue;
            }
        };
        let mut answered = Vec::new();
        let mut seen_text = false;
        for b in &blocks {
            if b["type"] == "text" {
                seen_text = true;
            } else if b["type"] == "tool_result" && seen_text {
                problems.push(format!(
                    "messages[{k}]: a tool_result after a text block (results must come first)"
                ));
            }
            match (role, b["type"].as_str().unwrap_or("")) {
                (_, "text") if b["text"].as_str().is_none_or(|t| t.trim().is_empty()) => {
                    problems.push(format!("messages[{k}]: empty text block"))
                }
                (_, "text") => {}
                ("assistant", "tool_use") => {
                    if !b["input"].is_object() {
                        problems.push(format!("messages[{k}]: tool_use input is not an object"));
                    }
                }
                ("user", "tool_result") => {
                    answered.push(b["tool_use_id"].as_str().unwrap_or("").to_string())
                }
                (r, t) => problems.push(format!("messages[{k}]: `{t}` block in a {r} message")),
            }
        }
        if !pending.is_empty() {
            let missing: Vec<&String> = pending.iter().filter(|p| !answered.contains(p)).collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "messages[{k}]: tool_use ids {missing:?} have no tool_result right after"
                ));
            }
        }
        for a in &answered {
            if !pending.contains(a) {
                problems.push(format!(
                    "messages[{k}]: tool_result for `{a}`, which the previous message did not call"
                ));
            }
        }
        pending = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap_or("").to_string())
            .collect();
    }
    if !pending.is_empty() {
        problems.push(format!("tool_use ids {pending:?} were never answered"));
    }
    if body.pointer("/tool_choice/type") == Some(&json!("tool")) {
        let name = body.pointer("/tool_choice/name").and_then(Value::as_str);
        let name = name.unwrap_or("");
        if !offered_tools(Wire::Anthropic, body)
            .iter()
            .any(|t| t == name)
        {
            problems.push(format!("tool_choice forces `{name}`, which is not offered"));
        }
    }
    problems
}
