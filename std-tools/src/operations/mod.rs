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
//!
//! By topic: the [`Operation`] type and [`parse_operations`] (`operation`), the errors
//! (`error`), applying batches and their [`ApplyNote`]s (`apply`), the node and connection edits
//! (`edits`, `connections`), expression renaming ([`rename_in_expression`]), the queue's
//! reducer ([`OperationsReducer`]) and the node that applies it ([`ApplyOperationsNode`]).

mod apply;
mod connections;
mod edits;
mod error;
mod node;
mod operation;
mod reducer;
mod rename;

pub use apply::{
    apply_operations, apply_operations_in_place, apply_operations_with, Applied, ApplyNote,
};
pub use error::{OperationError, OperationErrorKind, ParseOperationsError};
pub use node::{ApplyOperationsNode, ApplyOutcome};
pub use operation::{parse_operations, Operation};
pub use reducer::{reducer, register, OperationsReducer};
pub use rename::{is_identifier, rename_in_expression, rename_in_value};

/// The name of the operations reducer in a
/// [`ReducerRegistry`](agentgraph_runtime::reducer::ReducerRegistry).
pub const OPERATIONS_REDUCER: &str = "operations";
