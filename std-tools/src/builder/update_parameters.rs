//! `update_node_parameters`: configures one node's parameters from natural-language changes
//! with a nested, structured model call (n8n's parameter updater chain).
//!
//! Arguments: `{"nodeId": "…", "changes": ["Set the URL to …", "Set method to POST"]}` — the
//! node's id (its name is accepted as a fallback) and the changes to apply.
//!
//! The tool reads the workflow (settings `workflow_channel`, default `workflow`; operations
//! already queued in the operations channel are applied first, so a node added earlier in the
//! same batch is found), finds the node and its type description, and asks the model of the
//! tool executor ([`ToolContext::model`]) for the COMPLETE new parameters object through
//! [`complete_structured`] (schema `{parameters: object}`, one repair). The request:
//!
//! * cacheable system parts: the updater instructions with the node-type-specific guides that
//!   apply ([`prompts::guides_for`]), then the node's property definitions (visible or
//!   mentioned properties only, compact JSON, at most [`prompts::MAX_DEFINITION_CHARS`]);
//! * a non-cacheable system part: the workflow (trimmed with [`trim_workflow_json`]), the
//!   selected node (name, type, version, current parameters), the requested changes and the
//!   original user request (the last human message of the `messages` channel, settings
//!   `messages_channel`);
//! * one human message asking for the update.
//!
//! The answer is post-processed: missing `=` expression prefixes are added
//! ([`fix_expression_prefixes`]); `$fromAI` in a node whose type does not end with `Tool` is
//! refused (`FROMAI_NOT_ALLOWED`); top-level keys that are not properties of the node type are
//! **kept** (n8n keeps unknown parameters too) and named in the message so that the agent can
//! remove them.
//!
//! Output: a text message
//!
//! ```text
//! Successfully updated parameters for node "HTTP Request":
//! - Set the URL to https://api.weather.com/v1/forecast
//! - Set method to POST
//! Parameters changed: added url; modified method
//! Expression prefixes fixed: url
//! ```
//!
//! and one operation appended to the operations channel (settings `operations_channel`,
//! default `operations`): `{"type": "updateNode", "nodeId": "…", "updates": {"parameters":
//! {…}}}` with the complete new parameters.
//!
//! Errors (codes): `NO_CHANGES` (empty change list), `INVALID_INPUT` (no `nodeId`),
//! `INVALID_WORKFLOW` (the workflow channel does not hold a workflow), `NODE_NOT_FOUND`,
//! `NODE_TYPE_NOT_FOUND`, `NO_MODEL`, `PARAMETER_UPDATE_FAILED` (model error, or no valid
//! answer after the repair), `FROMAI_NOT_ALLOWED`, `WOULD_BREAK_CONNECTIONS` (the new
//! parameters remove a connected port and the requested changes asked for that; see
//! [`connections`]: a connection-shaping key the changes did not mention keeps its old value
//! instead, and the message says so).

pub mod connections;
pub mod expressions;
pub mod prompts;

pub use connections::{preserve_connections, Preserved};
pub use expressions::{
    allows_from_ai, changed_keys, find_from_ai, fix_expression_prefixes, ChangedKeys,
};
pub use prompts::{guides_for, property_definitions, Guide, MAX_DEFINITION_CHARS};

use super::state::{current_workflow, depends_on_batch};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::trim::trim_workflow_json;
use crate::workflow::{Workflow, WorkflowNode};
use agentgraph_agents::models::structured::{complete_structured, StructuredError};
use agentgraph_agents::models::{CallContext, ModelRequest, SystemPart};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The tool's name.
pub const TOOL_NAME: &str = "update_node_parameters";
/// Default output-token limit of the nested call (settings `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The JSON schema of the structured answer: `{parameters: object}`.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "parameters": {
                "type": "object",
                "description": "The COMPLETE new parameters object of the node: unchanged \
                                parameters included, requested changes applied."
            }
        },
        "required": ["parameters"]
    })
}

