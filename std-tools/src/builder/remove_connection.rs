//! `remove_connection`: removes one connection between two nodes.
//!
//! Arguments: `{"sourceNodeId", "targetNodeId", "connectionType", "sourceOutputIndex"?: 0,
//! "targetInputIndex"?: 0}` (ids, or names as a fallback). Queues one `removeConnection`
//! operation and answers `Successfully removed connection "A" → "B" (kind)`.

use super::remove_node::describe_edge;
use super::state::{
    codes, current_workflow, depends_on_batch, find_node, opt_index, output_with_operations,
    req_str,
};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::{Connection, Edge};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// The `remove_connection` tool.
#[derive(Debug, Clone)]
pub struct RemoveConnection {
    #[allow(dead_code)]
    catalogue: Arc<Catalogue>,
}

impl RemoveConnection {
    /// The tool (the catalogue is kept for symmetry with the other builder tools).
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        RemoveConnection { catalogue }
    }
}

#[async_trait]
impl Tool for RemoveConnection {
    fn name(&self) -> &str {
        "remove_connection"
    }

    fn description(&self) -> &str {
        "Remove one connection between two nodes, given by the source and target node IDs, the \
         connection type (main, ai_languageModel, ai_tool, …) and, when not 0, the source output \
         and target input indexes. The nodes stay in the workflow."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "sourceNodeId": {"type": "string", "description": "ID of the connection's source node."},
                "targetNodeId": {"type": "string", "description": "ID of the connection's target node."},
                "connectionType": {"type": "string", "description": "main, ai_languageModel, ai_tool, …"},
                "sourceOutputIndex": {"type": "integer", "minimum": 0, "description": "Default 0."},
                "targetInputIndex": {"type": "integer", "minimum": 0, "description": "Default 0."}
            },
            "required": ["sourceNodeId", "targetNodeId", "connectionType"]
        })
    }

    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        depends_on_batch(error)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let source_key = req_str(&args, "sourceNodeId")?;
        let target_key = req_str(&args, "targetNodeId")?;
        let kind = req_str(&args, "connectionType")?;
        let out_idx = opt_index(&args, "sourceOutputIndex")?.unwrap_or(0);
        let in_idx = opt_index(&args, "targetInputIndex")?.unwrap_or(0);
        let wf = current_workflow(ctx)?;
        let src = find_node(&wf, source_key, "sourceNodeId")?;
        let tgt = find_node(&wf, target_key, "targetNodeId")?;
        let in_idx32 = u32::try_from(in_idx).unwrap_or(u32::MAX);
        let wanted = Edge {
            source: src.name.clone(),
            kind: kind.to_string(),
            source_output: out_idx,
            target: Connection::new(&tgt.name, kind, in_idx32),
        };
        let edges = wf.outgoing(&src.name, None);
        if !edges.contains(&wanted) {
            let between: Vec<String> = edges
                .iter()
                .filter(|e| e.target.node == tgt.name)
                .map(describe_edge)
                .collect();
            let existing = if between.is_empty() {
                format!(
                    "there is no connection from \"{}\" to \"{}\"",
                    src.name, tgt.name
                )
            } else {
                format!("the connections between them are: {}", between.join("; "))
            };
            return Err(ToolError::new(
                codes::CONNECTION_NOT_FOUND,
                format!(
                    "no connection {} exists; {existing}. Check the connection type and indexes",
                    describe_edge(&wanted)
                ),
            ));
        }
        let op = Operation::RemoveConnection {
            source_node: src.name.clone(),
            target_node: tgt.name.clone(),
            connection_type: kind.to_string(),
            source_output_index: out_idx,
            target_input_index: in_idx32,
        };
        let message = format!("Successfully removed connection {}", describe_edge(&wanted));
        Ok(output_with_operations(ctx, message, &[op]))
    }
}
