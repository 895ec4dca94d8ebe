//! `add_trigger`: adds the node that starts the workflow, its type chosen from the catalogue's
//! general-purpose triggers (an `enum` in the schema, so a server that enforces schemas by
//! grammar can only produce a real trigger type), and connects it to the workflow's first node.
//!
//! Arguments: `{"nodeType", "name"}`. Queues an `addNodes` operation and, when the workflow has
//! a main node that nothing feeds yet, a `mergeConnections` operation from the trigger to the
//! first such node.

use super::add_nodes::plan_node;
use super::connect_nodes::PlannedConnection;
use super::state::{codes, current_workflow, node_ports, output_with_operations, req_str};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::{Workflow, MAIN};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The trigger types offered when the catalogue marks none as a core node (the n8n names of
/// the general-purpose triggers); only those the catalogue holds are offered.
const GENERAL_TRIGGERS: &[&str] = &[
    "n8n-nodes-base.manualTrigger",
    "n8n-nodes-base.scheduleTrigger",
    "n8n-nodes-base.webhook",
    "n8n-nodes-base.formTrigger",
    "@n8n/n8n-nodes-langchain.chatTrigger",
    "n8n-nodes-base.emailReadImap",
    "n8n-nodes-base.rssFeedReadTrigger",
    "n8n-nodes-base.executeWorkflowTrigger",
    "n8n-nodes-base.errorTrigger",
];

/// The catalogue category of general-purpose nodes.
const CORE_CATEGORY: &str = "Core Nodes";

/// The `add_trigger` tool.
#[derive(Debug, Clone)]
pub struct AddTrigger {
    catalogue: Arc<Catalogue>,
    types: Vec<String>,
}

impl AddTrigger {
    /// The tool over `catalogue`; its schema lists the catalogue's trigger types.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        let types = trigger_types(&catalogue);
        AddTrigger { catalogue, types }
    }

    /// The trigger types the schema offers.
    pub fn types(&self) -> &[String] {
        &self.types
    }
}

/// The catalogue's visible, general-purpose trigger types (category "Core Nodes", test
/// triggers left out), the common ones first; when it marks none, those of
/// [`GENERAL_TRIGGERS`] it holds; with an empty catalogue, [`GENERAL_TRIGGERS`] itself (the
/// names the product's lazily loaded registry shows).
pub fn trigger_types(catalogue: &Catalogue) -> Vec<String> {
    let mut core: Vec<String> = Vec::new();
    for desc in catalogue.iter() {
        let is_core = desc
            .codex
            .as_ref()
            .and_then(|c| c.categories.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c == CORE_CATEGORY));
        let test = desc.name.to_ascii_lowercase().contains("test");
        if desc.is_trigger() && !desc.is_hidden() && is_core && !test && !core.contains(&desc.name)
        {
            core.push(desc.name.clone());
        }
    }
    if core.is_empty() {
        core = GENERAL_TRIGGERS
            .iter()
            .filter(|t| catalogue.is_empty() || catalogue.contains(t))
            .map(|t| t.to_string())
            .collect();
    }
    // The general-purpose ones first, in the order above; the others as the catalogue has them.
    core.sort_by_key(|t| {
        GENERAL_TRIGGERS
            .iter()
            .position(|g| g == t)
            .unwrap_or(GENERAL_TRIGGERS.len())
    });
    core
}

#[async_trait]
impl Tool for AddTrigger {
    fn name(&self) -> &str {
        "add_trigger"
    }

    fn description(&self) -> &str {
        "Add the workflow's trigger: the node that starts it (every workflow needs one). Choose \
         the type that matches how the request starts: on a schedule (scheduleTrigger), on an \
         HTTP call (webhook), on a chat message (chatTrigger), on a form (formTrigger), on a \
         click in n8n (manualTrigger). The trigger is connected to the workflow's first node \
         automatically. For an app's own trigger (e.g. Gmail Trigger) use add_nodes with the \
         type from search_nodes instead."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeType": {"type": "string", "enum": self.types, "description": "The trigger's node type."},
                "name": {"type": "string", "description": "A descriptive name, e.g. \"Every Morning at 7\"."}
            },
            "required": ["nodeType", "name"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let node_type = req_str(&args, "nodeType")?;
        let desc = self.catalogue.get(node_type, None);
        if desc.is_some_and(|d| !d.is_trigger()) {
            return Err(ToolError::new(
                codes::INVALID_INPUT,
                format!(
                    "`{node_type}` is not a trigger; add_trigger takes one of: {}. Add other \
                     nodes with add_nodes",
                    self.types.join(", ")
                ),
            ));
        }
        let wf = current_workflow(ctx)?;
        if let Some(existing) = wf.nodes.iter().find(|n| {
            !n.is_disabled()
                && self
                    .catalogue
                    .get(&n.node_type, Some(n.version()))
                    .is_some_and(|d| d.is_trigger())
        }) {
            return Err(ToolError::new(
                codes::TRIGGER_EXISTS,
                format!(
                    "the workflow already has a trigger, \"{}\" ({}); go on with add_nodes and \
                     connect_nodes (remove_node first to replace it)",
                    existing.name, existing.node_type
                ),
            ));
        }
        let name = args.get("name").and_then(Value::as_str);
        let planned = plan_node(&self.catalogue, ctx, &wf, node_type, name, Map::new())?;
        let mut message = planned.message;
        let mut ops = vec![Operation::AddNodes {
            nodes: vec![planned.node.clone()],
        }];
        if let Some(first) = first_unfed_node(&self.catalogue, &wf) {
            let connection = PlannedConnection {
                source: planned.node.name.clone(),
                target: first.clone(),
                kind: MAIN.to_string(),
                source_output_index: 0,
                target_input_index: 0,
                swapped: false,
            };
            message.push('\n');
            message.push_str(&connection.message());
            ops.push(connection.operation());
        } else {
            message.push_str(
                "\nNo node to connect it to yet: add the next node and connect this trigger to it \
                 with connect_nodes.",
            );
        }
        Ok(output_with_operations(ctx, message, &ops))
    }
}

/// The first node (in the workflow's order) that takes main input and gets none: not a
/// trigger, not a sub-node, no incoming main connection.
pub fn first_unfed_node(catalogue: &Catalogue, wf: &Workflow) -> Option<String> {
    wf.nodes
        .iter()
        .filter(|n| !n.is_sticky_note() && !n.is_disabled())
        .filter(|n| {
            let trigger = catalogue
                .get(&n.node_type, Some(n.version()))
                .is_some_and(|d| d.is_trigger());
            let takes_main = node_ports(catalogue, n).is_ok_and(|p| p.has_input(MAIN));
            !trigger && takes_main && wf.incoming(&n.name, Some(MAIN)).is_empty()
        })
        .map(|n| n.name.clone())
        .next()
}
