//! The workflow builder's tools over MCP: std-tools' workflow tools over a workflow held per
//! MCP session, plus `get_workflow`, `set_workflow` and `set_node_parameters` (the builder's
//! `update_node_parameters` needs a model of its own; over MCP the client is the model).
//!
//! The tools queue operations in the session's `operations` channel; after each call
//! [`BuilderWrites`] applies them to `workflow` as the builder graphs' `apply_operations` node
//! does, so the next call sees the new workflow.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_mcp::server::{ServedTool, SessionWrites};
use agentgraph_runtime::reducer::Reducer;
use agentgraph_std_tools::builder::state::{
    current_workflow, find_node, node_key, output_with_operations, DEFAULT_OPERATIONS_CHANNEL,
    DEFAULT_WORKFLOW_CHANNEL,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{ApplyOperationsNode, Operation, OperationsReducer};
use agentgraph_std_tools::validate::{ValidateConfiguration, ValidateStructure};
use agentgraph_std_tools::workflow::Workflow;
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// std-tools' builder tools that are not offered: the multi-agent builder's hand-off.
const LEFT_OUT: &[&str] = &["submit_discovery_results"];

/// Every builder tool over `catalogue`, as session tools.
pub fn tools(catalogue: Arc<Catalogue>) -> Vec<ServedTool> {
    let mut list: Vec<Arc<dyn Tool>> =
        agentgraph_std_tools::builder::workflow_tools(catalogue.clone())
            .into_iter()
            .filter(|t| !LEFT_OUT.contains(&t.name()))
            .collect();
    list.push(Arc::new(SetNodeParameters));
    list.push(Arc::new(ValidateStructure::new(catalogue.clone())));
    list.push(Arc::new(ValidateConfiguration::new(catalogue)));
    list.push(Arc::new(GetWorkflow));
    list.push(Arc::new(SetWorkflow));
    list.into_iter().map(ServedTool::session).collect()
}

/// What a session starts with: an empty workflow, no queued operations.
pub fn initial_state() -> Map<String, Value> {
    let mut state = Map::new();
    state.insert(
        DEFAULT_WORKFLOW_CHANNEL.into(),
        Workflow::default().to_value(),
    );
    state.insert(DEFAULT_OPERATIONS_CHANNEL.into(), Value::Null);
    state
}

/// Folds the operations a call queued and applies them to the workflow.
pub struct BuilderWrites {
    apply: ApplyOperationsNode,
}

impl BuilderWrites {
    /// Applies operations with `catalogue` (to place moved nodes as `add_nodes` does).
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        BuilderWrites {
            apply: ApplyOperationsNode::new().with_catalogue(catalogue),
        }
    }
}

impl SessionWrites for BuilderWrites {
    fn apply(&self, state: &mut Map<String, Value>, writes: Vec<(String, Value)>) -> Vec<String> {
        let mut notes = Vec::new();
        for (channel, value) in writes {
            if channel == DEFAULT_OPERATIONS_CHANNEL {
                let mut queue = state.get(&channel).cloned().filter(|v| !v.is_null());
                match OperationsReducer.apply(&mut queue, value) {
                    Ok(()) => {
                        state.insert(channel, queue.unwrap_or(Value::Null));
                    }
                    Err(e) => notes.push(format!("[workflow update failed] {e}")),
                }
            } else {
                state.insert(channel, value);
            }
        }
        let outcome = self.apply.outcome(
            state.get(DEFAULT_WORKFLOW_CHANNEL),
            state.get(DEFAULT_OPERATIONS_CHANNEL),
            None,
        );
        for (channel, value) in outcome.update.writes.iter().cloned() {
            state.insert(channel, value);
        }
        notes.extend(outcome.notice());
        notes
    }
}

/// `get_workflow`: the session's workflow as n8n JSON.
struct GetWorkflow;

#[async_trait]
impl Tool for GetWorkflow {
    fn name(&self) -> &str {
        "get_workflow"
    }

    fn description(&self) -> &str {
        "Returns the workflow built so far in this session, as n8n workflow JSON (nodes, \
         connections), ready to import into n8n."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            content: current_workflow(ctx)?.to_value(),
            writes: Vec::new(),
        })
    }
}

/// `set_workflow`: replaces the session's workflow (start from an existing one, or clear it).
struct SetWorkflow;

#[async_trait]
impl Tool for SetWorkflow {
    fn name(&self) -> &str {
        "set_workflow"
    }

    fn description(&self) -> &str {
        "Replaces the workflow of this session with `workflow` (n8n workflow JSON with `nodes` \
         and `connections`), to edit an existing workflow; `{}` or no argument starts an empty \
         one."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "workflow": {"type": "object", "description": "n8n workflow JSON; {} for an empty workflow"}
            }
        })
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let given = args.get("workflow").cloned().unwrap_or(json!({}));
        let workflow = if given.as_object().is_some_and(Map::is_empty) {
            Workflow::default()
        } else {
            Workflow::from_value(given)
                .map_err(|e| ToolError::new("INVALID_WORKFLOW", e.to_string()))?
        };
        let summary = format!(
            "The session's workflow now has {} node(s).",
            workflow.nodes.len()
        );
        Ok(ToolOutput::text(summary)
            .write(DEFAULT_WORKFLOW_CHANNEL, workflow.to_value())
            .write(DEFAULT_OPERATIONS_CHANNEL, Value::Null))
    }
}

/// `set_node_parameters`: sets a node's parameters to given values (merged into the current
/// ones, or replacing them).
struct SetNodeParameters;

#[async_trait]
impl Tool for SetNodeParameters {
    fn name(&self) -> &str {
        "set_node_parameters"
    }

    fn description(&self) -> &str {
        "Sets parameters of one node of the workflow: `parameters` (n8n's parameter JSON of \
         the node type, see get_node_details) is merged into the node's current parameters, \
         key by key at the top level; with `replace: true` it replaces them all. Expressions \
         start with `=`, e.g. \"={{ $json.email }}\"."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeId": {"type": "string", "description": "The id of the node (or its name)"},
                "parameters": {"type": "object", "description": "Parameter values to set"},
                "replace": {"type": "boolean", "description": "Replace all parameters instead of merging (default false)"}
            },
            "required": ["nodeId", "parameters"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let workflow = current_workflow(ctx)?;
        let key = args["nodeId"].as_str().unwrap_or_default();
        let node = find_node(&workflow, key, "nodeId")?;
        let given = args["parameters"].as_object().cloned().unwrap_or_default();
        let mut parameters = if args["replace"] == json!(true) {
            Map::new()
        } else {
            node.parameters.clone()
        };
        let changed: Vec<String> = given.keys().cloned().collect();
        parameters.extend(given);
        let mut updates = Map::new();
        updates.insert("parameters".into(), Value::Object(parameters));
        let op = Operation::UpdateNode {
            node_id: node_key(node),
            updates,
        };
        let message = format!(
            "Set parameters of node \"{}\": {}",
            node.name,
            if changed.is_empty() {
                "none".to_string()
            } else {
                changed.join(", ")
            }
        );
        Ok(output_with_operations(ctx, message, &[op]))
    }
}
