//! Opening a run on a thread, the step the server's routes, `agentgraph run`/`resume`/`fork`
//! and `agentgraph chat` share: check the thread holds this graph's state, check new input,
//! decide what a resume answers, and give the run its id.

use agentgraph_runtime::{CompiledGraph, Input, Resume, RunConfig, RunError, StateSnapshot};
use serde_json::Value;

/// How a run on a thread begins.
#[derive(Debug, Clone)]
pub enum Opening {
    /// New input (checked against the graph's input channels first).
    Input(Value),
    /// Continue from the thread's checkpoint (or `RunConfig::checkpoint_id`, a fork), as the
    /// runtime decides: after a breakpoint, a failure, a cancel or a crash.
    Continue,
    /// Answer the pending interrupts with this.
    Answer(Resume),
    /// Whatever the thread waits for: its pending interrupts answered with this, else the steps
    /// a cancel or crash left ([`OpenError::NothingToResume`] when there are none).
    Resume(Resume),
}

/// Why a run could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The input does not fit the graph.
    #[error("{0}")]
    Input(RunError),
    /// Reading the thread failed; [`RunError::SchemaMismatch`] when it holds another graph's
    /// state.
    #[error("{0}")]
    Run(#[from] RunError),
    /// A resume of a thread that has no checkpoint.
    #[error("no thread {0}")]
    NoThread(String),
    /// A resume of a thread with no pending interrupt and nothing left to run.
    #[error("thread {0} has no pending interrupt and nothing left to run")]
    NothingToResume(String),
}

/// A run ready to start: `graph.stream(run.input, run.config)`.
#[derive(Debug)]
pub struct OpenRun {
    /// What the run starts from.
    pub input: Input,
    /// The configuration, with `run_id` set (the engine's checkpoint metadata uses it too).
    pub config: RunConfig,
    /// The thread's latest state before the run (`None` for a new thread).
    pub state: Option<StateSnapshot>,
}

impl OpenRun {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        self.config.run_id.as_deref().unwrap_or_default()
    }
}

/// Opens a run of `graph` on `config.thread_id`; a `config.run_id` left unset gets a new id.
pub async fn open_run(
    graph: &CompiledGraph,
    opening: Opening,
    mut config: RunConfig,
) -> Result<OpenRun, OpenError> {
    if let Opening::Input(v) = &opening {
        // Input the graph's typed channels refuse is refused now, not by a run that fails.
        graph.check_input(v).map_err(OpenError::Input)?;
    }
    let thread = config.thread_id.clone();
    // A thread holding another graph's state is refused before it is re-bound to this one.
    let state = graph.get_state(&thread, None).await?;
    let input = match opening {
        Opening::Input(v) => Input::Values(v),
        Opening::Continue => Input::Continue,
        Opening::Answer(answer) => Input::Resume(answer),
        Opening::Resume(answer) => {
            let s = state
                .as_ref()
                .ok_or_else(|| OpenError::NoThread(thread.clone()))?;
            if !s.interrupts.is_empty() {
                Input::Resume(answer)
            } else if !s.next.is_empty() {
                Input::Continue
            } else {
                return Err(OpenError::NothingToResume(thread));
            }
        }
    };
    config
        .run_id
        .get_or_insert_with(|| uuid::Uuid::new_v4().to_string());
    Ok(OpenRun {
        input,
        config,
        state,
    })
}