/// The `update_node_parameters` tool (see the module docs).
#[derive(Debug, Clone)]
pub struct UpdateNodeParameters {
    catalogue: Arc<Catalogue>,
}

impl UpdateNodeParameters {
    /// The tool over a node-type catalogue.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        UpdateNodeParameters { catalogue }
    }
}

fn setting<'a>(ctx: &'a ToolContext, key: &str, default: &'a str) -> &'a str {
    ctx.settings()
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or(default)
}

/// The text of the last human message of `messages`, if any.
fn last_human_text(messages: Option<&Value>) -> Option<String> {
    let list = messages?.as_array()?;
    let msg = list
        .iter()
        .rev()
        .find(|m| m.get("type").and_then(Value::as_str) == Some("human"))?;
    match msg.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        _ => None,
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Builds the nested model request for updating `node` (see the module docs for its parts).
pub fn build_request(
    catalogue_desc: &crate::catalogue::NodeTypeDescription,
    workflow: &Workflow,
    node: &WorkflowNode,
    changes: &[String],
    user_request: Option<&str>,
) -> ModelRequest {
    build_request_with_context(catalogue_desc, workflow, node, changes, user_request, None)
}

/// Like [`build_request`], also showing the model what the caller's n8n knows about the
/// workflow (`execution_data`, `execution_schema`: the `workflow_context` channel), so
/// expressions use real field names.
pub fn build_request_with_context(
    catalogue_desc: &crate::catalogue::NodeTypeDescription,
    workflow: &Workflow,
    node: &WorkflowNode,
    changes: &[String],
    user_request: Option<&str>,
    workflow_context: Option<&Value>,
) -> ModelRequest {
    let guides = guides_for(&node.node_type, catalogue_desc);
    let (definitions, left_out) =
        property_definitions(catalogue_desc, &node.parameters, node.version(), changes);
    let mut definition_text = format!(
        "The node accepts these properties:\n<node_properties_definition>\n{definitions}\n\
         </node_properties_definition>"
    );
    if left_out > 0 {
        definition_text.push_str(&format!(
            "\n({left_out} less relevant properties were left out for size.)"
        ));
    }
    let changes_text: String = changes
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}. {}\n", i + 1, c.trim()))
        .collect();
    let workflow_json = trim_workflow_json(&workflow.to_value());
    let mut context = String::new();
    if let Some(req) = user_request {
        context.push_str(&format!(
            "<user_workflow_request>\n{req}\n</user_workflow_request>\n\n"
        ));
    }
    let known = workflow_context.filter(|v| match v {
        Value::Object(o) => !o.is_empty(),
        Value::Null => false,
        _ => true,
    });
    if let Some(known) = known {
        context.push_str(&format!(
            "What the n8n instance knows about this workflow (last execution's data, the data \
             shape each node produces); use these field names in expressions:\n\
             <workflow_context>\n{}\n</workflow_context>\n\n",
            pretty(known)
        ));
    }
    context.push_str(&format!(
        "<current_workflow_json>\n{}\n</current_workflow_json>\n\n<selected_node>\nName: {}\n\
         Type: {}\nType version: {}\nCurrent Parameters: {}\n</selected_node>\n\n\
         <requested_changes>\n{changes_text}</requested_changes>",
        workflow_json,
        node.name,
        node.node_type,
        node.type_version,
        pretty(&Value::Object(node.parameters.clone())),
    ));
    ModelRequest {
        system: vec![
            SystemPart {
                text: prompts::instructions(&guides),
                cacheable: true,
            },
            SystemPart {
                text: definition_text,
                cacheable: true,
            },
            SystemPart {
                text: context,
                cacheable: false,
            },
        ],
        messages: vec![json!({
            "type": "human",
            "id": "update-node-parameters",
            "content": format!(
                "Apply the requested changes to node \"{}\" and call `respond` with the \
                 COMPLETE new parameters object.",
                node.name
            ),
        })],
        max_tokens: Some(DEFAULT_MAX_TOKENS),
        ..ModelRequest::default()
    }
}

