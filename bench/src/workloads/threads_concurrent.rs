//! `threads-concurrent` (§2.7): the 3-node chain of `threads`, built once, invoked T times on
//! one store with at most C runs in flight, thread ids `"0"`, `"1"`, …; the timed region runs
//! from the first start to the last end. Each run's latency is recorded for p50/p99.

use super::chain::{self, ChainShape};
use super::{add_stats, build_timed, run_error, Measurement, RunCtx};
use crate::BenchError;
use agentgraph_runtime::RunStats;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Runs `threads-concurrent` with `t` threads, `c` at a time (timed).
pub async fn run(t: usize, c: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| chain::build(3, ChainShape::default()))?;
    let graph = Arc::new(ctx.attach(graph));
    let permits = Arc::new(Semaphore::new(c.max(1)));
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(t);
    for id in 0..t {
        let (graph, permits) = (graph.clone(), permits.clone());
        let config = ctx.config(id.to_string());
        tasks.push(tokio::spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|e| BenchError::Run(format!("semaphore: {e}")))?;
            let start = Instant::now();
            let out = graph
                .invoke(chain::input(), config)
                .await
                .map_err(run_error)?;
            Ok::<_, BenchError>((out, start.elapsed()))
        }));
    }
    let mut outs = Vec::with_capacity(t);
    for task in tasks {
        let r = task
            .await
            .map_err(|e| BenchError::Run(format!("a run's task failed: {e}")))?;
        outs.push(r?);
    }
    let wall = t0.elapsed();
    let mut stats = RunStats::default();
    let mut latencies = Vec::with_capacity(t);
    let mut runs = Vec::with_capacity(t);
    for (id, (out, latency)) in outs.into_iter().enumerate() {
        stats = add_stats(stats, out.stats);
        latencies.push(latency);
        let (count, trace) = chain::count_and_trace(&out.values)?;
        runs.push(format!("{id}:{count}:{}", trace.join(",")));
    }
    Ok(Measurement {
        wall,
        build,
        stats,
        canonical: format!("threads-concurrent;threads={t};{}", runs.join("|")),
        first_run: None,
        latencies,
    })
}

/// The `q`-quantile (0..=1) of `samples` by nearest rank; `None` when there are none.
pub fn quantile(samples: &[Duration], q: f64) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let ms: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(quantile(&ms, 0.5), Some(Duration::from_millis(50)));
        assert_eq!(quantile(&ms, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(quantile(&ms, 1.0), Some(Duration::from_millis(100)));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
