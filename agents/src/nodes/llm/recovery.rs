//! The `llm` node's repair of an answer's tool calls ([`crate::tools::recover`]): names matched
//! ignoring case and separators, arguments unwrapped, calls written as text made real calls.

use crate::models::{ModelResponse, ToolCall, ToolChoice, ToolSpec};
use crate::tools::recover::{parse_text_calls, resolve_tool_name, unwrap_arguments, Recovery};
use agentgraph_runtime::stable_id;
use serde_json::Value;

/// What [`recover_calls`] changed.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// Each repair, with the id of the call it concerns.
    pub repairs: Vec<(Recovery, String)>,
    /// The answer's original text, when calls were read from it.
    pub original_text: Option<String>,
}

/// The offered tool `name` stands for (see [`resolve_tool_name`]).
fn resolve(tools: &[ToolSpec], name: &str) -> Option<String> {
    resolve_tool_name(name, tools.iter().map(|t| t.name.as_str())).map(str::to_string)
}

/// Repairs `call` in place: its name, then its arguments against the tool's schema.
fn repair(tools: &[ToolSpec], call: &mut ToolCall, out: &mut Vec<(Recovery, String)>) {
    if let Some(name) = resolve(tools, &call.name).filter(|n| *n != call.name) {
        let from = std::mem::replace(&mut call.name, name.clone());
        out.push((Recovery::ToolName { from, to: name }, call.id.clone()));
    }
    let Some(spec) = tools.iter().find(|t| t.name == call.name) else {
        return;
    };
    if let Some((args, how)) = unwrap_arguments(&spec.input_schema, &call.args) {
        call.args = args;
        let tool = call.name.clone();
        out.push((Recovery::Arguments { tool, how }, call.id.clone()));
    }
}

/// Repairs the tool calls of `response`, an answer to a request that offered `tools`. An
/// answer without tool calls whose text holds calls of offered tools (and a tool choice other
/// than `none`) gets them as real calls, with ids derived from `msg_id`; its text keeps only
/// what surrounded them.
pub(crate) fn recover_calls(
    response: &mut ModelResponse,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    msg_id: &str,
) -> Recovered {
    let mut out = Recovered::default();
    if tools.is_empty() {
        return out;
    }
    for call in &mut response.tool_calls {
        repair(tools, call, &mut out.repairs);
    }
    if !response.tool_calls.is_empty() || *choice == ToolChoice::None {
        return out;
    }
    let Some(found) = parse_text_calls(&response.text, &|n| resolve(tools, n)) else {
        return out;
    };
    for (i, text_call) in found.calls.into_iter().enumerate() {
        let id = format!("call_{}", stable_id(&[msg_id, "text", &i.to_string()]));
        let mut call = ToolCall {
            id: id.clone(),
            name: text_call.name.clone(),
            args: text_call.args,
        };
        let recovery = Recovery::TextCall {
            tool: text_call.name,
            format: text_call.format,
        };
        out.repairs.push((recovery, id));
        repair(tools, &mut call, &mut out.repairs);
        response.tool_calls.push(call);
    }
    out.original_text = Some(std::mem::replace(&mut response.text, found.remaining));
    out
}

/// The answer's message with the original text of recovered calls kept beside the content
/// (`recovered_from_text`), where providers do not send it back to the model.
pub(crate) fn mark(mut message: Value, recovered: &Recovered) -> Value {
    if let Some(text) = &recovered.original_text {
        message["recovered_from_text"] = Value::String(text.clone());
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object", "required": ["q"],
                "properties": {"q": {"type": "string"}}}),
        }
    }

    #[test]
    fn text_calls_become_real_calls_with_stable_ids() {
        let tools = [spec("search")];
        let mut r = ModelResponse {
            text: "Looking.\n<tool_call>{\"name\": \"Search\", \"arguments\": {\"q\": \"x\"}}</tool_call>"
                .into(),
            ..Default::default()
        };
        let got = recover_calls(&mut r, &tools, &ToolChoice::Auto, "ai-1");
        assert_eq!(r.text, "Looking.");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].name, "search");
        assert_eq!(r.tool_calls[0].args, json!({"q": "x"}));
        let kinds: Vec<&str> = got.repairs.iter().map(|(r, _)| r.kind()).collect();
        assert_eq!(kinds, ["text_call"]);
        let mut again = ModelResponse {
            text: got.original_text.clone().unwrap(),
            ..Default::default()
        };
        recover_calls(&mut again, &tools, &ToolChoice::Auto, "ai-1");
        assert_eq!(again.tool_calls[0].id, r.tool_calls[0].id);
        let mut none = ModelResponse {
            text: got.original_text.unwrap(),
            ..Default::default()
        };
        recover_calls(&mut none, &tools, &ToolChoice::None, "ai-1");
        assert!(none.tool_calls.is_empty());
    }
}