#[async_trait]
impl Tool for UpdateNodeParameters {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        "Update the parameters of an existing node from natural-language changes. Give the \
         node's id and a list of precise changes (\"Set the URL to https://…\", \"Set method \
         to POST\", \"Add header Content-Type with value application/json\"). The node's \
         complete new parameters are generated from its type's property definitions; \
         unchanged parameters are kept. Use $fromAI only in tool nodes (types ending in Tool \
         and the LangChain tool nodes such as toolWorkflow, toolCode, toolHttpRequest)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeId": {"type": "string", "description": "The id of the node to update"},
                "changes": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Natural-language changes to apply, one per entry"
                }
            },
            "required": ["nodeId", "changes"]
        })
    }

    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        depends_on_batch(error)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let node_id = args
            .get("nodeId")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                ToolError::new(
                    "INVALID_INPUT",
                    "give `nodeId`: the id of the node to update",
                )
            })?;
        let changes: Vec<String> = args
            .get("changes")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        if changes.is_empty() {
            return Err(ToolError::new(
                "NO_CHANGES",
                "`changes` is empty: list at least one change, e.g. \"Set the URL to https://…\"",
            ));
        }
        let workflow = current_workflow(ctx)?;
        let node = workflow
            .node_by_id(node_id)
            .or_else(|| workflow.node_by_name(node_id))
            .ok_or_else(|| {
                ToolError::new(
                    "NODE_NOT_FOUND",
                    format!(
                        "no node with id `{node_id}` in the workflow; use the id returned by \
                         add_nodes (nodes: {})",
                        workflow
                            .nodes
                            .iter()
                            .map(|n| format!("{} ({})", n.name, n.id.as_deref().unwrap_or("no id")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
        let desc = self
            .catalogue
            .get(&node.node_type, Some(node.version()))
            .ok_or_else(|| {
                ToolError::new(
                    "NODE_TYPE_NOT_FOUND",
                    format!(
                        "node type `{}` of node \"{}\" is not in the catalogue; search_nodes \
                         finds the available types",
                        node.node_type, node.name
                    ),
                )
            })?;
        let model = ctx.model()?;
        let user_request = last_human_text(ctx.state().get(setting(
            ctx,
            "messages_channel",
            "messages",
        )));
        let known = ctx
            .state()
            .get(setting(ctx, "workflow_context_channel", "workflow_context"));
        let mut req = build_request_with_context(
            desc,
            &workflow,
            node,
            &changes,
            user_request.as_deref(),
            known,
        );
        if let Some(n) = ctx.settings().get("max_tokens").and_then(Value::as_u64) {
            req.max_tokens = u32::try_from(n).ok();
        }
        ctx.emit_custom(json!({
            "tool": TOOL_NAME, "status": "running",
            "title": format!("Updating parameters of \"{}\"", node.name)
        }))
        .await;
        let call_ctx = CallContext::for_task(ctx);
        let answer = complete_structured(model.as_ref(), &req, &answer_schema(), &call_ctx)
            .await
            .map_err(|e| {
                let detail = match &e {
                    StructuredError::Model(m) => format!("the model call failed: {m}"),
                    StructuredError::Invalid { .. } => e.to_string(),
                };
                ToolError::new(
                    "PARAMETER_UPDATE_FAILED",
                    format!(
                        "could not update the parameters of \"{}\": {detail}",
                        node.name
                    ),
                )
            })?;
        let mut parameters = match answer.value.get("parameters") {
            Some(p @ Value::Object(_)) => p.clone(),
            _ => {
                return Err(ToolError::new(
                    "PARAMETER_UPDATE_FAILED",
                    "the model's answer has no `parameters` object",
                ))
            }
        };
        let fixed = fix_expression_prefixes(&mut parameters);
        let from_ai = find_from_ai(&parameters);
        if !from_ai.is_empty() && !allows_from_ai(&node.node_type) {
            return Err(ToolError::new(
                "FROMAI_NOT_ALLOWED",
                format!(
                    "node \"{}\" ({}) is not a tool node, so it cannot use $fromAI (used in: {}). \
                     $fromAI only works in nodes used as AI tools (types ending in `Tool`, and \
                     the LangChain tool nodes such as toolWorkflow, toolCode, toolHttpRequest) \
                     connected to an AI agent. Reference input data instead (e.g. `={{{{ $json.field }}}}`), or \
                     use the tool variant of the node.",
                    node.name,
                    node.node_type,
                    from_ai.join(", ")
                ),
            ));
        }
        let Value::Object(new_params) = parameters else {
            return Err(ToolError::new(
                "PARAMETER_UPDATE_FAILED",
                "parameters must be an object",
            ));
        };
        let preserved =
            preserve_connections(&self.catalogue, desc, &workflow, node, new_params, &changes)?;
        let mut new_params = preserved.parameters;
        // Keys the node type does not have do nothing (n8n drops them). New ones are left out
        // and named: a small model copied `messageId: $('Gmail Trigger')…` onto a Send Email
        // node, which then also named a node that does not exist. Keys the node already had
        // are kept (someone put them there), and so is everything when the description is
        // abridged (the built-in catalogue lists only some parameters).
        let is_known = |k: &str| desc.properties.iter().any(|p| p.name == k);
        let left_out: Vec<String> = new_params
            .keys()
            .filter(|k| !desc.abridged && !is_known(k) && !node.parameters.contains_key(*k))
            .cloned()
            .collect();
        for k in &left_out {
            new_params.remove(k);
        }
        let diff = changed_keys(&node.parameters, &new_params);
        let unknown: Vec<&str> = new_params
            .keys()
            .filter(|k| !is_known(k))
            .map(String::as_str)
            .collect();
        let mut message = format!(
            "Successfully updated parameters for node \"{}\":\n",
            node.name
        );
        for c in &changes {
            message.push_str(&format!("- {c}\n"));
        }
        message.push_str(&format!("Parameters changed: {}", diff.summary()));
        if !fixed.is_empty() {
            message.push_str(&format!(
                "\nExpression prefixes fixed: {}",
                fixed.join(", ")
            ));
        }
        if !preserved.restored.is_empty() {
            message.push_str(&format!(
                "\nKept {} as before: the new parameters left {} out or changed {} without \
                 being asked, which would have removed the port(s) used by {}. To change {}, \
                 remove those connections first.",
                preserved.restored.join(", "),
                if preserved.restored.len() == 1 {
                    "it"
                } else {
                    "them"
                },
                if preserved.restored.len() == 1 {
                    "it"
                } else {
                    "them"
                },
                preserved.kept_connections.join(", "),
                if preserved.restored.len() == 1 {
                    "it"
                } else {
                    "them"
                },
            ));
        }
        if !left_out.is_empty() {
            message.push_str(&format!(
                "\nLeft out parameters that node type {} does not have (n8n would drop them): \
                 {}. Its parameters: {}.",
                node.node_type,
                left_out.join(", "),
                {
                    let mut names: Vec<&str> = Vec::new();
                    for p in &desc.properties {
                        if !names.contains(&p.name.as_str()) {
                            names.push(&p.name);
                        }
                    }
                    names.truncate(20);
                    names.join(", ")
                }
            ));
        }
        if !unknown.is_empty() {
            message.push_str(&format!(
                "\nNote: kept parameters that node type {} does not define: {} (remove them if \
                 they are not intended)",
                node.node_type,
                unknown.join(", ")
            ));
        }
        let mut updates = Map::new();
        updates.insert("parameters".into(), Value::Object(new_params));
        let op = Operation::UpdateNode {
            node_id: node.id.clone().unwrap_or_else(|| node.name.clone()),
            updates,
        };
        Ok(ToolOutput::text(message).write(
            setting(ctx, "operations_channel", "operations"),
            Value::Array(vec![op.to_value()]),
        ))
    }
}
