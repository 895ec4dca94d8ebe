//! `remove_node`: removes a node and, with it, every connection from or to it.
//!
//! Arguments: `{"nodeId"}` (id, or name as a fallback). Queues one `removeNode` operation and
//! answers `Successfully removed node "X" (type) and N connection(s):` followed by one
//! `- "A" → "B" (kind)` line per removed connection.

use super::state::{
    current_workflow, depends_on_batch, find_node, node_key, output_with_operations, req_str,
};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::{Edge, Workflow};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// The `remove_node` tool.
#[derive(Debug, Clone)]
pub struct RemoveNode {
    catalogue: Arc<Catalogue>,
}

impl RemoveNode {
    /// The tool over `catalogue` (used to name the node's type in the message).
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        RemoveNode { catalogue }
    }
}

/// Every connection from or to the node named `name`.
pub fn connections_of(wf: &Workflow, name: &str) -> Vec<Edge> {
    wf.edges()
        .into_iter()
        .filter(|e| e.source == name || e.target.node == name)
        .collect()
}

/// `"A" → "B" (main)`, with indexes when not 0.
pub fn describe_edge(e: &Edge) -> String {
    let idx = if e.source_output != 0 || e.target.index != 0 {
        format!(", output {} → input {}", e.source_output, e.target.index)
    } else {
        String::new()
    };
    format!("\"{}\" → \"{}\" ({}{idx})", e.source, e.target.node, e.kind)
}

#[async_trait]
impl Tool for RemoveNode {
    fn name(&self) -> &str {
        "remove_node"
    }

    fn description(&self) -> &str {
        "Remove a node from the workflow by its ID. All its incoming and outgoing connections \
         are removed too (they are listed in the answer; reconnect the neighbours if needed)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeId": {"type": "string", "description": "ID of the node to remove."}
            },
            "required": ["nodeId"]
        })
    }

    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        depends_on_batch(error)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = req_str(&args, "nodeId")?;
        let wf = current_workflow(ctx)?;
        let node = find_node(&wf, key, "nodeId")?;
        let type_label = self
            .catalogue
            .get(&node.node_type, Some(node.version()))
            .map(|d| d.display_name.clone())
            .unwrap_or_else(|| node.node_type.clone());
        let removed = connections_of(&wf, &node.name);
        let mut message = format!(
            "Successfully removed node \"{}\" ({type_label}) and {} connection(s)",
            node.name,
            removed.len()
        );
        if !removed.is_empty() {
            message.push(':');
            for e in &removed {
                message.push_str("\n- ");
                message.push_str(&describe_edge(e));
            }
        }
        let op = Operation::RemoveNode {
            node_ids: vec![node_key(node)],
        };
        Ok(output_with_operations(ctx, message, &[op]))
    }
}
