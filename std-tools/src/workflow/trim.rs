//! Trimming of a workflow shown to a model, after n8n's `trimWorkflowJSON`: every string inside
//! a node's `parameters` (at any depth, through objects and arrays) longer than the limit
//! (default 1000 characters) becomes [`OMITTED`]; objects, arrays, numbers and booleans are never
//! replaced as a whole, only their long strings; everything outside `nodes[].parameters` is
//! kept. [`trim_workflow_json`] adds n8n's gate: trim only when the whole workflow is estimated
//! over [`MAX_WORKFLOW_LENGTH_TOKENS`]. Graphs reach it through the `trim_workflow` template
//! filter, which std-tools registers with the `.ag` language.

use agentgraph_agents::models::budget::estimate_tokens;
use serde_json::{Map, Value};

/// The placeholder that replaces a trimmed parameter value.
pub const OMITTED: &str = "<value omitted - use get_node_parameter tool>";
/// Strings longer than this (in characters) are trimmed by default.
pub const DEFAULT_MAX_PARAM_CHARS: usize = 1000;
/// [`trim_workflow_json`] trims only workflows estimated over this many tokens.
pub const MAX_WORKFLOW_LENGTH_TOKENS: usize = 30_000;

fn trim_value(v: &Value, max: usize) -> Value {
    match v {
        Value::String(s) if s.chars().count() > max => Value::String(OMITTED.into()),
        Value::Array(items) => Value::Array(items.iter().map(|x| trim_value(x, max)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), trim_value(x, max)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// A copy of an n8n workflow (`{nodes: [{parameters}], connections, …}`) where every string
/// inside a node's `parameters` (at any depth) longer than `max_param_chars` characters is
/// replaced by [`OMITTED`]. Other fields, and anything that is not shaped as expected, are
/// copied unchanged.
pub fn trim_workflow_parameters(workflow: &Value, max_param_chars: usize) -> Value {
    let mut out = workflow.clone();
    if let Some(nodes) = out.get_mut("nodes").and_then(Value::as_array_mut) {
        for node in nodes {
            if let Some(params) = node.get_mut("parameters") {
                *params = trim_value(params, max_param_chars);
            }
        }
    }
    out
}

/// n8n's `trimWorkflowJSON`: the workflow unchanged when its JSON is estimated at most
/// [`MAX_WORKFLOW_LENGTH_TOKENS`], else [`trim_workflow_parameters`] with
/// [`DEFAULT_MAX_PARAM_CHARS`].
pub fn trim_workflow_json(workflow: &Value) -> Value {
    if estimate_tokens(&workflow.to_string()) <= MAX_WORKFLOW_LENGTH_TOKENS {
        workflow.clone()
    } else {
        trim_workflow_parameters(workflow, DEFAULT_MAX_PARAM_CHARS)
    }
}
