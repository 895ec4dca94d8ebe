//! Workflow operations: the queued edits that tools return instead of mutating state, their
//! reducer, and the node that applies them.
//!
//! Operations serialize in n8n's shape (`{"type": "addNodes", "nodes": [...]}`). Tools append
//! them to an `operations` channel (folded by the [`OperationsReducer`]: `null` clears the queue,
//! a write containing a `clear` operation resets it to that write, anything else is appended);
//! after a tool batch the [`ApplyOperationsNode`] applies the queue to the `workflow` channel with
//! [`apply_operations`] — atomically: on an error nothing is applied — and clears the queue.

mod rename;

use crate::workflow::{kind_of, Connection, Connections, Workflow, WorkflowNode};
use agentgraph_runtime::reducer::{Reducer, ReducerError, ReducerRegistry, Storage};
use agentgraph_runtime::{Node, NodeError, TaskContext, TypeMismatch, Update, ValueType};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

pub use rename::{is_identifier, rename_in_expression, rename_in_value};

/// The name of the operations reducer in a [`ReducerRegistry`].
pub const OPERATIONS_REDUCER: &str = "operations";

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
    /// node whose name is used by a node with another id gets a unique name (`Set` → `Set1`).
    AddNodes {
        /// The nodes to add or replace.
        nodes: Vec<WorkflowNode>,
    },
    /// Removes nodes (by id, or by name for nodes without an id) and every connection from or to
    /// them.
    RemoveNode {
        /// The ids of the nodes to remove.
        node_ids: Vec<String>,
    },
    /// Shallow-merges `updates` into a node (`{...node, ...updates}`); a changed `name` is a
    /// rename (connections and expressions follow).
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
    /// Removes one connection.
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

/// What went wrong in one operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperationErrorKind {
    /// No node has this id (or name).
    #[error("no node with id or name `{0}`")]
    NodeNotFound(String),
    /// A node to add has no id.
    #[error("node `{0}` has no id (addNodes upserts by id)")]
    MissingNodeId(String),
    /// The name is already used by another node.
    #[error("node name `{0}` is already used by another node")]
    DuplicateNodeName(String),
    /// A node name must not be empty.
    #[error("node name must not be empty")]
    EmptyName,
    /// The updates do not give a valid node.
    #[error("updates to node `{node}` do not give a valid node: {message}")]
    InvalidUpdate {
        /// The node's name.
        node: String,
        /// What is wrong.
        message: String,
    },
    /// The connection to remove does not exist.
    #[error(
        "no connection {source_node}[{connection_type}][{source_output_index}] → \
         {target_node}[{target_input_index}]"
    )]
    ConnectionNotFound {
        /// The source node's name.
        source_node: String,
        /// The target node's name.
        target_node: String,
        /// The connection type.
        connection_type: String,
        /// The source output index.
        source_output_index: usize,
        /// The target input index.
        target_input_index: u32,
    },
    /// renameNode needs `nodeId` or `oldName`.
    #[error("renameNode needs `nodeId` or `oldName`")]
    MissingRenameTarget,
}

/// An operation of a batch failed; nothing of the batch was applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operation {index} ({op}) failed: {kind}")]
pub struct OperationError {
    /// The position of the failed operation in the batch.
    pub index: usize,
    /// The operation's type (`addNodes`, …).
    pub op: &'static str,
    /// What went wrong.
    pub kind: OperationErrorKind,
}

/// Operations that could not be read from JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid operation at position {index}: {message}")]
pub struct ParseOperationsError {
    /// The position of the bad item (0 for a single value).
    pub index: usize,
    /// What is wrong.
    pub message: String,
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

