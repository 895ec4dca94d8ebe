//! Background tasks: sub-agents started by a tool call that returns at once, each running as
//! a detached child run on its own thread (`<parent>:task:<id>`), checkpointed on the
//! parent's checkpointer, while the orchestrator goes on.
//!
//! - [`START_BACKGROUND_TASK`] starts one (role, instructions, task, tools from the pool, an
//!   id the model chooses); at most [`DEFAULT_LIMIT`] run at once per thread: one more is
//!   refused with `TASK_LIMIT`, naming the running ones (the model waits or cancels one).
//! - The thread's task list lives in the parent's [`BACKGROUND_TASKS`] channel
//!   (`json = {} reduce merge`): what each task does, its thread, its state and result.
//! - [`TASK_STATUS`] brings the list up to date and answers the status block; a graph calls
//!   it before each model call (a `tool` node writing a string channel that the `llm`
//!   node's system prompt renders), so the orchestrator sees ids, states and last results.
//!   Tasks the list says are running but this process does not know (a restart) are resumed
//!   there from their checkpoints: finished steps are not run again.
//! - [`SEND_TO_TASK`] queues a correction: the task reads it before its next model call.
//! - [`CANCEL_TASK`] ("stop that"), [`Registry::cancel`] (the server's per-task cancel) and
//!   [`Registry::cancel_thread`] (the server's thread cancel; also when the token of a run
//!   that started or watched tasks fires) stop tasks. A stopped or failed task records its
//!   outcome in its own thread, so a restart does not run it again.

mod child;
mod registry;
mod status;
mod tools;

pub use child::{CORRECTION_PREFIX, INBOX_NODE, OUTCOME, TASK_NODE, TASK_TOOLS_NODE};
pub use registry::{registry, BackgroundError, LiveStatus, Registry, TaskState};
pub use status::{status_block, TaskEntry, BACKGROUND_TASKS};
pub use tools::{CANCEL_TASK, SEND_TO_TASK, START_BACKGROUND_TASK, TASK_STATUS};

use super::ToolPool;
use crate::tools::Tool;
use std::sync::Arc;

/// Background tasks run at once per thread unless told otherwise.
pub const DEFAULT_LIMIT: usize = 5;
/// Model calls of a background task unless told otherwise (corrections add calls).
pub const DEFAULT_TASK_STEPS: usize = 16;

/// What the background tools share: the pool tasks take their tools from, the limit per
/// thread and the model calls of each task.
pub struct Background {
    pool: ToolPool,
    limit: usize,
    max_steps: usize,
}

impl Background {
    /// Tasks over tools of `pool`, [`DEFAULT_LIMIT`] per thread, [`DEFAULT_TASK_STEPS`] each.
    pub fn new(pool: ToolPool) -> Self {
        Background {
            pool,
            limit: DEFAULT_LIMIT,
            max_steps: DEFAULT_TASK_STEPS,
        }
    }

    /// Sets how many tasks run at once per thread.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n.max(1);
        self
    }

    /// Sets the most model calls of each task.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.max_steps = n.max(1);
        self
    }

    /// The four tools: start, status, send, cancel.
    pub fn tools(self) -> Vec<Arc<dyn Tool>> {
        tools::all(Arc::new(self))
    }
}
