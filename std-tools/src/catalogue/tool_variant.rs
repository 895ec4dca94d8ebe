//! The `…Tool` variants n8n generates at load time for every `usableAsTool` description.

use serde_json::{json, Map, Value};

use super::types::{Codex, NodeProperty, NodeTypeDescription, PortsSpec};

/// Deep-merges `patch` into `target` (objects merged key by key, everything else replaced).
fn deep_merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        deep_merge(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// Builds the tool variant of a `usableAsTool` description, as n8n's loader and
/// `convertNodeToAiTool` do: replacements merged first, then name + `Tool`, displayName +
/// ` Tool`, `inputs: []`, `outputs: ["ai_tool"]`, `usableAsTool` removed, a required
/// `toolDescription` property (plus `descriptionType` when the node has `resource` /
/// `operation`) inserted after the last `callout`, codex set to AI → Tools.
/// Returns `None` when the description is not usable as a tool.
pub fn tool_variant(desc: &NodeTypeDescription) -> Option<NodeTypeDescription> {
    if !desc.is_usable_as_tool() {
        return None;
    }
    let mut d = desc.clone();
    if let Some(Value::Object(o)) = &desc.usable_as_tool {
        if let Some(replacements) = o.get("replacements") {
            if let Ok(mut as_value) = serde_json::to_value(&d) {
                deep_merge(&mut as_value, replacements);
                if let Ok(merged) = serde_json::from_value::<NodeTypeDescription>(as_value) {
                    d = merged;
                }
            }
        }
    }
    d.name.push_str("Tool");
    d.display_name.push_str(" Tool");
    d.inputs = PortsSpec::List(Vec::new());
    d.outputs = PortsSpec::List(vec![Value::String("ai_tool".into())]);
    d.usable_as_tool = None;

    let has_resource_or_operation = d
        .properties
        .iter()
        .any(|p| p.name == "resource" || p.name == "operation");
    if !d.properties.iter().any(|p| p.name == "toolDescription") {
        let insert_at = d
            .properties
            .iter()
            .rposition(|p| p.kind == "callout")
            .map_or(0, |i| i + 1);
        let mut desc_prop = NodeProperty {
            name: "toolDescription".into(),
            display_name: "Description".into(),
            kind: "string".into(),
            default: Some(Value::String(desc.description.clone())),
            required: Some(true),
            description: Some(
                "Explain to the LLM what this tool does, a good, specific description would allow LLMs to produce expected results much more often"
                    .into(),
            ),
            type_options: Some(json!({"rows": 2})),
            ..Default::default()
        };
        if has_resource_or_operation {
            desc_prop.display_options = Some(json!({"show": {"descriptionType": ["manual"]}}));
            let mut extra = Map::new();
            extra.insert("noDataExpression".into(), Value::Bool(true));
            let description_type = NodeProperty {
                name: "descriptionType".into(),
                display_name: "Tool Description".into(),
                kind: "options".into(),
                default: Some(Value::String("auto".into())),
                options: Some(vec![
                    json!({"name": "Set Automatically", "value": "auto", "description": "Automatically set based on resource and operation"}),
                    json!({"name": "Set Manually", "value": "manual", "description": "Manually set the description"}),
                ]),
                extra,
                ..Default::default()
            };
            d.properties.insert(insert_at, desc_prop);
            d.properties.insert(insert_at, description_type);
        } else {
            d.properties.insert(insert_at, desc_prop);
        }
    }

    let old = d.codex.take().unwrap_or_default();
    let tools_sub = old
        .subcategories
        .as_ref()
        .and_then(|s| s.get("Tools"))
        .cloned()
        .unwrap_or_else(|| json!(["Other Tools"]));
    let mut subcategories = Map::new();
    subcategories.insert("AI".into(), json!(["Tools"]));
    subcategories.insert("Tools".into(), tools_sub);
    let mut extra = Map::new();
    if let Some(resources) = old.extra.get("resources") {
        extra.insert("resources".into(), resources.clone());
    }
    d.codex = Some(Codex {
        categories: Some(vec!["AI".into()]),
        subcategories: Some(Value::Object(subcategories)),
        alias: old.alias,
        extra,
    });
    Some(d)
}
