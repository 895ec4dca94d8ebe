//! Shared plumbing of the workflow-builder tools: reading the current workflow from the
//! state, resolving nodes by id (or name), resolving a node's ports, queuing operations and the
//! stable error codes.
//!
//! Tools never mutate state: they read the workflow channel (default `workflow`, settings key
//! `workflow_channel`) and return their operations as a write to the operations channel
//! (default `operations`, settings key `operations_channel`). The workflow they see has the
//! operations still pending applied: those queued in the channel and, when the tool executor
//! runs a call again after the calls before it in its batch, theirs
//! ([`ToolContext::batch_writes`]); so a connection to a node added in the same batch works.

use crate::catalogue::{Catalogue, NodeTypeDescription, Ports};
use crate::operations::{apply_operations, parse_operations, Operation, OperationsReducer};
use crate::workflow::{Workflow, WorkflowNode};
use agentgraph_agents::tools::{ToolContext, ToolError, ToolOutput};
use serde_json::Value;

/// Default channel holding the workflow JSON.
pub const DEFAULT_WORKFLOW_CHANNEL: &str = "workflow";
/// Default channel the queued operations are written to.
pub const DEFAULT_OPERATIONS_CHANNEL: &str = "operations";

/// Stable error codes of the builder tools.
pub mod codes {
    /// The arguments are well-typed but invalid (empty query, missing field, …).
    pub const INVALID_INPUT: &str = "INVALID_INPUT";
    /// The workflow channel does not hold a valid workflow.
    pub const INVALID_WORKFLOW: &str = "INVALID_WORKFLOW";
    /// No node with this id (or name) in the workflow.
    pub const NODE_NOT_FOUND: &str = "NODE_NOT_FOUND";
    /// No node type of this name in the catalogue.
    pub const NODE_TYPE_NOT_FOUND: &str = "NODE_TYPE_NOT_FOUND";
    /// `connectionParametersReasoning` is missing or empty.
    pub const MISSING_REASONING: &str = "MISSING_REASONING";
    /// `add_trigger` on a workflow that already has an enabled trigger.
    pub const TRIGGER_EXISTS: &str = "TRIGGER_EXISTS";
    /// `add_nodes` of a node whose name and type a node of the workflow already has.
    pub const NODE_EXISTS: &str = "NODE_EXISTS";
    /// The node type allows no more nodes of it in one workflow (`maxNodes`).
    pub const MAX_NODES_REACHED: &str = "MAX_NODES_REACHED";
    /// A node's inputs/outputs could not be resolved for its parameters.
    pub const PORT_RESOLUTION_FAILED: &str = "PORT_RESOLUTION_FAILED";
    /// Source and target are the same node.
    pub const SAME_NODE: &str = "SAME_NODE";
    /// No connection type is both output by the source and accepted by the target.
    pub const INCOMPATIBLE_CONNECTION: &str = "INCOMPATIBLE_CONNECTION";
    /// Several connection types are possible; `connectionType` must say which.
    pub const AMBIGUOUS_CONNECTION_TYPE: &str = "AMBIGUOUS_CONNECTION_TYPE";
    /// The given connection type is not an output of the source / input of the target.
    pub const INVALID_CONNECTION_TYPE: &str = "INVALID_CONNECTION_TYPE";
    /// An `ai_*` connection between two main nodes: one end must be a sub-node.
    pub const SUB_NODE_REQUIRED: &str = "SUB_NODE_REQUIRED";
    /// `sourceOutputIndex` is out of range for the connection type.
    pub const INVALID_OUTPUT_INDEX: &str = "INVALID_OUTPUT_INDEX";
    /// `targetInputIndex` is out of range for the connection type.
    pub const INVALID_INPUT_INDEX: &str = "INVALID_INPUT_INDEX";
    /// The connection already exists.
    pub const ALREADY_CONNECTED: &str = "ALREADY_CONNECTED";
    /// The target input already has its maximum number of connections.
    pub const INPUT_FULL: &str = "INPUT_FULL";
    /// The connection to remove does not exist.
    pub const CONNECTION_NOT_FOUND: &str = "CONNECTION_NOT_FOUND";
    /// A parameter path does not parse.
    pub const INVALID_PATH: &str = "INVALID_PATH";
    /// Nothing at the parameter path.
    pub const PARAMETER_NOT_FOUND: &str = "PARAMETER_NOT_FOUND";
    /// The parameter value is longer than the cap.
    pub const PARAMETER_TOO_LARGE: &str = "PARAMETER_TOO_LARGE";
    /// New parameters would remove ports of a node that have connections.
    pub const WOULD_BREAK_CONNECTIONS: &str = "WOULD_BREAK_CONNECTIONS";
}

