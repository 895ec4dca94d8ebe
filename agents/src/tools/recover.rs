//! Recovering tool calls that a model got slightly wrong, where its intent is unambiguous.
//!
//! Small models (served by Ollama or llama.cpp) often call the right tool the wrong way:
//!
//! * **a name with other casing or separators** (`Add_Nodes`, `add-nodes`, `addNodes` for
//!   `add_nodes`): [`resolve_tool_name`] finds the one offered tool whose name is the same once
//!   case and separators are ignored; with none or several the name is left alone (the tool
//!   executor then lists the available tools);
//! * **arguments wrapped once too often** (a JSON string holding the object, or `{"arguments":
//!   {…}}` when the schema has no such property): [`unwrap_arguments`] unwraps them, but only
//!   when the result validates against the tool's schema;
//! * **a call written as text** instead of a tool call (`<tool_call>{…}</tool_call>`,
//!   `[tool_call]{…}[/tool_call]`, `[TOOL_CALLS]…`, a fenced `json` block or the whole answer
//!   being `{"name": …, "arguments": …}`): [`parse_text_calls`] reads the calls that parse and
//!   name an offered tool, and the text left around them.
//!
//! Each recovery is reported as a [`Recovery`], which the nodes log and emit so evaluations can
//! count them.

use super::validate_args;
use serde_json::{json, Map, Value};
use std::fmt;

/// One repair made to a model's tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// The tool name was matched ignoring case and separators.
    ToolName {
        /// The name the model gave.
        from: String,
        /// The offered tool it meant.
        to: String,
    },
    /// The arguments were unwrapped.
    Arguments {
        /// The tool.
        tool: String,
        /// `json_string` (a JSON text inside JSON) or `wrapper:<key>` (an object under one key).
        how: String,
    },
    /// The call was written as text and turned into a tool call.
    TextCall {
        /// The tool.
        tool: String,
        /// How it was written: `tag:<tag>`, `fenced` or `bare_json`.
        format: String,
    },
}

impl Recovery {
    /// A stable name of the kind: `tool_name`, `arguments` or `text_call`.
    pub fn kind(&self) -> &'static str {
        match self {
            Recovery::ToolName { .. } => "tool_name",
            Recovery::Arguments { .. } => "arguments",
            Recovery::TextCall { .. } => "text_call",
        }
    }

    /// The tool the recovered call goes to.
    pub fn tool(&self) -> &str {
        match self {
            Recovery::ToolName { to, .. } => to,
            Recovery::Arguments { tool, .. } | Recovery::TextCall { tool, .. } => tool,
        }
    }

    /// The custom stream event reporting it: `{"recovery": kind, "tool", "detail", "node",
    /// "call_id", "title"}`.
    pub fn event(&self, node: &str, call_id: &str) -> Value {
        json!({
            "recovery": self.kind(),
            "tool": self.tool(),
            "detail": self.detail(),
            "node": node,
            "call_id": call_id,
            "title": format!("recovered tool call: {self}"),
        })
    }

    fn detail(&self) -> String {
        match self {
            Recovery::ToolName { from, .. } => from.clone(),
            Recovery::Arguments { how, .. } => how.clone(),
            Recovery::TextCall { format, .. } => format.clone(),
        }
    }
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recovery::ToolName { from, to } => write!(f, "tool `{from}` read as `{to}`"),
            Recovery::Arguments { tool, how } => {
                write!(f, "arguments of `{tool}` unwrapped ({how})")
            }
            Recovery::TextCall { tool, format } => {
                write!(
                    f,
                    "`{tool}` call written as text ({format}) made a tool call"
                )
            }
        }
    }
}

/// A name without case and separators: `Add_Nodes`, `add-nodes`, `addNodes` → `addnodes`.
fn canonical(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The offered tool `name` stands for: itself when offered, else the only offered name equal
/// to it ignoring case and separators (`_`, `-`, `.`, spaces); `None` when there is no such
/// name or more than one.
pub fn resolve_tool_name<'a>(
    name: &str,
    offered: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    if let Some(exact) = offered.clone().into_iter().find(|n| *n == name) {
        return Some(exact);
    }
    let want = canonical(name);
    if want.is_empty() {
        return None;
    }
    let mut found = offered.into_iter().filter(|n| canonical(n) == want);
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// Keys a model wraps arguments in.
const WRAPPERS: [&str; 5] = ["arguments", "args", "parameters", "params", "input"];

/// Arguments that do not validate against `schema` but do once unwrapped (at most three
/// layers of: a JSON string holding the value, an object whose one key is `arguments`, `args`,
/// `parameters`, `params` or `input` and not a property of the schema). Returns the unwrapped
/// arguments and how (`json_string`, `wrapper:<key>`, joined by `+`); `None` when the
/// arguments are valid already or no unwrapping makes them valid.
pub fn unwrap_arguments(schema: &Value, args: &Value) -> Option<(Value, String)> {
    if validate_args(schema, args).is_ok() {
        return None;
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let mut current = args.clone();
    let mut steps: Vec<String> = Vec::new();
    for _ in 0..3 {
        let next = match &current {
            Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
                Ok(v) => {
                    steps.push("json_string".into());
                    v
                }
                Err(_) => return None,
            },
            Value::Object(m) if m.len() == 1 => {
                let (key, inner) = m.iter().next()?;
                let known = props.is_some_and(|p| p.contains_key(key));
                if known || !WRAPPERS.contains(&key.as_str()) {
                    return None;
                }
                steps.push(format!("wrapper:{key}"));
                inner.clone()
            }
            _ => return None,
        };
        if validate_args(schema, &next).is_ok() {
            return Some((next, steps.join("+")));
        }
        current = next;
    }
    None
}

/// A tool call read from text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// The offered tool it names.
    pub name: String,
    /// Its arguments as written (an object, or a JSON string holding one; `{}` when none were
    /// given).
    pub args: Value,
    /// How it was written: `tag:<tag>`, `fenced` or `bare_json`.
    pub format: String,
}

