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
    /// A node panicked (after its retries, if its policy retries any failure).
    #[error("node `{node}` panicked at step {step} of thread {thread:?}: {message}")]
    Panicked {
        /// The node.
        node: String,
        /// The step.
        step: i64,
        /// The thread.
        thread: String,
        /// Subgraph path of the node.
        ns: Vec<String>,
        /// The panic's message.
        message: String,
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

/// What kind of failure a [`RunError`] is: the one mapping interfaces use to turn run errors
/// into exit codes and HTTP statuses.
///
/// | kind | errors | CLI exit | HTTP |
/// |---|---|---|---|
/// | `Caller` | `InvalidInput`, `Resume`, `NothingToResume`, `CheckpointNotFound`, `Update` | 2 | 400 |
/// | `Conflict` | `SchemaMismatch` | 1 | 409 |
/// | `Cancelled` | `Cancelled` | 1 | run status `cancelled` |
/// | `Failed` | every other error (nodes, panics, writes, routes, limits, the store) | 1 | 500 |
///
/// A run stopped at an interrupt is not an error: it ends with
/// [`crate::RunStatus::Interrupted`] (CLI exit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunErrorKind {
    /// The caller asked for something the thread cannot do: bad input, a resume that answers
    /// no pending interrupt, an unknown thread or checkpoint, an ambiguous state update.
    Caller,
    /// The thread's checkpoints belong to another graph (or an incompatible version of it).
    Conflict,
    /// The run was cancelled; its last checkpoint is kept and the thread can be resumed.
    Cancelled,
    /// The run failed: a node, a panic, a write, a route, the recursion limit, a missing
    /// checkpointer or the store.
    Failed,
}

impl RunError {
    /// What kind of failure this is (see [`RunErrorKind`] for the table).
    pub fn kind(&self) -> RunErrorKind {
        match self {
            RunError::InvalidInput(_)
            | RunError::Resume(_)
            | RunError::NothingToResume(_)
            | RunError::CheckpointNotFound { .. }
            | RunError::Update(_) => RunErrorKind::Caller,
            RunError::SchemaMismatch { .. } => RunErrorKind::Conflict,
            RunError::Cancelled(_) => RunErrorKind::Cancelled,
            RunError::NodeFailed { .. }
            | RunError::Panicked { .. }
            | RunError::ConflictingWrites { .. }
            | RunError::TypeMismatch { .. }
            | RunError::UnknownChannel { .. }
            | RunError::Reducer { .. }
            | RunError::UnknownTarget { .. }
            | RunError::RecursionLimit { .. }
            | RunError::NoCheckpointer(_)
            | RunError::Checkpoint(_) => RunErrorKind::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s() -> String {
        "x".to_string()
    }

    #[test]
    fn every_error_has_its_kind() {
        use RunErrorKind::*;
        let cases: Vec<(RunError, RunErrorKind)> = vec![
            (RunError::InvalidInput(s()), Caller),
            (RunError::Resume(s()), Caller),
            (RunError::NothingToResume(s()), Caller),
            (
                RunError::CheckpointNotFound {
                    thread: s(),
                    id: CheckpointId::after(None),
                },
                Caller,
            ),
            (RunError::Update(s()), Caller),
            (
                RunError::SchemaMismatch {
                    thread: s(),
                    stored: s(),
                    current: s(),
                },
                Conflict,
            ),
            (RunError::Cancelled(s()), Cancelled),
            (
                RunError::NodeFailed {
                    node: s(),
                    step: 1,
                    thread: s(),
                    ns: Vec::new(),
                    message: s(),
                    code: None,
                },
                Failed,
            ),
            (
                RunError::Panicked {
                    node: s(),
                    step: 1,
                    thread: s(),
                    ns: Vec::new(),
                    message: s(),
                },
                Failed,
            ),
            (
                RunError::ConflictingWrites {
                    channel: s(),
                    step: 1,
                    first_writer: s(),
                    first_value: s(),
                    second_writer: s(),
                    second_value: s(),
                },
                Failed,
            ),
            (
                RunError::TypeMismatch {
                    node: s(),
                    channel: s(),
                    ty: s(),
                    value: s(),
                    detail: s(),
                },
                Failed,
            ),
            (
                RunError::UnknownChannel {
                    node: s(),
                    channel: s(),
                    known: s(),
                },
                Failed,
            ),
            (
                RunError::Reducer {
                    node: s(),
                    channel: s(),
                    reducer: s(),
                    message: s(),
                },
                Failed,
            ),
            (
                RunError::UnknownTarget {
                    from: s(),
                    target: s(),
                    known: s(),
                },
                Failed,
            ),
            (
                RunError::RecursionLimit {
                    limit: 1,
                    thread: s(),
                    nodes: s(),
                },
                Failed,
            ),
            (RunError::NoCheckpointer("resuming"), Failed),
            (RunError::Checkpoint(CheckpointError::Backend(s())), Failed),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
    }

    #[test]
    fn a_panic_names_the_node_and_its_message() {
        let e = RunError::Panicked {
            node: "p".into(),
            step: 3,
            thread: "t".into(),
            ns: Vec::new(),
            message: "kaboom".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"node `p` panicked at step 3 of thread "t": kaboom"#
        );
    }
}