fn setting<'a>(ctx: &'a ToolContext, key: &str, default: &'a str) -> &'a str {
    match ctx.settings().get(key).and_then(Value::as_str) {
        Some(c) if !c.is_empty() => c,
        _ => default,
    }
}

/// The workflow channel for this call (settings `workflow_channel`, default `workflow`).
pub fn workflow_channel(ctx: &ToolContext) -> &str {
    setting(ctx, "workflow_channel", DEFAULT_WORKFLOW_CHANNEL)
}

/// The operations channel for this call (settings `operations_channel`, default `operations`).
pub fn operations_channel(ctx: &ToolContext) -> &str {
    setting(ctx, "operations_channel", DEFAULT_OPERATIONS_CHANNEL)
}

/// The current workflow: the workflow channel's value (null or missing: an empty workflow) with
/// the pending operations applied ([`pending_operations`]) when they apply cleanly (else
/// without them, as the batch will not apply either); `INVALID_WORKFLOW` when the channel does
/// not hold a workflow.
pub fn current_workflow(ctx: &ToolContext) -> Result<Workflow, ToolError> {
    let wf = stored_workflow(ctx)?;
    let pending = pending_operations(ctx);
    if pending.is_empty() {
        return Ok(wf);
    }
    Ok(apply_operations(&wf, &pending).unwrap_or(wf))
}

/// The operations not applied yet: the operations channel's queue, then the operations that
/// the calls before this one in its batch queued ([`ToolContext::batch_writes`]), folded as the
/// `operations` reducer folds them. Unreadable operations are left out.
pub fn pending_operations(ctx: &ToolContext) -> Vec<Operation> {
    let channel = operations_channel(ctx);
    let mut queue = ctx.state().get(channel).cloned();
    let reducer = OperationsReducer;
    for (_, write) in ctx.batch_writes().iter().filter(|(c, _)| c == channel) {
        let mut folded = queue.clone();
        if agentgraph_runtime::reducer::Reducer::apply(&reducer, &mut folded, write.clone()).is_ok()
        {
            queue = folded;
        }
    }
    queue
        .and_then(|q| parse_operations(&q).ok())
        .unwrap_or_default()
}

/// Whether a builder tool's failure may be due to operations an earlier call of its batch
/// queued (a node or connection not there yet), so the call is worth running again after them.
pub fn depends_on_batch(error: &ToolError) -> bool {
    matches!(
        error.code.as_str(),
        codes::NODE_NOT_FOUND | codes::CONNECTION_NOT_FOUND
    )
}

/// The workflow channel's value alone (null or missing: an empty workflow).
fn stored_workflow(ctx: &ToolContext) -> Result<Workflow, ToolError> {
    let channel = workflow_channel(ctx);
    match ctx.state().get(channel) {
        None | Some(Value::Null) => Ok(Workflow::default()),
        Some(v) => Workflow::from_value_ref(v).map_err(|e| {
            ToolError::new(
                codes::INVALID_WORKFLOW,
                format!(
                    "the workflow in channel `{channel}` is not a valid n8n workflow ({e}); \
                     it cannot be edited until it is fixed or cleared"
                ),
            )
        }),
    }
}

/// A tool output: `message` as the content plus `ops` queued on the operations channel.
pub fn output_with_operations(ctx: &ToolContext, message: String, ops: &[Operation]) -> ToolOutput {
    let out = ToolOutput::text(message);
    if ops.is_empty() {
        return out;
    }
    let list = Value::Array(ops.iter().map(Operation::to_value).collect());
    out.write(operations_channel(ctx), list)
}

/// The node with this id, else the node with this name; `NODE_NOT_FOUND` (naming `field`)
/// listing the workflow's nodes otherwise.
pub fn find_node<'a>(
    wf: &'a Workflow,
    key: &str,
    field: &str,
) -> Result<&'a WorkflowNode, ToolError> {
    let key = key.trim();
    wf.node_by_id(key)
        .or_else(|| wf.node_by_name(key))
        .ok_or_else(|| {
            let known: Vec<String> = wf
                .nodes
                .iter()
                .take(30)
                .map(|n| format!("\"{}\" (id {})", n.name, n.id.as_deref().unwrap_or("-")))
                .collect();
            let listing = if known.is_empty() {
                "the workflow has no nodes yet".to_string()
            } else {
                format!("existing nodes: {}", known.join(", "))
            };
            ToolError::new(
                codes::NODE_NOT_FOUND,
                format!(
                    "{field} \"{key}\" matches no node id or name in the workflow; {listing}. \
                     Use the id returned by add_nodes."
                ),
            )
        })
}

/// The id to address `node` with in operations (its id, or its name when it has none).
pub fn node_key(node: &WorkflowNode) -> String {
    node.id.clone().unwrap_or_else(|| node.name.clone())
}

