//! Workflow operations: the queued edits that tools return instead of mutating state, their
//! reducer, and the node that applies them.
//!
//! Operations serialize in n8n's shape (`{"type": "addNodes", "nodes": [...]}`). Tools append
//! them to an `operations` channel (folded by the [`OperationsReducer`]: `null` clears the queue,
//! a write containing a `clear` operation resets it to that write, anything else is appended);
//! after a tool batch the [`ApplyOperationsNode`] applies the queue to the `workflow` channel with
//! [`apply_operations`] — atomically: on an error nothing is applied — and clears the queue.
//!
//! Applying is tolerant where a batch of parallel tool calls can collide: an operation whose
//! target is already gone (a node removed twice, updated after its removal, a connection removed
//! twice) is skipped; a new node whose position is taken moves to the next free slot; a new node
//! whose name is taken gets a unique one; connections left pointing from or to a missing node are
//! dropped at the end. Everything that changed the batch's meaning comes back as an
//! [`ApplyNote`] ([`apply_operations_with`]); the node tells the agent about it.

mod node;
mod reducer;
mod rename;

use crate::builder::positions::{is_taken, next_free_to_the_right, position_for_node};
use crate::catalogue::Catalogue;
use crate::workflow::{kind_of, Connection, Connections, Workflow, WorkflowNode};
use agentgraph_runtime::reducer::{Reducer, ReducerError, ReducerRegistry, Storage};
use agentgraph_runtime::{Node, NodeError, TaskContext, TypeMismatch, Update, ValueType};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::Arc;

pub use node::{ApplyOperationsNode, ApplyOutcome};
pub use reducer::{reducer, register, OperationsReducer};
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

    /// Applies this operation to `wf` in place (tolerantly, as in a batch, without the notes and
    /// without the final removal of dangling connections). On error `wf` may be partly changed:
    /// use [`apply_operations`] for atomic batches.
    pub fn apply(&self, wf: &mut Workflow) -> Result<(), OperationErrorKind> {
        self.apply_in(wf, &mut Cx::new(None))
    }

    fn apply_in(&self, wf: &mut Workflow, cx: &mut Cx<'_>) -> Result<(), OperationErrorKind> {
        match self {
            Operation::Clear => {
                *wf = Workflow {
                    name: Some(String::new()),
                    ..Workflow::default()
                };
                Ok(())
            }
            Operation::AddNodes { nodes } => add_nodes(wf, nodes, cx),
            Operation::RemoveNode { node_ids } => {
                remove_nodes(wf, node_ids, cx);
                Ok(())
            }
            Operation::UpdateNode { node_id, updates } => match wf.position_of(node_id) {
                Some(i) => update_node(wf, i, updates),
                None => {
                    cx.skip(self, OperationErrorKind::NodeNotFound(node_id.clone()));
                    Ok(())
                }
            },
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
                if !wf.remove_connection(
                    source_node,
                    connection_type,
                    *source_output_index,
                    &target,
                ) {
                    cx.skip(
                        self,
                        OperationErrorKind::ConnectionNotFound {
                            source_node: source_node.clone(),
                            target_node: target_node.clone(),
                            connection_type: connection_type.clone(),
                            source_output_index: *source_output_index,
                            target_input_index: *target_input_index,
                        },
                    );
                }
                Ok(())
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
                let found = if node_id.is_some() {
                    wf.position_of(key)
                } else {
                    wf.nodes.iter().position(|n| n.name == key)
                };
                match found {
                    Some(i) => rename_node(wf, i, new_name),
                    None => {
                        cx.skip(self, OperationErrorKind::NodeNotFound(key.to_string()));
                        Ok(())
                    }
                }
            }
        }
    }
}

