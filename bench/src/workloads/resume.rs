//! `resume` (§2.6): the chain of N nodes with 100-character entries and a static interrupt
//! before `n{N-1}`. Run 1 (untimed, `first_run_s`) stops before the last node; run 2 (timed)
//! continues the thread with no new input: load the latest checkpoint, run `n{N-1}`, persist.

use super::chain::{self, ChainShape};
use super::{build_timed, int_field, invoke_timed, FirstRun, Measurement, RunCtx, THREAD};
use crate::BenchError;
use agentgraph_runtime::{Input, RunStatus};

/// Width of every trace entry.
pub const ENTRY_WIDTH: usize = 100;

/// Runs `resume` at size `n` (n ≥ 2, a checkpointer attached).
pub async fn run(n: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    if n < 2 {
        return Err(BenchError::Usage("resume needs --n of at least 2".into()));
    }
    if ctx.store.checkpointer().is_none() {
        return Err(BenchError::Usage(
            "resume needs a checkpointer (memory or sled)".into(),
        ));
    }
    let shape = ChainShape {
        width: Some(ENTRY_WIDTH),
        interrupt_before_last: true,
    };
    let (graph, build) = build_timed(|| chain::build(n, shape))?;
    let graph = ctx.attach(graph);

    let (first, first_wall) = invoke_timed(&graph, chain::input(), ctx.config(THREAD)).await?;
    let last = format!("n{}", n - 1);
    match &first.status {
        RunStatus::Interrupted { next, .. } if next.contains(&last) => {}
        other => {
            return Err(BenchError::Run(format!(
                "the first run should stop before {last}, it ended with {other:?}"
            )))
        }
    }
    let count = int_field(&first.values, "count")?;
    if count != n as i64 - 1 {
        return Err(BenchError::Run(format!(
            "the first run should leave count = {}, it left {count}",
            n - 1
        )));
    }

    let (out, wall) = invoke_timed(&graph, Input::Continue, ctx.config(THREAD)).await?;
    if out.status != RunStatus::Done {
        return Err(BenchError::Run(format!(
            "the resumed run should finish, it ended with {:?}",
            out.status
        )));
    }
    Ok(Measurement {
        wall,
        build,
        stats: out.stats,
        canonical: chain::canonical("resume", &out.values)?,
        first_run: Some(FirstRun {
            wall: first_wall,
            stats: first.stats,
        }),
        latencies: Vec::new(),
    })
}