    /// Applies this operation to `wf` in place. On error `wf` may be partly changed: use
    /// [`apply_operations`] for atomic batches.
    pub fn apply(&self, wf: &mut Workflow) -> Result<(), OperationErrorKind> {
        match self {
            Operation::Clear => {
                *wf = Workflow {
                    name: Some(String::new()),
                    ..Workflow::default()
                };
                Ok(())
            }
            Operation::AddNodes { nodes } => add_nodes(wf, nodes),
            Operation::RemoveNode { node_ids } => remove_nodes(wf, node_ids),
            Operation::UpdateNode { node_id, updates } => update_node(wf, node_id, updates),
            Operation::SetConnections { connections } => {
                wf.connections = connections.clone();
                Ok(())
            }
            Operation::MergeConnections { connections } => {
                merge_connections(wf, connections);
                Ok(())
            }
            Operation::RemoveConnection {
                source_node,
                target_node,
                connection_type,
                source_output_index,
                target_input_index,
            } => {
                let target =
                    Connection::new(target_node, connection_type.clone(), *target_input_index);
                if wf.remove_connection(source_node, connection_type, *source_output_index, &target)
                {
                    Ok(())
                } else {
                    Err(OperationErrorKind::ConnectionNotFound {
                        source_node: source_node.clone(),
                        target_node: target_node.clone(),
                        connection_type: connection_type.clone(),
                        source_output_index: *source_output_index,
                        target_input_index: *target_input_index,
                    })
                }
            }
            Operation::SetName { name } => {
                wf.name = Some(name.clone());
                Ok(())
            }
            Operation::RenameNode {
                node_id,
                old_name,
                new_name,
            } => {
                let key = node_id
                    .as_deref()
                    .or(old_name.as_deref())
                    .ok_or(OperationErrorKind::MissingRenameTarget)?;
                let i = if node_id.is_some() {
                    wf.position_of(key)
                } else {
                    wf.nodes.iter().position(|n| n.name == key)
                }
                .ok_or_else(|| OperationErrorKind::NodeNotFound(key.to_string()))?;
                rename_node(wf, i, new_name)
            }
        }
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

/// Applies `operations` in order to a copy of `workflow` and returns it. Atomic: on the first
/// failing operation, the error is returned and `workflow` is left as it was.
pub fn apply_operations(
    workflow: &Workflow,
    operations: &[Operation],
) -> Result<Workflow, OperationError> {
    let mut wf = workflow.clone();
    apply_all(&mut wf, operations)?;
    Ok(wf)
}

/// Like [`apply_operations`], changing `workflow` in place; on error it is restored unchanged.
pub fn apply_operations_in_place(
    workflow: &mut Workflow,
    operations: &[Operation],
) -> Result<(), OperationError> {
    if operations.is_empty() {
        return Ok(());
    }
    let backup = workflow.clone();
    apply_all(workflow, operations).inspect_err(|_| *workflow = backup)
}

fn apply_all(wf: &mut Workflow, operations: &[Operation]) -> Result<(), OperationError> {
    for (index, op) in operations.iter().enumerate() {
        op.apply(wf).map_err(|kind| OperationError {
            index,
            op: op.type_name(),
            kind,
        })?;
    }
    Ok(())
}

fn add_nodes(wf: &mut Workflow, nodes: &[WorkflowNode]) -> Result<(), OperationErrorKind> {
    for node in nodes {
        let Some(id) = node.id.as_deref() else {
            return Err(OperationErrorKind::MissingNodeId(node.name.clone()));
        };
        if node.name.is_empty() {
            return Err(OperationErrorKind::EmptyName);
        }
        let mut node = node.clone();
        if wf
            .nodes
            .iter()
            .any(|n| n.name == node.name && n.id.as_deref() != Some(id))
        {
            // Parallel add_nodes calls of one step may pick the same name: tools refer to
            // nodes by id, so the later node gets a unique n8n-style name instead.
            let others = Workflow {
                nodes: wf
                    .nodes
                    .iter()
                    .filter(|n| n.id.as_deref() != Some(id))
                    .cloned()
                    .collect(),
                ..Workflow::default()
            };
            node.name = others.unique_name(&node.name);
        }
        match wf.nodes.iter_mut().find(|n| n.id.as_deref() == Some(id)) {
            Some(existing) => *existing = Arc::new(node),
            None => wf.nodes.push(Arc::new(node)),
        }
    }
    Ok(())
}

fn remove_nodes(wf: &mut Workflow, keys: &[String]) -> Result<(), OperationErrorKind> {
    let mut names = HashSet::new();
    let mut indices = BTreeSet::new();
    for key in keys {
        let i = wf
            .position_of(key)
            .ok_or_else(|| OperationErrorKind::NodeNotFound(key.clone()))?;
        indices.insert(i);
        names.insert(wf.nodes[i].name.clone());
    }
    let mut i = 0;
    wf.nodes.retain(|_| {
        let keep = !indices.contains(&i);
        i += 1;
        keep
    });
    wf.connections.retain(|source, _| !names.contains(source));
    for by_type in wf.connections.values_mut() {
        for slot in by_type.values_mut().flatten().flatten() {
            slot.retain(|c| !names.contains(&c.node));
        }
    }
    Ok(())
}

fn update_node(
    wf: &mut Workflow,
    key: &str,
    updates: &Map<String, Value>,
) -> Result<(), OperationErrorKind> {
    let i = wf
        .position_of(key)
        .ok_or_else(|| OperationErrorKind::NodeNotFound(key.to_string()))?;
    let old = &wf.nodes[i];
    let invalid = |message: String| OperationErrorKind::InvalidUpdate {
        node: old.name.clone(),
        message,
    };
    let Value::Object(mut merged) =
        serde_json::to_value(&**old).map_err(|e| invalid(e.to_string()))?
    else {
        return Err(invalid("the node is not an object".into()));
    };
    for (k, v) in updates {
        merged.insert(k.clone(), v.clone());
    }
    let mut updated: WorkflowNode =
        serde_json::from_value(Value::Object(merged)).map_err(|e| invalid(e.to_string()))?;
    let new_name = std::mem::replace(&mut updated.name, old.name.clone());
    if let Some(id) = updated.id.as_deref() {
        if wf
            .nodes
            .iter()
            .enumerate()
            .any(|(j, n)| j != i && n.id.as_deref() == Some(id))
        {
            return Err(invalid(format!("id `{id}` is used by another node")));
        }
    }
    wf.nodes[i] = Arc::new(updated);
    if new_name != wf.nodes[i].name {
        rename_node(wf, i, &new_name)?;
    }
    Ok(())
}

/// Adds every connection of `new` to `wf` unless already present (per output slot).
fn merge_connections(wf: &mut Workflow, new: &Connections) {
    for (source, by_type) in new {
        for (kind, outputs) in by_type {
            let existing = wf
                .connections
                .entry(source.clone())
                .or_default()
                .entry(kind.clone())
                .or_default();
            if existing.len() < outputs.len() {
                existing.resize_with(outputs.len(), || None);
            }
            for (i, slot) in outputs.iter().enumerate() {
                let Some(targets) = slot else { continue };
                let dest = existing[i].get_or_insert_with(Vec::new);
                for t in targets {
                    if !dest.contains(t) {
                        dest.push(t.clone());
                    }
                }
            }
        }
    }
}

fn rename_node(wf: &mut Workflow, i: usize, new_name: &str) -> Result<(), OperationErrorKind> {
    if new_name.is_empty() {
        return Err(OperationErrorKind::EmptyName);
    }
    let old = wf.nodes[i].name.clone();
    if old == new_name {
        return Ok(());
    }
    if wf.nodes.iter().any(|n| n.name == new_name) {
        return Err(OperationErrorKind::DuplicateNodeName(new_name.to_string()));
    }
    Arc::make_mut(&mut wf.nodes[i]).name = new_name.to_string();
    if let Some(by_type) = wf.connections.remove(&old) {
        wf.connections.insert(new_name.to_string(), by_type);
    }
    for by_type in wf.connections.values_mut() {
        for c in by_type.values_mut().flatten().flatten().flatten() {
            if c.node == old {
                c.node = new_name.to_string();
            }
        }
    }
    let renamer = rename::Renamer::new(&old, new_name);
    for node in &mut wf.nodes {
        if node.parameters.values().any(|v| renamer.value_needs(v)) {
            for v in Arc::make_mut(node).parameters.values_mut() {
                renamer.rewrite_value(v);
            }
        }
    }
    if let Some(Value::Object(pin)) = wf.extra.get_mut("pinData") {
        if let Some(v) = pin.remove(&old) {
            pin.insert(new_name.to_string(), v);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reducer
// ---------------------------------------------------------------------------------------------

/// The operations queue reducer: `null` clears the queue; a write (a list or a single operation)
/// containing a `clear` operation replaces the queue; anything else is appended. Writes are
/// checked to be operations before they are applied.
pub struct OperationsReducer;

fn is_clear(op: &Value) -> bool {
    op.get("type").and_then(Value::as_str) == Some("clear")
}

impl Reducer for OperationsReducer {
    fn name(&self) -> &str {
        OPERATIONS_REDUCER
    }
    fn storage(&self) -> Storage {
        Storage::Deltas
    }
    fn check_write(&self, _ty: &ValueType, _write: &Value) -> Result<(), TypeMismatch> {
        Ok(())
    }
    fn prepare(&self, write: &mut Value) -> Result<(), ReducerError> {
        parse_operations(write)
            .map(|_| ())
            .map_err(|e| ReducerError(e.to_string()))
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        let items = match write {
            Value::Null => {
                *current = Some(Value::Array(Vec::new()));
                return Ok(());
            }
            Value::Array(items) => items,
            one @ Value::Object(_) => vec![one],
            other => {
                return Err(ReducerError(format!(
                    "operations needs a list of operations or null, got {}",
                    kind_of(&other)
                )))
            }
        };
        if items.iter().any(is_clear) {
            *current = Some(Value::Array(items));
            return Ok(());
        }
        match current {
            Some(Value::Array(list)) => list.extend(items),
            None | Some(Value::Null) => *current = Some(Value::Array(items)),
            Some(other) => {
                return Err(ReducerError(format!(
                    "operations needs a list in the channel, it holds {}",
                    kind_of(other)
                )))
            }
        }
        Ok(())
    }
}

/// Registers the [`OperationsReducer`] under the name `operations`.
pub fn register(registry: &mut ReducerRegistry) {
    registry.register(Arc::new(OperationsReducer));
}

/// The operations reducer, for a channel spec.
pub fn reducer() -> Arc<dyn Reducer> {
    Arc::new(OperationsReducer)
}

// ---------------------------------------------------------------------------------------------
// Node
// ---------------------------------------------------------------------------------------------

/// A graph node that applies the queued operations to the workflow: reads the workflow and
/// operations channels, writes the new workflow and `null` to the operations channel (which the
/// [`OperationsReducer`] reads as "clear the queue"). Writes nothing when the queue is empty. An
/// empty or `null` workflow channel is read as an empty workflow.
///
/// Fails (fatal) with code `invalid_workflow`, `invalid_operations` or `operation_failed`; on
/// failure nothing is written.
#[derive(Debug, Clone)]
pub struct ApplyOperationsNode {
    /// The channel holding the workflow JSON (default `workflow`).
    pub workflow_channel: String,
    /// The channel holding the operations queue (default `operations`).
    pub operations_channel: String,
}

impl Default for ApplyOperationsNode {
    fn default() -> Self {
        ApplyOperationsNode {
            workflow_channel: "workflow".into(),
            operations_channel: "operations".into(),
        }
    }
}

impl ApplyOperationsNode {
    /// The node on channels `workflow` and `operations`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The node on other channels.
    pub fn with_channels(workflow: impl Into<String>, operations: impl Into<String>) -> Self {
        ApplyOperationsNode {
            workflow_channel: workflow.into(),
            operations_channel: operations.into(),
        }
    }

    /// The update this node makes for the given channel values (`None`: empty channel).
    pub fn compute(
        &self,
        workflow: Option<&Value>,
        operations: Option<&Value>,
    ) -> Result<Update, NodeError> {
        let ops = parse_operations(operations.unwrap_or(&Value::Null))
            .map_err(|e| NodeError::fatal(e.to_string()).with_code("invalid_operations"))?;
        if ops.is_empty() {
            return Ok(Update::new());
        }
        let current = match workflow {
            None | Some(Value::Null) => Workflow::default(),
            Some(v) => Workflow::from_value_ref(v)
                .map_err(|e| NodeError::fatal(e.to_string()).with_code("invalid_workflow"))?,
        };
        let next = apply_operations(&current, &ops)
            .map_err(|e| NodeError::fatal(e.to_string()).with_code("operation_failed"))?;
        Ok(Update::new()
            .set(self.workflow_channel.clone(), next.to_value())
            .set(self.operations_channel.clone(), Value::Null))
    }
}

#[async_trait]
impl Node for ApplyOperationsNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let state = ctx.state();
        self.compute(
            state.get(&self.workflow_channel),
            state.get(&self.operations_channel),
        )
    }
}
