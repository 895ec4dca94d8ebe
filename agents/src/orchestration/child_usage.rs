//! The model calls of a child run, counted once: the child records them in its own `usage`
//! channel (`usage_sum`), checkpointed with each of its steps; when it ends, finished or not,
//! its usage so far goes to the calling tool's ledger ([`crate::tools::UsageLedger`]), which
//! its caller adds to the parent's usage channel. A child resumed after a crash or an
//! interrupt carries its earlier calls in its checkpoint, and the parent's step that was cut
//! wrote nothing, so each call counts once.

use crate::nodes::UsageSum;
use crate::tools::ToolContext;
use agentgraph_runtime::{ChannelSpec, TaskContext, ValueType};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The channel counting a child run's model calls.
pub const USAGE: &str = "usage";

/// The `usage_sum` channel of a child run.
pub fn usage_channel() -> ChannelSpec {
    ChannelSpec::new(USAGE, ValueType::Json)
        .reducer(Arc::new(UsageSum))
        .default_value(json!({}))
}

/// A child run's usage as of its last finished step, for a `Subgraph`'s output mapping: the
/// runtime maps a child's state out after each finished step (and as it resumes) and at its
/// end, so this holds its calls even when it then fails.
#[derive(Clone, Default)]
pub struct ChildUsage(Arc<Mutex<Value>>);

impl ChildUsage {
    /// Keeps the `usage` channel of `state` (the child's state, as mapped out).
    pub fn keep(&self, state: &Value) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = state[USAGE].clone();
    }

    /// Records what was kept in `ctx`'s ledger as the usage of the child run of task `child`,
    /// its nodes shown under `label`.
    pub fn hand_over(&self, ctx: &ToolContext, child: &TaskContext, label: &str) {
        let usage = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        ctx.usage().record(child.task_id(), label, &usage);
    }
}