/// Something applying a batch did that the tools that queued it could not know: the agent is
/// told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyNote {
    /// An operation (or, for removeNode, one of its ids) was skipped: its target was gone.
    Skipped {
        /// The position of the operation in the batch.
        index: usize,
        /// The operation's type (`removeNode`, …).
        op: &'static str,
        /// What was missing (`NodeNotFound`, `ConnectionNotFound`).
        reason: OperationErrorKind,
    },
    /// A node was added under another name than the one its tool reported, because that name
    /// was taken (usually by a node added in the same batch).
    Renamed {
        /// The node's id.
        id: String,
        /// The name the node was queued with.
        requested: String,
        /// The name it has in the workflow.
        name: String,
    },
    /// A connection from or to a node that does not exist was dropped.
    DroppedConnection {
        /// The source node's name.
        source: String,
        /// The connection type.
        connection_type: String,
        /// The source output index.
        source_output: usize,
        /// The target node's name.
        target: String,
        /// The missing node (the source or the target).
        missing: String,
    },
}

impl fmt::Display for ApplyNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyNote::Skipped { op, reason, .. } => match reason {
                OperationErrorKind::NodeNotFound(key) => write!(
                    f,
                    "{op} of `{key}` skipped: no node has that id or name (already removed?)"
                ),
                other => write!(f, "{op} skipped: {other}"),
            },
            ApplyNote::Renamed {
                id,
                requested,
                name,
            } => write!(
                f,
                "the node added as \"{requested}\" (id {id}) is named \"{name}\": \
                 \"{requested}\" was already used by another node. Refer to it as \"{name}\""
            ),
            ApplyNote::DroppedConnection {
                source,
                connection_type,
                source_output,
                target,
                missing,
            } => write!(
                f,
                "dropped the connection \"{source}\" → \"{target}\" ({connection_type}, output \
                 {source_output}): node \"{missing}\" does not exist"
            ),
        }
    }
}

/// A batch applied by [`apply_operations_with`]: the new workflow and what to tell the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The workflow after the batch.
    pub workflow: Workflow,
    /// Skipped operations, renamed nodes and dropped connections, in order.
    pub notes: Vec<ApplyNote>,
}

/// What applying needs besides the workflow: the catalogue (to place moved nodes) and where the
/// notes go.
struct Cx<'a> {
    catalogue: Option<&'a Catalogue>,
    index: usize,
    notes: Vec<ApplyNote>,
}

impl<'a> Cx<'a> {
    fn new(catalogue: Option<&'a Catalogue>) -> Self {
        Cx {
            catalogue,
            index: 0,
            notes: Vec::new(),
        }
    }

    fn skip(&mut self, op: &Operation, reason: OperationErrorKind) {
        self.notes.push(ApplyNote::Skipped {
            index: self.index,
            op: op.type_name(),
            reason,
        });
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
/// failing operation, the error is returned and `workflow` is left as it was. Tolerant and
/// without a catalogue: see [`apply_operations_with`].
pub fn apply_operations(
    workflow: &Workflow,
    operations: &[Operation],
) -> Result<Workflow, OperationError> {
    apply_operations_with(workflow, operations, None).map(|a| a.workflow)
}

/// Applies `operations` in order to a copy of `workflow`; atomic like [`apply_operations`].
///
/// Targets that are already gone are skipped; a node added at a taken position moves to the
/// next free slot (placed like `add_nodes` places a node, by the rule of
/// [`crate::builder::positions`], when `catalogue` is given; else to the right); a name taken
/// by another node is made unique; at the end, connections from or to a missing node are
/// dropped. Each of these, except moves, is an [`ApplyNote`].
pub fn apply_operations_with(
    workflow: &Workflow,
    operations: &[Operation],
    catalogue: Option<&Catalogue>,
) -> Result<Applied, OperationError> {
    let mut wf = workflow.clone();
    let notes = apply_all(&mut wf, operations, catalogue)?;
    Ok(Applied {
        workflow: wf,
        notes,
    })
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
    apply_all(workflow, operations, None)
        .map(|_| ())
        .inspect_err(|_| *workflow = backup)
}

fn apply_all(
    wf: &mut Workflow,
    operations: &[Operation],
    catalogue: Option<&Catalogue>,
) -> Result<Vec<ApplyNote>, OperationError> {
    let mut cx = Cx::new(catalogue);
    for (index, op) in operations.iter().enumerate() {
        cx.index = index;
        op.apply_in(wf, &mut cx).map_err(|kind| OperationError {
            index,
            op: op.type_name(),
            kind,
        })?;
    }
    drop_dangling_connections(wf, &mut cx.notes);
    Ok(cx.notes)
}

fn add_nodes(
    wf: &mut Workflow,
    nodes: &[WorkflowNode],
    cx: &mut Cx<'_>,
) -> Result<(), OperationErrorKind> {
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
            let unique = others.unique_name(&node.name);
            cx.notes.push(ApplyNote::Renamed {
                id: id.to_string(),
                requested: std::mem::replace(&mut node.name, unique.clone()),
                name: unique,
            });
        }
        match wf.nodes.iter_mut().find(|n| n.id.as_deref() == Some(id)) {
            Some(existing) => *existing = Arc::new(node),
            None => {
                // Parallel add_nodes calls of one step all place their node in the workflow as
                // it was before the step, so they pick the same slot: move on to a free one.
                let (x, y) = node.xy();
                if !node.is_sticky_note() && is_taken(wf, [x, y]) {
                    let [x, y] = match cx.catalogue {
                        Some(catalogue) => position_for_node(catalogue, wf, &node),
                        None => next_free_to_the_right(wf, [x, y]),
                    };
                    node.set_xy(x, y);
                }
                wf.nodes.push(Arc::new(node));
            }
        }
    }
    Ok(())
}

