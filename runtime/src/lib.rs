//! # agentgraph runtime
//!
//! A Pregel-style runtime for LLM agent graphs, in the spirit of LangGraph: typed state
//! channels with reducers, super-steps whose tasks run concurrently and whose writes apply in a
//! deterministic order, conditional routes, fan-out (`send`), commands, waiting edges,
//! checkpoints after every step (sled by default) with history, time travel and fork,
//! human-in-the-loop interrupts, subgraphs with namespaces, streaming, retries, timeouts and
//! cancellation; a long-term [`store`] shared across threads, and a per-node result [`cache`].
//!
//! ```
//! use agentgraph_runtime::*;
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let graph = GraphBuilder::new("hello")
//!     .channel(ChannelSpec::new("trace", "list<string>".parse().unwrap())
//!         .reducer(Arc::new(Append))
//!         .default_value(json!([])))
//!     .node("a", node_fn(|_| async { Ok(Update::new().set("trace", json!(["a"]))) }))
//!     .node("b", node_fn(|_| async { Ok(Update::new().set("trace", json!(["b"]))) }))
//!     .chain(&["START", "a", "b"])
//!     .compile()
//!     .unwrap()
//!     .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
//! let out = graph.invoke(Input::values(json!({})), RunConfig::thread("t1")).await.unwrap();
//! assert_eq!(out.values, json!({"trace": ["a", "b"]}));
//! # });
//! ```

#![warn(missing_docs)]

pub mod cache;
pub mod checkpoint;
mod engine;
mod error;
mod graph;
mod ids;
pub mod messages;
mod node;
pub mod reducer;
mod retry;
mod schema;
mod state;
pub mod store;
pub mod stream;
mod subgraph;
mod update;
mod value_type;

pub use cache::{CachePolicy, NodeCache, StoreCache};
pub use checkpoint::{
    Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery, MemoryCheckpointer,
    PruneStats, SledCheckpointer, Source,
};
pub use engine::{
    Durability, HistoryEntry, Input, Resume, RunConfig, RunOutput, RunStats, RunStatus, RunStream,
    StateSnapshot,
};
pub use error::{GraphError, RunError, RunErrorKind};
pub use graph::{
    CompiledGraph, GraphBuilder, NodeOptions, Route, RouteFn, Targets, DEFAULT_RECURSION_LIMIT,
};
pub use ids::{fnv1a64, is_valid_thread_id, stable_id, CheckpointId, THREAD_ID_RULE};
pub use node::{node_fn, FnNode, Interrupt, Node, NodeError, TaskContext};
pub use reducer::{
    AddMessages, Append, FnReducer, Merge, Numeric, Reducer, ReducerRegistry, Replace, Storage,
};
pub use retry::{RetryOn, RetryPolicy};
pub use schema::{ChannelSpec, Schema};
pub use state::StateView;
pub use stream::{DebugEvent, Emitter, Event, EventKind, Mode, Modes};
pub use subgraph::Subgraph;
pub use tokio_util::sync::CancellationToken;
pub use update::{Goto, Send, Update, END, START};
pub use value_type::{ParseTypeError, TypeMismatch, ValueType};
