//! `fanout` (§2.2): `START → split`; a route after `split` returns N `Send("work", {i: k})`;
//! `work → reduce → END`. `work` reads its send payload, not the state; `reduce` runs once,
//! after the whole step of N `work` tasks.

use super::{build_timed, int_field, invoke_timed, list_field, Measurement, RunCtx, THREAD};
use crate::BenchError;
use agentgraph_runtime::{
    node_fn, Append, ChannelSpec, CompiledGraph, GraphBuilder, GraphError, Input, NodeError, Send,
    Targets, TaskContext, Update, ValueType, END, START,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// The fan-out graph emitting `n` sends, recursion limit 10.
pub fn build(n: usize) -> Result<CompiledGraph, GraphError> {
    GraphBuilder::new("fanout")
        .channel(
            ChannelSpec::new("results", ValueType::List(Box::new(ValueType::Int)))
                .reducer(Arc::new(Append))
                .default_value(json!([])),
        )
        .channel(ChannelSpec::new("total", ValueType::Int).default_value(json!(0)))
        .node("split", node_fn(|_| async { Ok(Update::new()) }))
        .node(
            "work",
            node_fn(|ctx: TaskContext| {
                let i = ctx
                    .payload()
                    .and_then(|p| p.get("i"))
                    .and_then(Value::as_i64)
                    .ok_or_else(|| NodeError::fatal("work needs a send payload {i: int}"));
                async move {
                    let i = i?;
                    Ok(Update::new().set("results", json!([i * i])))
                }
            }),
        )
        .node(
            "reduce",
            node_fn(|ctx: TaskContext| {
                let total: i64 = ctx
                    .state()
                    .list("results")
                    .iter()
                    .filter_map(Value::as_i64)
                    .sum();
                async move { Ok(Update::new().set("total", json!(total))) }
            }),
        )
        .edge(START, "split")
        .route_to("split", &["work"], move |_| {
            let sends: Vec<Send> = (0..n)
                .map(|k| Send {
                    node: "work".into(),
                    payload: json!({ "i": k }),
                })
                .collect();
            Ok(Targets::from(sends))
        })
        .edge("work", "reduce")
        .edge("reduce", END)
        .recursion_limit(10)
        .compile()
}

/// `fanout;total=<total>;results=<results sorted ascending>`.
pub fn canonical(values: &Value) -> Result<String, BenchError> {
    let total = int_field(values, "total")?;
    let mut results = list_field(values, "results")?
        .iter()
        .map(|v| {
            v.as_i64()
                .ok_or_else(|| BenchError::Run(format!("a result is not an integer: {v}")))
        })
        .collect::<Result<Vec<i64>, _>>()?;
    results.sort_unstable();
    let list: Vec<String> = results.iter().map(i64::to_string).collect();
    Ok(format!("fanout;total={total};results={}", list.join(",")))
}

/// Runs `fanout` once (timed).
pub async fn run(n: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| build(n))?;
    let graph = ctx.attach(graph);
    let input = Input::values(json!({"results": [], "total": 0}));
    let (out, wall) = invoke_timed(&graph, input, ctx.config(THREAD)).await?;
    Ok(Measurement {
        wall,
        build,
        stats: out.stats,
        canonical: canonical(&out.values)?,
        first_run: None,
        latencies: Vec::new(),
    })
}