/// What [`parse_text_calls`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCalls {
    /// The calls, in text order.
    pub calls: Vec<TextCall>,
    /// The text with the recovered calls cut out, trimmed.
    pub remaining: String,
}

/// Tags models wrap calls in: (opening, closing). Matched ignoring ASCII case.
const TAGS: [(&str, Option<&str>); 5] = [
    ("<tool_call>", Some("</tool_call>")),
    ("[tool_call]", Some("[/tool_call]")),
    ("<tool_calls>", Some("</tool_calls>")),
    ("<function_call>", Some("</function_call>")),
    ("[tool_calls]", None),
];

/// Tool calls written as text: tagged blocks (see the module docs; a block left unclosed runs
/// to the end), fenced code blocks, or the whole text as one JSON call (or a list of them). A
/// call is `{"name", "arguments"}` (also `parameters`, `args`, `input`; arguments may be a
/// JSON string, kept as such) or `{"function": {"name", "arguments"}}`, and counts only when `resolve` maps
/// its name to an offered tool. `None` when no call was found.
pub fn parse_text_calls(text: &str, resolve: &dyn Fn(&str) -> Option<String>) -> Option<TextCalls> {
    // (start, end, calls) of every block that held calls.
    let mut blocks: Vec<(usize, usize, Vec<TextCall>)> = Vec::new();
    let lower = text.to_ascii_lowercase();
    for (open, close) in TAGS {
        let mut from = 0;
        while let Some(start) = lower[from..].find(open).map(|i| i + from) {
            let body_start = start + open.len();
            let (body_end, end) = close
                .and_then(|c| {
                    lower[body_start..]
                        .find(c)
                        .map(|i| (body_start + i, body_start + i + c.len()))
                })
                .unwrap_or((text.len(), text.len()));
            from = end.max(body_start);
            if overlaps(&blocks, start, end) {
                continue;
            }
            let found = calls_in(&text[body_start..body_end], resolve, &format!("tag:{open}"));
            if !found.is_empty() {
                blocks.push((start, end, found));
            }
        }
    }
    for (start, end, body) in fenced_blocks(text) {
        if overlaps(&blocks, start, end) {
            continue;
        }
        let found = calls_in(body, resolve, "fenced");
        if !found.is_empty() {
            blocks.push((start, end, found));
        }
    }
    if blocks.is_empty() {
        let calls = calls_in(text, resolve, "bare_json");
        return (!calls.is_empty()).then(|| TextCalls {
            calls,
            remaining: String::new(),
        });
    }
    blocks.sort_by_key(|b| b.0);
    let mut remaining = String::new();
    let mut at = 0;
    let mut calls = Vec::new();
    for (start, end, found) in blocks {
        remaining.push_str(&text[at..start]);
        at = end;
        calls.extend(found);
    }
    remaining.push_str(&text[at..]);
    Some(TextCalls {
        calls,
        remaining: remaining.trim().to_string(),
    })
}

fn overlaps(blocks: &[(usize, usize, Vec<TextCall>)], start: usize, end: usize) -> bool {
    blocks.iter().any(|&(s, e, _)| start < e && s < end)
}

/// Fenced code blocks: (start, end, body) with the fences and language tag excluded from the
/// body; an unclosed fence runs to the end.
fn fenced_blocks(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = text[from..].find("```").map(|i| i + from) {
        let after = start + 3;
        let body_start = text[after..]
            .find('\n')
            .map(|i| after + i + 1)
            .unwrap_or(text.len());
        let (body_end, end) = match text[body_start..].find("```") {
            Some(i) => (body_start + i, body_start + i + 3),
            None => (text.len(), text.len()),
        };
        out.push((start, end, &text[body_start..body_end]));
        from = end.max(after);
    }
    out
}

