//! The prompt of the parameter updater: the instructions, the node-type-specific guides
//! (`std-tools/data/parameter-guides/*.md`) and the node's property definitions.

use crate::catalogue::{is_visible, parameters_with_defaults, NodeProperty, NodeTypeDescription};
use serde_json::{Map, Value};

/// Most characters of property definitions put in the prompt; properties past it are left
/// out (visible ones first), with a note saying how many.
pub const MAX_DEFINITION_CHARS: usize = 40_000;
/// Descriptions inside property definitions are cut to this many characters.
const MAX_DESCRIPTION_CHARS: usize = 300;

/// One node-type-specific prompt part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guide {
    /// Stable id (the file stem: `set`, `http_request`, …).
    pub id: &'static str,
    /// The text (markdown).
    pub text: &'static str,
}

macro_rules! guide {
    ($id:literal) => {
        Guide {
            id: $id,
            text: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/data/parameter-guides/",
                $id,
                ".md"
            )),
        }
    };
}

/// The updater's core instructions (always first).
pub const CORE: Guide = guide!("core");
/// n8n expression rules (for every node with text parameters).
pub const EXPRESSIONS: Guide = guide!("expressions");
/// Set / Edit Fields assignments.
pub const SET: Guide = guide!("set");
/// IF and Filter conditions.
pub const IF_FILTER: Guide = guide!("if_filter");
/// Switch rules.
pub const SWITCH: Guide = guide!("switch");
/// HTTP Request (node and tool).
pub const HTTP_REQUEST: Guide = guide!("http_request");
/// Code node and Code tool.
pub const CODE: Guide = guide!("code");
/// AI Agent and LLM chains (prompts, system message).
pub const AI_PROMPTS: Guide = guide!("ai_prompts");
/// Tool nodes and `$fromAI`.
pub const TOOL_NODES: Guide = guide!("tool_nodes");
/// Resource / operation nodes (Gmail, Slack, Sheets, …).
pub const RESOURCE_OPERATION: Guide = guide!("resource_operation");
/// `resourceLocator` values.
pub const RESOURCE_LOCATOR: Guide = guide!("resource_locator");
/// Webhook and form triggers.
pub const WEBHOOK_FORM: Guide = guide!("webhook_form");
/// Schedule trigger rules.
pub const SCHEDULE: Guide = guide!("schedule");

/// Every guide, core first.
pub const ALL_GUIDES: &[Guide] = &[
    CORE,
    EXPRESSIONS,
    SET,
    IF_FILTER,
    SWITCH,
    HTTP_REQUEST,
    CODE,
    AI_PROMPTS,
    TOOL_NODES,
    RESOURCE_OPERATION,
    RESOURCE_LOCATOR,
    WEBHOOK_FORM,
    SCHEDULE,
];

/// The guides that apply to a node of `node_type` (full name) described by `desc`, in prompt
/// order, [`CORE`] first.
pub fn guides_for(node_type: &str, desc: &NodeTypeDescription) -> Vec<Guide> {
    let short = crate::catalogue::short_name(node_type);
    let base = short.strip_suffix("Tool").unwrap_or(short);
    let mut out = vec![CORE];
    let has_text = desc.properties.iter().any(|p| {
        matches!(
            p.kind.as_str(),
            "string"
                | "json"
                | "fixedCollection"
                | "collection"
                | "assignmentCollection"
                | "filter"
        )
    });
    if has_text {
        out.push(EXPRESSIONS);
    }
    match base {
        "set" => out.push(SET),
        "if" | "filter" => out.push(IF_FILTER),
        "switch" => out.push(SWITCH),
        "httpRequest" | "toolHttpRequest" => out.push(HTTP_REQUEST),
        "code" | "toolCode" => out.push(CODE),
        "webhook" | "formTrigger" | "form" | "respondToWebhook" => out.push(WEBHOOK_FORM),
        "scheduleTrigger" => out.push(SCHEDULE),
        _ => {}
    }
    let is_langchain = node_type.starts_with(crate::catalogue::LANGCHAIN_PACKAGE);
    let prompt_node = desc.properties.iter().any(|p| p.name == "promptType")
        || desc.properties.iter().any(|p| p.name == "systemMessage")
        || (is_langchain && (base == "agent" || base.starts_with("chain")));
    if prompt_node {
        out.push(AI_PROMPTS);
    }
    if super::expressions::allows_from_ai(node_type) {
        out.push(TOOL_NODES);
    }
    let names = |n: &str| desc.properties.iter().any(|p| p.name == n);
    if names("resource") && names("operation") {
        out.push(RESOURCE_OPERATION);
    }
    if has_kind(&desc.properties, "resourceLocator") {
        out.push(RESOURCE_LOCATOR);
    }
    out
}

fn has_kind(props: &[NodeProperty], kind: &str) -> bool {
    props.iter().any(|p| p.kind == kind)
}

