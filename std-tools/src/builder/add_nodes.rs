//! `add_nodes`: adds one node of a catalogue type, with a unique name, a computed position and
//! the parameters that shape its connections.
//!
//! Arguments: `{"nodeType", "name", "connectionParametersReasoning", "connectionParameters"}`.
//! Queues one `addNodes` operation and answers
//! `Successfully added "Fetch Weather" (HTTP Request) with ID <uuid>` followed by the node's
//! resolved inputs and outputs.

use super::connect_nodes::{ConnectNodes, PlannedConnection};
use super::positions::{position_for, Placement};
use super::search_nodes::{ports_json, with_known_labels};
use super::state::{
    codes, current_workflow, did_you_mean, is_sub_node, node_ports, output_with_operations, req_str,
};
use crate::catalogue::Catalogue;
use crate::operations::{apply_operations, Operation};
use crate::workflow::{Workflow, WorkflowNode};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The `add_nodes` tool.
#[derive(Debug, Clone)]
pub struct AddNodes {
    catalogue: Arc<Catalogue>,
    /// The general-purpose trigger types (schedule, manual, webhook, …), which may start a
    /// workflow side by side.
    general_triggers: Vec<String>,
}

impl AddNodes {
    /// The tool over `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        let general_triggers = super::add_trigger::trigger_types(&catalogue);
        AddNodes {
            catalogue,
            general_triggers,
        }
    }

    /// An app's trigger asked for while `wf` already has a trigger is a step: its action node
    /// (`googleSheetsTrigger` → `googleSheets`) with a note, or refused when it has none (a
    /// small model added three Form.io Triggers as the steps after a webhook). A general-purpose
    /// trigger may be a second start, and any trigger may be the first: `None`.
    fn trigger_as_step(
        &self,
        wf: &Workflow,
        asked: &str,
    ) -> Result<Option<(String, String)>, ToolError> {
        let node_type = self.catalogue.recover_type(asked).unwrap_or(asked);
        let is_trigger = self
            .catalogue
            .get(node_type, None)
            .is_some_and(|d| d.is_trigger());
        if !is_trigger || self.general_triggers.iter().any(|t| t == node_type) {
            return Ok(None);
        }
        let Some(first) = super::main_flow::other_trigger(&self.catalogue, wf, "") else {
            return Ok(None);
        };
        match super::main_flow::action_type(&self.catalogue, node_type) {
            Some(action) => {
                let note = format!(
                    "\nNote: `{node_type}` is a trigger, which starts a workflow and takes no \
                     input, and this workflow already starts with \"{}\": `{action}`, the node \
                     for a step, was added instead.",
                    first.name
                );
                Ok(Some((action, note)))
            }
            None => Err(ToolError::new(
                codes::TRIGGER_EXISTS,
                format!(
                    "`{node_type}` is a trigger, which starts a workflow and takes no input, and \
                     this workflow already starts with \"{}\" ({}): it cannot be a step. Add \
                     a node that does this step (search_nodes for what it does), or remove_node \
                     \"{}\" first to start the workflow with `{node_type}` instead.",
                    first.name, first.node_type, first.name
                ),
            )),
        }
    }
}

#[async_trait]
impl Tool for AddNodes {
    fn name(&self) -> &str {
        "add_nodes"
    }

