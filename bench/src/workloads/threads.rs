//! `threads` (§2.5): the 3-node chain, built once, invoked T times one after the other on one
//! store, with thread ids `"0"`, `"1"`, …; the timed region covers all T runs.

use super::chain::{self, ChainShape};
use super::{add_stats, build_timed, invoke_timed, Measurement, RunCtx};
use crate::BenchError;
use agentgraph_runtime::RunStats;
use std::time::Duration;

/// Runs `threads` with `t` threads (timed).
pub async fn run(t: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| chain::build(3, ChainShape::default()))?;
    let graph = ctx.attach(graph);
    let mut outs = Vec::with_capacity(t);
    let mut stats = RunStats::default();
    // The timed region is the sum of the T invokes; the little work between them (collecting
    // the outputs) is negligible and not counted.
    let mut wall = Duration::ZERO;
    for id in 0..t {
        let (out, d) = invoke_timed(&graph, chain::input(), ctx.config(id.to_string())).await?;
        wall += d;
        stats = add_stats(stats, out.stats);
        outs.push(out.values);
    }
    let mut runs = Vec::with_capacity(t);
    for (id, values) in outs.iter().enumerate() {
        let (count, trace) = chain::count_and_trace(values)?;
        runs.push(format!("{id}:{count}:{}", trace.join(",")));
    }
    Ok(Measurement {
        wall,
        build,
        stats,
        canonical: format!("threads;threads={t};{}", runs.join("|")),
        first_run: None,
        latencies: Vec::new(),
    })
}
