//! The Pregel engine, cut by phase: [`plan`] the next tasks, run them ([`runner`]), [`apply`]
//! their writes, [`persist`] checkpoints — driven one super-step at a time by the run loop
//! (`loop.rs`); [`subgraph`] runs child graphs, [`api`] is the public face.
//!
//! Nodes see an immutable snapshot taken at the step's start; their writes are applied after
//! every task finished, in task order (pull tasks by node name, then push tasks by send index),
//! never completion order.

mod api;
mod apply;
mod changes;
mod r#loop;
mod persist;
mod plan;
mod runner;
mod subgraph;

pub use api::{
    Durability, HistoryEntry, Input, Resume, RunConfig, RunOutput, RunStats, RunStatus, RunStream,
    StateSnapshot,
};