    fn description(&self) -> &str {
        // No example parameter values here: a small model copied n8n's examples (a vector
        // store's `mode`, a document loader's `textSplittingMode`) onto every node it added.
        "Add a node to the workflow. Give the full node type from search_nodes, a descriptive \
         name, why the node does or does not need connection parameters \
         (connectionParametersReasoning, required), and those parameters \
         (connectionParameters): only parameters of this node type that change its inputs or \
         outputs, as a search result or get_node_details shows them; {} for almost every node. \
         Returns the new node's ID: use it with connect_nodes and the other tools. Position and \
         version are chosen automatically."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeType": {"type": "string", "description": "Full node type, e.g. n8n-nodes-base.httpRequest."},
                "name": {"type": "string", "description": "A descriptive node name, e.g. \"Fetch Weather Data\"."},
                "connectionParametersReasoning": {"type": "string", "description": "Why these connection parameters (or none) are needed: which parameters change this node's inputs/outputs."},
                "connectionParameters": {"type": "object", "description": "Parameters of this node type that change its inputs/outputs; {} for almost every node."}
            },
            "required": ["nodeType", "name", "connectionParametersReasoning", "connectionParameters"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let node_type = req_str(&args, "nodeType")?;
        let reasoning = args
            .get("connectionParametersReasoning")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if reasoning.is_empty() {
            return Err(ToolError::new(
                codes::MISSING_REASONING,
                "`connectionParametersReasoning` is required: say which parameters of this node \
                 type change its inputs/outputs (e.g. a vector store's `mode`) or that its \
                 connections are static, then call add_nodes again",
            ));
        }
        let params: Map<String, Value> = match args.get("connectionParameters") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return Err(ToolError::new(
                    codes::INVALID_INPUT,
                    format!(
                        "`connectionParameters` must be an object (use {{}} for none), got {other}"
                    ),
                ))
            }
        };
        let wf = current_workflow(ctx)?;
        let requested = args.get("name").and_then(Value::as_str);
        let step = self.trigger_as_step(&wf, node_type)?;
        let node_type = step
            .as_ref()
            .map_or(node_type, |(action, _)| action.as_str());
        let planned = plan_node(&self.catalogue, ctx, &wf, node_type, requested, params)?;
        let mut message = planned.message;
        if let Some((_, note)) = &step {
            message.push_str(note);
        }
        let mut ops = vec![Operation::AddNodes {
            nodes: vec![planned.node.clone()],
        }];
        for c in auto_connections(&self.catalogue, &wf, &planned.node) {
            message.push('\n');
            message.push_str(&c.message());
            message.push_str(" (automatically: the only node it can be connected to)");
            ops.push(c.operation());
        }
        Ok(output_with_operations(ctx, message, &ops))
    }
}

/// The `ai_*` connections adding `node` to `wf` makes unambiguous: a new sub-node to the one
/// node that takes its kind and has room for it; a new node taking `ai_*` input from each
/// unconnected sub-node for which it is that one node. A small model added chat models and
/// tools and left them unconnected (an error of the structure check).
pub fn auto_connections(
    catalogue: &Arc<Catalogue>,
    wf: &Workflow,
    node: &WorkflowNode,
) -> Vec<PlannedConnection> {
    let add = Operation::AddNodes {
        nodes: vec![node.clone()],
    };
    let Ok(mut current) = apply_operations(wf, &[add]) else {
        return Vec::new();
    };
    let Ok(ports) = node_ports(catalogue, node) else {
        return Vec::new();
    };
    let connector = ConnectNodes::new(catalogue.clone());
    let mut planned = Vec::new();
    let mut connect = |current: &mut Workflow, source: &str, target: &str, kind: &str| {
        let args = json!({"sourceNodeId": source, "targetNodeId": target, "connectionType": kind});
        let Ok(c) = connector.plan(current, &args) else {
            return false;
        };
        match apply_operations(current, &[c.operation()]) {
            Ok(next) => {
                *current = next;
                planned.push(c);
                true
            }
            Err(_) => false,
        }
    };
    if is_sub_node(&ports) {
        for kind in ports.output_kinds() {
            let parents = parents_with_room(catalogue, &current, kind, &node.name);
            if let [only] = parents.as_slice() {
                if connect(&mut current, &node.name, only, kind) {
                    break;
                }
            }
        }
        return planned;
    }
    let takes: Vec<String> = ports
        .input_kinds()
        .into_iter()
        .filter(|k| k.starts_with("ai_"))
        .map(str::to_string)
        .collect();
    if takes.is_empty() {
        return planned;
    }
    for sub in wf.nodes.iter().filter(|n| !n.is_disabled()) {
        if !wf.outgoing(&sub.name, None).is_empty() {
            continue;
        }
        let Ok(sub_ports) = node_ports(catalogue, sub) else {
            continue;
        };
        if !is_sub_node(&sub_ports) {
            continue;
        }
        for kind in sub_ports.output_kinds() {
            if !takes.iter().any(|k| k == kind) {
                continue;
            }
            let parents = parents_with_room(catalogue, &current, kind, &sub.name);
            if parents.as_slice() == [node.name.clone()]
                && connect(&mut current, &sub.name, &node.name, kind)
            {
                break;
            }
        }
    }
    planned
}

