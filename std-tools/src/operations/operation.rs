//! The [`Operation`] type (n8n's `{"type": "addNodes", …}` shape) and reading queues of them.

use super::error::ParseOperationsError;
use crate::workflow::{kind_of, Connections, WorkflowNode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn default_main() -> String {
    crate::workflow::MAIN.to_string()
}

/// One queued edit of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Operation {
    /// Empties the workflow: no nodes, no connections, an empty name, no other fields.
    Clear,
    /// Adds nodes; a node whose id is already in the workflow replaces that node (upsert). A
    /// node whose name is used by a node with another id gets a unique name (`Set` → `Set1`,
    /// reported). A new node whose position is taken moves to the next free slot.
    AddNodes {
        /// The nodes to add or replace.
        nodes: Vec<WorkflowNode>,
    },
    /// Removes nodes (by id, or by name for nodes without an id) and every connection from or to
    /// them. Ids of no node are skipped (reported).
    RemoveNode {
        /// The ids of the nodes to remove.
        node_ids: Vec<String>,
    },
    /// Shallow-merges `updates` into a node (`{...node, ...updates}`); a changed `name` is a
    /// rename (connections and expressions follow). Skipped (reported) when the node is gone.
    UpdateNode {
        /// The id of the node to update (or its name, for nodes without an id).
        node_id: String,
        /// Node fields to replace.
        updates: Map<String, Value>,
    },
    /// Replaces all connections.
    SetConnections {
        /// The new connections.
        connections: Connections,
    },
    /// Adds connections, skipping those already present.
    MergeConnections {
        /// The connections to add.
        connections: Connections,
    },
    /// Removes one connection; skipped (reported) when it is not there.
    RemoveConnection {
        /// The source node's name.
        source_node: String,
        /// The target node's name.
        target_node: String,
        /// The connection type (default `main`).
        #[serde(default = "default_main")]
        connection_type: String,
        /// The source output index (default 0).
        #[serde(default)]
        source_output_index: usize,
        /// The target input index (default 0).
        #[serde(default)]
        target_input_index: u32,
    },
    /// Sets the workflow name.
    SetName {
        /// The new name.
        name: String,
    },
    /// Renames a node and updates connection keys, targets, `pinData` keys and the expressions of
    /// every node that reference the old name (`$('Old')`, `$node["Old"]`, `$node.Old`, …).
    /// Skipped (reported) when the node is gone.
    RenameNode {
        /// The id of the node (or its name).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node_id: Option<String>,
        /// The old name (used when `nodeId` is absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_name: Option<String>,
        /// The new name.
        new_name: String,
    },
}

impl Operation {
    /// The operation's `type` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            Operation::Clear => "clear",
            Operation::AddNodes { .. } => "addNodes",
            Operation::RemoveNode { .. } => "removeNode",
            Operation::UpdateNode { .. } => "updateNode",
            Operation::SetConnections { .. } => "setConnections",
            Operation::MergeConnections { .. } => "mergeConnections",
            Operation::RemoveConnection { .. } => "removeConnection",
            Operation::SetName { .. } => "setName",
            Operation::RenameNode { .. } => "renameNode",
        }
    }

    /// The operation as JSON.
    pub fn to_value(&self) -> Value {
        // Cannot fail: every map key is a string.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads one operation from JSON.
    pub fn from_value(value: &Value) -> Result<Self, ParseOperationsError> {
        Operation::deserialize(value).map_err(|e| ParseOperationsError {
            index: 0,
            message: e.to_string(),
        })
    }
}

/// Reads a queue of operations: a list of operation objects, one operation object, or `null`
/// (no operations).
pub fn parse_operations(value: &Value) -> Result<Vec<Operation>, ParseOperationsError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                Operation::deserialize(item).map_err(|e| ParseOperationsError {
                    index,
                    message: e.to_string(),
                })
            })
            .collect(),
        Value::Object(_) => Operation::from_value(value).map(|op| vec![op]),
        other => Err(ParseOperationsError {
            index: 0,
            message: format!("expected a list of operations, got {}", kind_of(other)),
        }),
    }
}