/// Every call in a piece of text: the JSON values it holds one after another (objects, or
/// lists of objects), read as calls.
fn calls_in(body: &str, resolve: &dyn Fn(&str) -> Option<String>, format: &str) -> Vec<TextCall> {
    let mut out = Vec::new();
    let mut values = serde_json::Deserializer::from_str(body.trim()).into_iter::<Value>();
    for value in values.by_ref() {
        let Ok(value) = value else { break };
        let items = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        for item in items {
            match as_call(&item, resolve) {
                Some((name, args)) => out.push(TextCall {
                    name,
                    args,
                    format: format.to_string(),
                }),
                None => return Vec::new(),
            }
        }
    }
    out
}

/// A JSON value as a call of an offered tool.
fn as_call(v: &Value, resolve: &dyn Fn(&str) -> Option<String>) -> Option<(String, Value)> {
    let obj = v.as_object()?;
    let inner = obj
        .get("function")
        .and_then(Value::as_object)
        .unwrap_or(obj);
    let name = inner.get("name").and_then(Value::as_str)?;
    let tool = resolve(name)?;
    let args = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| inner.get(*k))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    // A JSON string is kept as written: the arguments repair unwraps it when it validates.
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    (args.is_object() || args.is_string()).then_some((tool, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["add_nodes", "connect_nodes", "search"];

    fn resolve(name: &str) -> Option<String> {
        resolve_tool_name(name, TOOLS.iter().copied()).map(str::to_string)
    }

    #[test]
    fn names_match_ignoring_case_and_separators_when_unique() {
        for given in [
            "add_nodes",
            "Add_Nodes",
            "add-nodes",
            "addNodes",
            "ADD NODES",
        ] {
            assert_eq!(resolve(given).as_deref(), Some("add_nodes"), "{given}");
        }
        assert_eq!(resolve("add_node"), None);
        assert_eq!(resolve("__"), None);
        let twins = ["add_nodes", "addNodes"];
        assert_eq!(resolve_tool_name("AddNodes", twins.iter().copied()), None);
        assert_eq!(
            resolve_tool_name("addNodes", twins.iter().copied()),
            Some("addNodes")
        );
    }

    #[test]
    fn arguments_are_unwrapped_only_into_valid_ones() {
        let schema = json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "integer"}, "input": {"type": "string"}}});
        let ok = json!({"a": 1});
        assert_eq!(unwrap_arguments(&schema, &ok), None);
        assert_eq!(
            unwrap_arguments(&schema, &json!("{\"a\": 1}")),
            Some((ok.clone(), "json_string".into()))
        );
        assert_eq!(
            unwrap_arguments(&schema, &json!({"arguments": {"a": 1}})),
            Some((ok.clone(), "wrapper:arguments".into()))
        );
        assert_eq!(
            unwrap_arguments(&schema, &json!({"parameters": "{\"a\": 1}"})),
            Some((ok, "wrapper:parameters+json_string".into()))
        );
        // `input` is a property of this schema, so it is not a wrapper.
        assert_eq!(unwrap_arguments(&schema, &json!({"input": {"a": 1}})), None);
        // Unwrapped but still invalid: left alone.
        assert_eq!(
            unwrap_arguments(&schema, &json!({"args": {"a": "x"}})),
            None
        );
        assert_eq!(unwrap_arguments(&schema, &json!("not json")), None);
    }

    #[test]
    fn calls_written_as_text_are_read_in_order_with_the_rest_of_the_text() {
        let text = "I will add it.\n<tool_call>\n{\"name\": \"Add_Nodes\", \"arguments\": \
                    {\"name\": \"A\"}}\n</tool_call>\nthen [tool_call]{\"name\": \
                    \"connect_nodes\", \"arguments\": \"{\\\"x\\\": 1}\"}[/tool_call] done";
        let found = parse_text_calls(text, &resolve).unwrap();
        let names: Vec<(&str, &str)> = found
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.format.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("add_nodes", "tag:<tool_call>"),
                ("connect_nodes", "tag:[tool_call]")
            ]
        );
        assert_eq!(found.calls[1].args, json!("{\"x\": 1}"));
        assert_eq!(found.remaining, "I will add it.\n\nthen  done");
    }

    #[test]
    fn fenced_and_bare_json_calls_are_read_but_unknown_tools_are_not() {
        let fenced = "Sure:\n```json\n{\"function\": {\"name\": \"search\", \"arguments\": \
                      {\"q\": \"x\"}}}\n```";
        let found = parse_text_calls(fenced, &resolve).unwrap();
        assert_eq!(found.calls[0].name, "search");
        assert_eq!(found.calls[0].format, "fenced");
        assert_eq!(found.remaining, "Sure:");
        let bare = "[{\"name\": \"search\"}, {\"name\": \"add_nodes\", \"parameters\": {}}]";
        let found = parse_text_calls(bare, &resolve).unwrap();
        assert_eq!(found.calls.len(), 2);
        assert_eq!(found.calls[0].args, json!({}));
        assert_eq!(found.remaining, "");
        assert_eq!(
            parse_text_calls("{\"name\": \"delete_all\", \"arguments\": {}}", &resolve),
            None
        );
        assert_eq!(parse_text_calls("```json\n{\"a\": 1}\n```", &resolve), None);
        assert_eq!(parse_text_calls("plain answer", &resolve), None);
    }
}
