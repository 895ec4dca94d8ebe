//! `add_nodes`: adds one node of a catalogue type, with a unique name, a computed position and
//! the parameters that shape its connections.
//!
//! Arguments: `{"nodeType", "name", "connectionParametersReasoning", "connectionParameters"}`.
//! Queues one `addNodes` operation and answers
//! `Successfully added "Fetch Weather" (HTTP Request) with ID <uuid>` followed by the node's
//! resolved inputs and outputs.

use super::positions::{position_for, Placement};
use super::search_nodes::{ports_json, with_known_labels};
use super::state::{
    codes, current_workflow, did_you_mean, is_sub_node, output_with_operations, req_str,
};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::WorkflowNode;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The `add_nodes` tool.
#[derive(Debug, Clone)]
pub struct AddNodes {
    catalogue: Arc<Catalogue>,
}

impl AddNodes {
    /// The tool over `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        AddNodes { catalogue }
    }
}

#[async_trait]
impl Tool for AddNodes {
    fn name(&self) -> &str {
        "add_nodes"
    }

    fn description(&self) -> &str {
        "Add a node to the workflow. Give the full node type from search_nodes, a descriptive \
         name, your reasoning about which parameters change the node's inputs/outputs \
         (connectionParametersReasoning, required), and those parameters \
         (connectionParameters, e.g. {\"mode\": \"insert\"} for a vector store that receives \
         documents, {\"hasOutputParser\": true} for an agent with an output parser, \
         {\"textSplittingMode\": \"custom\"} for a document loader with a text splitter, {} when \
         the connections are static). Returns the new node's ID: use it with connect_nodes and \
         the other tools. Position and version are chosen automatically."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeType": {"type": "string", "description": "Full node type, e.g. n8n-nodes-base.httpRequest."},
                "name": {"type": "string", "description": "A descriptive node name, e.g. \"Fetch Weather Data\"."},
                "connectionParametersReasoning": {"type": "string", "description": "Why these connection parameters (or none) are needed: which parameters change this node's inputs/outputs."},
                "connectionParameters": {"type": "object", "description": "Parameters that shape the node's inputs/outputs; {} when none."}
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
        let desc = self.catalogue.get(node_type, None).ok_or_else(|| {
            ToolError::new(
                codes::NODE_TYPE_NOT_FOUND,
                format!(
                    "node type `{node_type}` is not in the catalogue. {}",
                    did_you_mean(&self.catalogue, node_type)
                ),
            )
        })?;
        let version = self
            .catalogue
            .default_version(node_type)
            .unwrap_or_else(|| desc.version.max());
        let wf = current_workflow(ctx)?;
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
        let ports = match self
            .catalogue
            .ports(node_type, Some(version), &params_value)
        {
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
        let position = position_for(&self.catalogue, &wf, placement);
        let requested = args
            .get("name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty());
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
        }
        Ok(output_with_operations(
            ctx,
            message,
            &[Operation::AddNodes { nodes: vec![node] }],
        ))
    }
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
