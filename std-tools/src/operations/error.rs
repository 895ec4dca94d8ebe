//! The errors of applying and of reading operations.

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
