//! The workflow body n8n's public API accepts: its schemas refuse any property they do not
//! list (`additionalProperties: false` on the workflow, each node and the settings), so a
//! builder or exported workflow is reduced to those properties before it is sent.

use serde_json::{json, Map, Value};

/// The workflow properties a create or update may carry (n8n 1.123's `workflow` schema,
/// read-only ones left out).
const WORKFLOW_KEYS: [&str; 5] = ["name", "nodes", "connections", "settings", "staticData"];

/// The node properties n8n's `node` schema lists (read-only ones left out).
const NODE_KEYS: [&str; 18] = [
    "id",
    "name",
    "webhookId",
    "disabled",
    "notesInFlow",
    "notes",
    "type",
    "typeVersion",
    "executeOnce",
    "alwaysOutputData",
    "retryOnFail",
    "maxTries",
    "waitBetweenTries",
    "continueOnFail",
    "onError",
    "position",
    "parameters",
    "credentials",
];

/// The workflow settings n8n's `workflowSettings` schema lists.
pub const SETTINGS_KEYS: [&str; 12] = [
    "saveExecutionProgress",
    "saveManualExecutions",
    "saveDataErrorExecution",
    "saveDataSuccessExecution",
    "executionTimeout",
    "errorWorkflow",
    "timezone",
    "executionOrder",
    "callerPolicy",
    "callerIds",
    "timeSavedPerExecution",
    "availableInMCP",
];

/// The name n8n gives a workflow nobody named.
const DEFAULT_NAME: &str = "My workflow";

fn keep(v: &Value, keys: &[&str]) -> Map<String, Value> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, v)| keys.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `workflow` as n8n's public API takes it: only the properties its schemas list; a missing
/// or empty name becomes n8n's default, missing settings `{"executionOrder": "v1"}` (what
/// n8n's editor writes), missing connections `{}`, a node without parameters `{}`.
pub fn workflow_for_n8n(workflow: &Value) -> Value {
    let mut out = keep(workflow, &WORKFLOW_KEYS);
    let name = workflow["name"].as_str().map(str::trim).unwrap_or_default();
    out.insert(
        "name".into(),
        json!(if name.is_empty() { DEFAULT_NAME } else { name }),
    );
    let nodes: Vec<Value> = workflow["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| {
                    let mut node = keep(n, &NODE_KEYS);
                    node.entry("parameters").or_insert_with(|| json!({}));
                    node.entry("position").or_insert_with(|| json!([0, 0]));
                    Value::Object(node)
                })
                .collect()
        })
        .unwrap_or_default();
    out.insert("nodes".into(), Value::Array(nodes));
    if !out.get("connections").is_some_and(Value::is_object) {
        out.insert("connections".into(), json!({}));
    }
    let mut settings = keep(&workflow["settings"], &SETTINGS_KEYS);
    settings
        .entry("executionOrder")
        .or_insert_with(|| json!("v1"));
    out.insert("settings".into(), Value::Object(settings));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_schemas_list_is_sent() {
        let wf = json!({
            "id": "x", "active": true, "pinData": {}, "meta": {}, "tags": [],
            "name": "  Orders ",
            "nodes": [{"name": "A", "type": "n8n-nodes-base.set", "typeVersion": 3.4,
                       "position": [1, 2], "extra": 1, "issues": {}}],
            "connections": {"A": {"main": [[]]}},
            "settings": {"executionOrder": "v0", "binaryMode": "x"},
        });
        assert_eq!(
            workflow_for_n8n(&wf),
            json!({
                "name": "Orders",
                "nodes": [{"name": "A", "type": "n8n-nodes-base.set", "typeVersion": 3.4,
                           "position": [1, 2], "parameters": {}}],
                "connections": {"A": {"main": [[]]}},
                "settings": {"executionOrder": "v0"},
            })
        );
    }

    #[test]
    fn an_empty_workflow_still_has_what_n8n_requires() {
        assert_eq!(
            workflow_for_n8n(&json!({})),
            json!({"name": "My workflow", "nodes": [], "connections": {},
                   "settings": {"executionOrder": "v1"}})
        );
    }
}