/// The catalogue description of a workflow node's type and version, or `NODE_TYPE_NOT_FOUND`.
pub fn node_description<'a>(
    catalogue: &'a Catalogue,
    node: &WorkflowNode,
) -> Result<&'a NodeTypeDescription, ToolError> {
    catalogue
        .get(&node.node_type, Some(node.version()))
        .ok_or_else(|| {
            ToolError::new(
                codes::NODE_TYPE_NOT_FOUND,
                format!(
                    "node \"{}\" has type `{}`, which is not in the node catalogue, so its \
                 inputs and outputs are unknown; remove it and add a node of a known type",
                    node.name, node.node_type
                ),
            )
        })
}

/// Resolves the ports of a workflow node for its current parameters.
pub fn node_ports(catalogue: &Catalogue, node: &WorkflowNode) -> Result<Ports, ToolError> {
    node_description(catalogue, node)?;
    let params = Value::Object(node.parameters.clone());
    match catalogue.ports(&node.node_type, Some(node.version()), &params) {
        Some(Ok(p)) => Ok(p),
        Some(Err(e)) => Err(ToolError::new(
            codes::PORT_RESOLUTION_FAILED,
            format!(
                "the inputs/outputs of node \"{}\" could not be resolved for its parameters: {e}",
                node.name
            ),
        )),
        None => Err(ToolError::new(
            codes::NODE_TYPE_NOT_FOUND,
            format!("node type `{}` is not in the catalogue", node.node_type),
        )),
    }
}

/// Whether resolved ports are those of a sub-node: some outputs, none of them `main`.
pub fn is_sub_node(ports: &Ports) -> bool {
    !ports.outputs.is_empty() && !ports.has_output(crate::workflow::MAIN)
}

/// Whether `s` names a sub-node connection type (`ai_languageModel`, `ai_tool`, …).
pub fn is_connection_kind(s: &str) -> bool {
    s.len() > 3 && s.starts_with("ai_") && s[3..].chars().all(|c| c.is_ascii_alphanumeric())
}

/// Suggestions for an unknown type: the closest real types by name and description
/// ([`super::suggest::suggest_types`]), else the closest short names by edit distance (a typo).
pub fn did_you_mean(catalogue: &Catalogue, node_type: &str) -> String {
    let short = crate::catalogue::short_name(node_type);
    // A connection type written as a node type (`n8n-nodes-base.ai_languageModel`, a small
    // model's way of asking for "a chat model"): the nodes that provide it.
    if is_connection_kind(short) {
        let providers: Vec<String> = catalogue
            .search_sub_nodes(short, "", 3)
            .iter()
            .map(|h| format!("`{}` ({})", h.node_type, h.display_name))
            .collect();
        if !providers.is_empty() {
            return format!(
                "`{short}` is a connection type, not a node type; nodes that provide it: {}. \
                 Use search_nodes with queryType \"subNodeSearch\" and connectionType \
                 \"{short}\" for more.",
                providers.join(", ")
            );
        }
    }
    let mut names: Vec<String> = super::suggest::suggest_types(catalogue, node_type, 3)
        .iter()
        .map(|d| format!("`{}` ({})", d.name, d.display_name))
        .collect();
    if names.is_empty() {
        names = closest_types(catalogue, short, 3)
            .into_iter()
            .map(|t| format!("`{t}`"))
            .collect();
    }
    if names.is_empty() {
        "Use search_nodes to find the right type.".to_string()
    } else {
        format!(
            "Did you mean {}? Use search_nodes to find the right type.",
            names.join(", ")
        )
    }
}

/// The catalogue types whose short name is closest to `short` by edit distance (a typo), at
/// most a third of its length away.
pub fn closest_types<'a>(catalogue: &'a Catalogue, short: &str, limit: usize) -> Vec<&'a str> {
    let want: Vec<char> = short.to_lowercase().chars().collect();
    let max = (want.len() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = catalogue
        .types()
        .filter_map(|t| {
            let have: Vec<char> = crate::catalogue::short_name(t)
                .to_lowercase()
                .chars()
                .collect();
            let d = edit_distance(&want, &have);
            (d <= max).then_some((d, t))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(limit).map(|(_, t)| t).collect()
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    if a.len().abs_diff(b.len()) > 3 {
        return usize::MAX;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Reads an optional non-negative integer argument; `INVALID_INPUT` when it is not one.
pub fn opt_index(args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ToolError::new(
                    codes::INVALID_INPUT,
                    format!("`{key}` must be a non-negative integer, got {v}"),
                )
            }),
    }
}

/// Reads a required non-empty string argument; `INVALID_INPUT` otherwise.
pub fn req_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    match args.get(key).and_then(Value::as_str).map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(ToolError::new(
            codes::INVALID_INPUT,
            format!("`{key}` is required and must be a non-empty string"),
        )),
    }
}
