//! The six workloads. Each module builds its graph exactly as `WORKLOADS.md` §2 describes,
//! runs it with a timed region around `invoke` (§1.2) and renders the canonical string (§1.4)
//! from the state the run returned.

pub mod agent_loop;
pub mod chain;
pub mod fanout;
pub mod resume;
pub mod threads;
pub mod threads_concurrent;
pub mod wide;

use crate::config::Workload;
use crate::store::Store;
use crate::BenchError;
use agentgraph_runtime::{
    CompiledGraph, Durability, GraphError, Input, RunConfig, RunError, RunOutput, RunStats,
};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The thread id of the single-thread workloads (as in the LangGraph harness).
pub const THREAD: &str = "bench";

/// What one workload instance measured.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The timed region.
    pub wall: Duration,
    /// Building and compiling the graph (untimed).
    pub build: Duration,
    /// Counters of the timed region (summed over runs for `threads`).
    pub stats: RunStats,
    /// The canonical result string, from the returned state.
    pub canonical: String,
    /// `resume` only: the first, interrupted run.
    pub first_run: Option<FirstRun>,
    /// `threads-concurrent` only: each run's latency.
    pub latencies: Vec<Duration>,
}

/// The untimed first run of `resume`.
#[derive(Debug, Clone, Copy)]
pub struct FirstRun {
    /// Its duration.
    pub wall: Duration,
    /// Its counters.
    pub stats: RunStats,
}

/// How the runs of one instance are configured.
pub struct RunCtx<'a> {
    /// The store (attached to the graph unless `none`).
    pub store: &'a Store,
    /// When checkpoints are flushed.
    pub durability: Durability,
    /// `threads-concurrent`: runs in flight at once.
    pub concurrency: usize,
}

impl RunCtx<'_> {
    /// The run config for `thread`.
    pub fn config(&self, thread: impl Into<String>) -> RunConfig {
        RunConfig::thread(thread).durability(self.durability)
    }

    /// `graph` with the store attached.
    pub fn attach(&self, graph: CompiledGraph) -> CompiledGraph {
        self.store.attach(graph)
    }
}

/// Runs one instance of `workload` at size `n`.
pub async fn run(
    workload: Workload,
    n: usize,
    ctx: &RunCtx<'_>,
) -> Result<Measurement, BenchError> {
    match workload {
        Workload::Chain => chain::run(n, ctx).await,
        Workload::Fanout => fanout::run(n, ctx).await,
        Workload::Loop => agent_loop::run(n, ctx).await,
        Workload::Wide => wide::run(n, ctx).await,
        Workload::Threads => threads::run(n, ctx).await,
        Workload::Resume => resume::run(n, ctx).await,
        Workload::ThreadsConcurrent => threads_concurrent::run(n, ctx.concurrency, ctx).await,
    }
}

/// Builds a graph, timing it.
pub(crate) fn build_timed(
    build: impl FnOnce() -> Result<CompiledGraph, GraphError>,
) -> Result<(CompiledGraph, Duration), BenchError> {
    let t0 = Instant::now();
    let g = build().map_err(|e| BenchError::Run(format!("building the graph: {e}")))?;
    Ok((g, t0.elapsed()))
}

/// Invokes `graph` once inside a timed region: from the call until it returned, which is after
/// the runtime handed every checkpoint of the run to the store and flushed it as the durability
/// mode says.
pub(crate) async fn invoke_timed(
    graph: &CompiledGraph,
    input: Input,
    config: RunConfig,
) -> Result<(RunOutput, Duration), BenchError> {
    let t0 = Instant::now();
    let out = graph.invoke(input, config).await;
    let wall = t0.elapsed();
    let out = out.map_err(run_error)?;
    Ok((out, wall))
}

/// A run error as a bench error.
pub(crate) fn run_error(e: RunError) -> BenchError {
    BenchError::Run(format!("the run failed: {e}"))
}

/// Adds two sets of counters.
pub(crate) fn add_stats(a: RunStats, b: RunStats) -> RunStats {
    RunStats {
        steps: a.steps + b.steps,
        tasks: a.tasks + b.tasks,
        checkpoints_written: a.checkpoints_written + b.checkpoints_written,
    }
}

/// A channel of the final state.
pub(crate) fn field<'a>(values: &'a Value, key: &str) -> Result<&'a Value, BenchError> {
    values.get(key).ok_or_else(|| {
        BenchError::Run(format!("the final state has no `{key}`: {}", short(values)))
    })
}

/// An integer channel of the final state.
pub(crate) fn int_field(values: &Value, key: &str) -> Result<i64, BenchError> {
    let v = field(values, key)?;
    v.as_i64()
        .ok_or_else(|| BenchError::Run(format!("`{key}` is not an integer: {}", short(v))))
}

/// A list channel of the final state.
pub(crate) fn list_field<'a>(values: &'a Value, key: &str) -> Result<&'a [Value], BenchError> {
    let v = field(values, key)?;
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| BenchError::Run(format!("`{key}` is not a list: {}", short(v))))
}

/// A string item of a list or object.
pub(crate) fn str_of<'a>(v: &'a Value, what: &str) -> Result<&'a str, BenchError> {
    v.as_str()
        .ok_or_else(|| BenchError::Run(format!("{what} is not a string: {}", short(v))))
}

/// A short rendering of a value for error messages.
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 200 {
        s
    } else {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}…", &s[..cut])
    }
}
