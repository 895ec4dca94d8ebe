//! Errors of building and running graphs.

use crate::checkpoint::CheckpointError;
use crate::ids::CheckpointId;

/// A graph that cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// Two nodes with one name.
    #[error("node `{0}` is defined twice")]
    DuplicateNode(String),
    /// A name the runtime reserves.
    #[error("`{0}` is a reserved name; pick another node name")]
    ReservedName(String),
    /// An edge, route, join or interrupt names a node that does not exist.
    #[error("{context} names unknown node `{name}`; defined nodes: {known}")]
    UnknownNode {
        /// Where the name appeared.
        context: String,
        /// The unknown name.
        name: String,
        /// The defined nodes, comma-separated.
        known: String,
    },
    /// Nothing starts from START.
    #[error("graph `{0}` has no entry point: add an edge or a route from START")]
    NoEntry(String),
    /// The state schema is inconsistent.
    #[error("state schema: {0}")]
    Schema(String),
    /// A channel default does not fit the channel type.
    #[error("default of channel `{channel}` does not fit its type: {detail}")]
    BadDefault {
        /// The channel.
        channel: String,
        /// The type mismatch.
        detail: String,
    },
    /// recursion limit 0.
    #[error("the recursion limit must be at least 1")]
    BadRecursionLimit,
}

/// A run that failed. The thread keeps every checkpoint written before the failure.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A node failed after its retries.
    #[error("node `{node}` failed at step {step} of thread {thread:?}: {message}")]
    NodeFailed {
        /// The node.
        node: String,
        /// The step.
        step: i64,
        /// The thread.
        thread: String,
        /// Subgraph path of the node.
        ns: Vec<String>,
        /// What went wrong.
        message: String,
        /// The node's error code, if any.
        code: Option<String>,
    },
    /// Two writes to a `replace` channel in one step.
    #[error("channel `{channel}` got two values in step {step}: `{first_writer}` wrote {first_value} and `{second_writer}` wrote {second_value}; give the channel a reducer (e.g. `reduce append`) or let only one node write it per step")]
    ConflictingWrites {
        /// The channel.
        channel: String,
        /// The step.
        step: i64,
        /// The first writer (in task order).
        first_writer: String,
        /// Its value (shortened).
        first_value: String,
        /// The second writer.
        second_writer: String,
        /// Its value (shortened).
        second_value: String,
    },
    /// A write whose value does not fit the channel type.
    #[error("node `{node}` wrote {value} to channel `{channel}` of type {ty}: {detail}")]
    TypeMismatch {
        /// The writer.
        node: String,
        /// The channel.
        channel: String,
        /// The channel type.
        ty: String,
        /// The value (shortened).
        value: String,
        /// Where in the value and what was expected.
        detail: String,
    },
    /// A write to a channel the graph does not have.
    #[error("node `{node}` wrote unknown channel `{channel}`; channels: {known}")]
    UnknownChannel {
        /// The writer.
        node: String,
        /// The unknown channel.
        channel: String,
        /// Declared channels.
        known: String,
    },
    /// A reducer rejected a write.
    #[error(
        "reducer `{reducer}` of channel `{channel}` rejected the write of node `{node}`: {message}"
    )]
    Reducer {
        /// The writer.
        node: String,
        /// The channel.
        channel: String,
        /// The reducer.
        reducer: String,
        /// Why.
        message: String,
    },
    /// A route or command named a node that does not exist.
    #[error("`{from}` routed to unknown node `{target}`; nodes: {known}")]
    UnknownTarget {
        /// The routing node.
        from: String,
        /// The unknown target.
        target: String,
        /// Defined nodes.
        known: String,
    },
    /// The run went on for more steps than allowed.
    #[error("recursion limit of {limit} steps reached in thread {thread:?}; nodes that kept running: {nodes}; raise the limit if the loop is intended, or check the route that should end it")]
    RecursionLimit {
        /// The limit.
        limit: usize,
        /// The thread.
        thread: String,
        /// The nodes that ran most, with counts (`agent ×500, tools ×500`).
        nodes: String,
    },
    /// The input is not acceptable.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Resume without a checkpoint to resume from.
    #[error("thread {0:?} has no checkpoint to continue from; start it with an input")]
    NothingToResume(String),
    /// A checkpoint id that the thread does not have.
    #[error("thread {thread:?} has no checkpoint {id}")]
    CheckpointNotFound {
        /// The thread.
        thread: String,
        /// The id.
        id: CheckpointId,
    },
    /// A resume value that does not say which interrupt it answers.
    #[error("{0}")]
    Resume(String),
    /// The stored state was written by a different schema.
    #[error("thread {thread:?} was checkpointed with state schema {stored}, but this graph has schema {current}; run it with the graph that wrote it, or start a new thread")]
    SchemaMismatch {
        /// The thread.
        thread: String,
        /// Version in the checkpoint.
        stored: String,
        /// Version of the graph.
        current: String,
    },
    /// `update_state` could not tell which node to act as.
    #[error("{0}")]
    Update(String),
    /// The run was cancelled; the last checkpoint is kept and the thread can be resumed.
    #[error("run on thread {0:?} was cancelled")]
    Cancelled(String),
    /// The operation needs a checkpointer.
    #[error("{0} needs a checkpointer: compile the graph with one")]
    NoCheckpointer(&'static str),
    /// The checkpoint store failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}