/// The nodes of `wf` other than `except` that are not sub-nodes and take `kind` input with
/// room for one more connection.
fn parents_with_room(
    catalogue: &Catalogue,
    wf: &Workflow,
    kind: &str,
    except: &str,
) -> Vec<String> {
    wf.nodes
        .iter()
        .filter(|n| n.name != except && !n.is_disabled())
        .filter(|n| {
            let Ok(ports) = node_ports(catalogue, n) else {
                return false;
            };
            if is_sub_node(&ports) {
                return false;
            }
            let incoming = wf.incoming(&n.name, Some(kind)).len();
            ports
                .inputs
                .iter()
                .filter(|p| p.kind == kind)
                .any(|p| p.max_connections.is_none_or(|max| incoming < max as usize))
        })
        .map(|n| n.name.clone())
        .collect()
}

/// A node ready to be added, and the tool message that reports it.
#[derive(Debug, Clone)]
pub struct PlannedNode {
    /// The node, with its unique name, position and version.
    pub node: WorkflowNode,
    /// `Successfully added "…" (…) with ID …` and its inputs and outputs.
    pub message: String,
}

/// Plans adding a node of `node_type` to `wf`: the catalogue's description and default
/// version, the max-nodes limit, the ports for `params`, a position, a unique name (from
/// `requested`, else the type's default name) and an id.
pub fn plan_node(
    catalogue: &Catalogue,
    ctx: &ToolContext,
    wf: &Workflow,
    node_type: &str,
    requested: Option<&str>,
    params: Map<String, Value>,
) -> Result<PlannedNode, ToolError> {
    // A type written without its `@n8n/` scope, in another case or by its short name alone is
    // read as the one type it names (a local model sent `n8n-nodes-langchain.lmChatCohere`
    // three times, each refused, and its turn ended there).
    // An unknown `…Tool` type whose main-flow node exists, in a workflow where no node takes
    // tools, is that node (the multi-agent builder sent `n8n-nodes-base.codeTool` three times
    // after a webhook, each refused, and stopped with only the trigger).
    let asked = node_type;
    let recovered: Option<String> =
        catalogue
            .recover_type(asked)
            .map(str::to_string)
            .or_else(|| {
                catalogue
                    .get(asked, None)
                    .is_none()
                    .then(|| super::main_flow::main_flow_variant(catalogue, wf, asked))
                    .flatten()
            });
    let node_type = recovered.as_deref().unwrap_or(asked);
    let desc = catalogue.get(node_type, None).ok_or_else(|| {
        ToolError::new(
            codes::NODE_TYPE_NOT_FOUND,
            format!(
                "node type `{node_type}` is not in the catalogue. {}",
                did_you_mean(catalogue, node_type)
            ),
        )
    })?;
    let version = catalogue
        .default_version(node_type)
        .unwrap_or_else(|| desc.version.max());
    // Parameters the node type does not have cannot shape its ports: they are left out and
    // named (a small model copied the schema's examples, `mode`, `textSplittingMode`, onto
    // every node, and each became an unknown parameter of the workflow).
    let (params, ignored): (Map<String, Value>, Vec<String>) = {
        let mut kept = Map::new();
        let mut ignored = Vec::new();
        for (k, v) in params {
            if desc.properties.iter().any(|p| p.name == k) {
                kept.insert(k, v);
            } else {
                ignored.push(k);
            }
        }
        (kept, ignored)
    };
    if let Some(max) = desc.max_nodes {
        let count = wf.nodes.iter().filter(|n| n.node_type == desc.name).count();
        if count >= max as usize {
            return Err(ToolError::new(
                codes::MAX_NODES_REACHED,
                format!(
                    "a workflow may contain at most {max} node(s) of type `{}` and it already \
                     has {count}; reuse the existing one",
                    desc.name
                ),
            ));
        }
    }
    let params_value = Value::Object(params.clone());
    let ports = match catalogue.ports(node_type, Some(version), &params_value) {
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            return Err(ToolError::new(
                codes::PORT_RESOLUTION_FAILED,
                format!(
                    "the inputs/outputs of `{node_type}` could not be resolved for \
                     connectionParameters {params_value}: {e}; check the parameter values"
                ),
            ))
        }
        None => Default::default(),
    };
    let ports = with_known_labels(node_type, ports);
    let out_kinds = ports.output_kinds();
    let placement = if desc.is_trigger() {
        Placement::Trigger
    } else if is_sub_node(&ports) {
        Placement::SubNode(&out_kinds)
    } else {
        Placement::Main
    };
    let requested = requested.map(str::trim).filter(|s| !s.is_empty());
    // The same name and type again is the same call again (a small model repeated its
    // add_nodes three times, and each copy became "Name1", "Name2", none connected).
    if let Some(same) = requested.and_then(|r| {
        wf.nodes
            .iter()
            .find(|n| n.node_type == desc.name && n.name.trim().eq_ignore_ascii_case(r))
    }) {
        // What the node still lacks, so the next call can be the one that helps (a small
        // model sent the same add again after each refusal).
        let needs: Vec<String> = crate::validate::unfinished(wf, catalogue)
            .into_iter()
            .filter(|p| p.contains(&format!("node \"{}\":", same.name)))
            .collect();
        let needs = if needs.is_empty() {
            String::new()
        } else {
            format!(" What it still needs: {}.", needs.join("; "))
        };
        return Err(ToolError::new(
            codes::NODE_EXISTS,
            format!(
                "\"{}\" ({}) is already in the workflow with ID {}: it was not added again. \
                 Use it: connect it with connect_nodes or set it up with \
                 update_node_parameters. For a second node of this type, give it another \
                 name.{needs}",
                same.name,
                desc.display_name,
                same.id.as_deref().unwrap_or(&same.name)
            ),
        ));
    }
    let position = position_for(catalogue, wf, placement);
    let base = requested
        .map(str::to_string)
        .or_else(|| {
            desc.defaults
                .as_ref()
                .and_then(|d| d.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| desc.display_name.clone());
    let name = wf.unique_name(&base);
    let id = node_id(ctx, "node");
    let mut node =
        WorkflowNode::new(&id, &name, &desc.name, version, position).with_parameters(params);
    // n8n registers a node's production webhook only when the node has a webhookId (its
    // editor assigns one to every node type that declares webhooks).
    if desc
        .webhooks
        .as_ref()
        .and_then(Value::as_array)
        .is_some_and(|w| !w.is_empty())
    {
        node.extra
            .insert("webhookId".into(), Value::String(node_id(ctx, "webhook")));
    }
    let mut message = format!(
        "Successfully added \"{name}\" ({}) with ID {id}",
        desc.display_name
    );
    if name != base {
        message.push_str(&format!(" (named \"{name}\" because \"{base}\" was taken)"));
    }
    if asked != node_type {
        message.push_str(&format!(
            "\nNote: `{asked}` is not a node type; it was read as `{node_type}`. Write the full \
             type as search_nodes shows it."
        ));
    }
    if !ignored.is_empty() {
        message.push_str(&format!(
            "\nIgnored connectionParameters that {} does not have: {} (set real parameters \
             with update_node_parameters).",
            desc.display_name,
            ignored.join(", ")
        ));
    }
    message.push_str(&format!(
        "\nInputs: {}\nOutputs: {}",
        ports_json(&ports.inputs),
        ports_json(&ports.outputs)
    ));
    if is_sub_node(&ports) {
        message.push_str(
            "\nThis is a sub-node: connect it with connect_nodes from this node to the node \
             that uses it (e.g. chat model → agent).",
        );
        if let Some(main) = super::main_flow::main_flow_variant(catalogue, wf, &desc.name) {
            message.push_str(&format!(
                "\nNote: this is the tool variant that an AI Agent calls through an ai_tool \
                 connection, and no node of this workflow takes tools. For a step of the main \
                 flow (trigger → … → output), remove this node and add `{main}` instead."
            ));
        }
    }
    Ok(PlannedNode { node, message })
}

/// A node id (or, with `what` = `webhook`, a webhook id) in n8n's uuid form. Inside a run it is derived from the thread and the tool
/// call's task id, so a step re-run after a crash adds the same node again (the addNodes
/// operation then upserts it) instead of a second copy; outside a run it is random.
fn node_id(ctx: &ToolContext, what: &str) -> String {
    if ctx.thread_id().is_empty() {
        return uuid::Uuid::new_v4().to_string();
    }
    let hex = agentgraph_runtime::stable_id(&[ctx.thread_id(), ctx.task_id(), what]);
    let bits = u128::from_str_radix(&hex, 16)
        .unwrap_or_else(|_| u128::from(agentgraph_runtime::fnv1a64(hex.as_bytes())));
    uuid::Builder::from_random_bytes(bits.to_be_bytes())
        .into_uuid()
        .to_string()
}
