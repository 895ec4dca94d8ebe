//! Applying batches of operations: atomically, tolerating targets already gone, with the
//! [`ApplyNote`]s that tell the agent what changed the batch's meaning.

use super::connections::{drop_dangling_connections, merge_connections};
use super::edits::{add_nodes, remove_nodes, rename_node, update_node};
use super::{Operation, OperationError, OperationErrorKind};
use crate::catalogue::Catalogue;
use crate::workflow::{Connection, Workflow};
use std::fmt;

impl Operation {
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
pub(super) struct Cx<'a> {
    pub(super) catalogue: Option<&'a Catalogue>,
    pub(super) index: usize,
    pub(super) notes: Vec<ApplyNote>,
}

impl<'a> Cx<'a> {
    fn new(catalogue: Option<&'a Catalogue>) -> Self {
        Cx {
            catalogue,
            index: 0,
            notes: Vec::new(),
        }
    }

    pub(super) fn skip(&mut self, op: &Operation, reason: OperationErrorKind) {
        self.notes.push(ApplyNote::Skipped {
            index: self.index,
            op: op.type_name(),
            reason,
        });
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
