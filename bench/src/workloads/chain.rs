//! `chain` (§2.1): `START → n0 → n1 → … → n{N-1} → END`; each node bumps `count` (LastValue)
//! and appends its entry to `trace` (Append). The graph is also used by `threads` (N = 3) and
//! `resume` (100-character entries, interrupt before the last node).

use super::{
    build_timed, int_field, invoke_timed, list_field, str_of, Measurement, RunCtx, THREAD,
};
use crate::oracle::chain_entry;
use crate::BenchError;
use agentgraph_runtime::{
    node_fn, Append, ChannelSpec, CompiledGraph, GraphBuilder, GraphError, Input, TaskContext,
    Update, ValueType, END, START,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// How the chain graph is built.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChainShape {
    /// Trace entries padded to this many characters (`resume`: 100); `None`: just `n{i}`.
    pub width: Option<usize>,
    /// Static interrupt before the last node (`resume`).
    pub interrupt_before_last: bool,
}

/// The chain graph of `n` nodes (n ≥ 1), recursion limit N + 10.
pub fn build(n: usize, shape: ChainShape) -> Result<CompiledGraph, GraphError> {
    let mut g = GraphBuilder::new("chain")
        .channel(ChannelSpec::new("count", ValueType::Int).default_value(json!(0)))
        .channel(
            ChannelSpec::new("trace", ValueType::List(Box::new(ValueType::String)))
                .reducer(Arc::new(Append))
                .default_value(json!([])),
        )
        .recursion_limit(n + 10);
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let entry = chain_entry(i, shape.width);
        g = g.node(
            name.as_str(),
            node_fn(move |ctx: TaskContext| {
                let update = Update::new()
                    .set("count", json!(ctx.state().i64("count") + 1))
                    .set("trace", Value::Array(vec![Value::String(entry.clone())]));
                async move { Ok(update) }
            }),
        );
    }
    let mut path: Vec<&str> = Vec::with_capacity(n + 2);
    path.push(START);
    path.extend(names.iter().map(String::as_str));
    path.push(END);
    g = g.chain(&path);
    if shape.interrupt_before_last {
        if let Some(last) = names.last() {
            g = g.interrupt_before(last.as_str());
        }
    }
    g.compile()
}

/// The input of every chain run: `{count: 0, trace: []}`.
pub fn input() -> Input {
    Input::values(json!({"count": 0, "trace": []}))
}

/// `count` and the trace entries of a chain's final state.
pub fn count_and_trace(values: &Value) -> Result<(i64, Vec<&str>), BenchError> {
    let count = int_field(values, "count")?;
    let trace = list_field(values, "trace")?
        .iter()
        .map(|v| str_of(v, "a trace entry"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((count, trace))
}

/// `<prefix>;count=<count>;trace=<trace joined by ",">` (chain and resume).
pub fn canonical(prefix: &str, values: &Value) -> Result<String, BenchError> {
    let (count, trace) = count_and_trace(values)?;
    Ok(format!("{prefix};count={count};trace={}", trace.join(",")))
}

/// Runs `chain` once (timed).
pub async fn run(n: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| build(n, ChainShape::default()))?;
    let graph = ctx.attach(graph);
    let (out, wall) = invoke_timed(&graph, input(), ctx.config(THREAD)).await?;
    Ok(Measurement {
        wall,
        build,
        stats: out.stats,
        canonical: canonical("chain", &out.values)?,
        first_run: None,
        latencies: Vec::new(),
    })
}