fn remove_nodes(wf: &mut Workflow, keys: &[String], cx: &mut Cx<'_>) {
    let mut names = HashSet::new();
    let mut indices = BTreeSet::new();
    for key in keys {
        match wf.position_of(key) {
            Some(i) => {
                indices.insert(i);
                names.insert(wf.nodes[i].name.clone());
            }
            None => cx.notes.push(ApplyNote::Skipped {
                index: cx.index,
                op: "removeNode",
                reason: OperationErrorKind::NodeNotFound(key.clone()),
            }),
        }
    }
    if indices.is_empty() {
        return;
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
}

fn update_node(
    wf: &mut Workflow,
    i: usize,
    updates: &Map<String, Value>,
) -> Result<(), OperationErrorKind> {
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

/// Drops every connection whose source or target is not a node of `wf` (a connection queued in
/// the same batch as the removal of one of its ends), noting each. A missing source loses its
/// whole entry; a missing target is taken out of its slot (the slot stays, as on removeNode).
fn drop_dangling_connections(wf: &mut Workflow, notes: &mut Vec<ApplyNote>) {
    let names: HashSet<&str> = wf.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut dropped = Vec::new();
    for (source, by_type) in &wf.connections {
        let source_missing = !names.contains(source.as_str());
        for (kind, outputs) in by_type {
            for (output, slot) in outputs.iter().enumerate() {
                for c in slot.iter().flatten() {
                    let missing = if source_missing {
                        source
                    } else if !names.contains(c.node.as_str()) {
                        &c.node
                    } else {
                        continue;
                    };
                    dropped.push(ApplyNote::DroppedConnection {
                        source: source.clone(),
                        connection_type: kind.clone(),
                        source_output: output,
                        target: c.node.clone(),
                        missing: missing.clone(),
                    });
                }
            }
        }
    }
    let missing_source = wf
        .connections
        .keys()
        .any(|source| !names.contains(source.as_str()));
    if dropped.is_empty() && !missing_source {
        return;
    }
    let names: HashSet<String> = names.into_iter().map(str::to_string).collect();
    wf.connections
        .retain(|source, _| names.contains(source.as_str()));
    for by_type in wf.connections.values_mut() {
        for slot in by_type.values_mut().flatten().flatten() {
            slot.retain(|c| names.contains(c.node.as_str()));
        }
    }
    notes.extend(dropped);
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