/// The cacheable instructions part: the guides joined.
pub fn instructions(guides: &[Guide]) -> String {
    guides
        .iter()
        .map(|g| g.text.trim())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Property kinds that are UI-only and never parameters worth showing.
const UI_KINDS: &[&str] = &["notice", "callout", "button", "curlImport"];

/// Keys of a property definition dropped from the prompt (UI or routing details).
const DROPPED_KEYS: &[&str] = &[
    "routing",
    "hint",
    "placeholder",
    "extractValue",
    "isNodeSetting",
    "noDataExpression",
    "validateType",
    "ignoreValidationDuringExecution",
    "action",
    "builderHint",
];

/// The properties worth showing for this update, as compact JSON (one line), with the number
/// left out for size. A property is shown when it is visible for the current parameters
/// (defaults filled in), when the changes mention its name or label, or when it becomes
/// visible once the option values the changes mention are set (`operation: reply`).
/// Visible properties are kept first when the text would pass [`MAX_DEFINITION_CHARS`].
pub fn property_definitions(
    desc: &NodeTypeDescription,
    current: &Map<String, Value>,
    version: f64,
    changes: &[String],
) -> (String, usize) {
    let with_defaults = parameters_with_defaults(desc, &Value::Object(current.clone()), version);
    let text = changes.join("\n").to_lowercase();
    // Hypothetical parameters: option values the changes mention, set on top.
    let mut hypothetical = with_defaults.clone();
    for p in &desc.properties {
        if !matches!(p.kind.as_str(), "options" | "boolean") {
            continue;
        }
        for opt in p.options.iter().flatten() {
            if let Some(v) = opt.get("value").and_then(Value::as_str) {
                if v.len() >= 3 && text.contains(&v.to_lowercase()) {
                    hypothetical.insert(p.name.clone(), Value::String(v.to_string()));
                }
            }
        }
    }
    let mut priority: Vec<(usize, u8)> = Vec::new();
    for (i, p) in desc.properties.iter().enumerate() {
        if UI_KINDS.contains(&p.kind.as_str()) {
            continue;
        }
        let opts = p.display_options.as_ref();
        let rank = if is_visible(opts, &with_defaults, version) {
            0
        } else if mentioned(p, &text) || is_visible(opts, &hypothetical, version) {
            1
        } else {
            continue;
        };
        priority.push((i, rank));
    }
    let mut ordered = priority.clone();
    ordered.sort_by_key(|(i, rank)| (*rank, *i));
    let mut chosen: Vec<(usize, Value)> = Vec::new();
    let mut size = 2;
    let mut left_out = 0;
    for (i, _) in ordered {
        let v = compact_property(&desc.properties[i]);
        let len = v.to_string().len() + 1;
        if size + len > MAX_DEFINITION_CHARS {
            left_out += 1;
            continue;
        }
        size += len;
        chosen.push((i, v));
    }
    chosen.sort_by_key(|(i, _)| *i);
    let list = Value::Array(chosen.into_iter().map(|(_, v)| v).collect());
    (list.to_string(), left_out)
}

fn mentioned(p: &NodeProperty, text: &str) -> bool {
    (p.name.len() >= 3 && text.contains(&p.name.to_lowercase()))
        || (p.display_name.len() >= 3 && text.contains(&p.display_name.to_lowercase()))
}

/// A property definition without UI details, descriptions cut short.
pub fn compact_property(p: &NodeProperty) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    compact_value(&mut v);
    v
}

fn compact_value(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for k in DROPPED_KEYS {
                map.remove(*k);
            }
            if let Some(Value::String(d)) = map.get_mut("description") {
                if d.chars().count() > MAX_DESCRIPTION_CHARS {
                    let cut: String = d.chars().take(MAX_DESCRIPTION_CHARS).collect();
                    *d = format!("{cut}…");
                }
            }
            for (_, child) in map.iter_mut() {
                compact_value(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(compact_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Catalogue;

    fn catalogue() -> Catalogue {
        match Catalogue::builtin() {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    fn ids(g: &[Guide]) -> Vec<&'static str> {
        g.iter().map(|g| g.id).collect()
    }

    #[test]
    fn guides_by_node_type() {
        let c = catalogue();
        let get = |t: &str| c.get(t, None).cloned().unwrap_or_default();
        let set = get("n8n-nodes-base.set");
        assert_eq!(
            ids(&guides_for("n8n-nodes-base.set", &set)),
            ["core", "expressions", "set"]
        );
        let http = get("n8n-nodes-base.httpRequest");
        assert!(ids(&guides_for("n8n-nodes-base.httpRequest", &http)).contains(&"http_request"));
        let gmail_tool = get("n8n-nodes-base.gmailTool");
        let g = ids(&guides_for("n8n-nodes-base.gmailTool", &gmail_tool));
        assert!(
            g.contains(&"tool_nodes") && g.contains(&"resource_operation"),
            "{g:?}"
        );
        let agent = get("@n8n/n8n-nodes-langchain.agent");
        assert!(ids(&guides_for("@n8n/n8n-nodes-langchain.agent", &agent)).contains(&"ai_prompts"));
        let slack = get("n8n-nodes-base.slack");
        assert!(ids(&guides_for("n8n-nodes-base.slack", &slack)).contains(&"resource_locator"));
        let sched = get("n8n-nodes-base.scheduleTrigger");
        assert!(ids(&guides_for("n8n-nodes-base.scheduleTrigger", &sched)).contains(&"schedule"));
        for g in ALL_GUIDES {
            assert!(g.text.len() > 200, "guide {} is too short", g.id);
        }
    }

    #[test]
    fn definitions_follow_visibility_and_mentions() {
        let c = catalogue();
        let gmail = c
            .get("n8n-nodes-base.gmail", None)
            .cloned()
            .unwrap_or_default();
        let (defs, left_out) = property_definitions(&gmail, &Map::new(), 2.1, &[]);
        assert_eq!(left_out, 0);
        assert!(defs.contains("\"sendTo\""), "{defs}");
        assert!(!defs.contains("\"messageId\""), "{defs}");
        let (defs, _) =
            property_definitions(&gmail, &Map::new(), 2.1, &["Reply to the email".into()]);
        assert!(defs.contains("\"messageId\""), "{defs}");
        let http = c
            .get("n8n-nodes-base.httpRequest", None)
            .cloned()
            .unwrap_or_default();
        let (defs, _) = property_definitions(&http, &Map::new(), 4.2, &[]);
        assert!(
            !defs.contains("curlImport") && !defs.contains("placeholder"),
            "{defs}"
        );
    }
}
