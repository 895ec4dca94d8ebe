//! `wide` (§2.4): N branches `w{i}`, each with an edge from START, one waiting edge from all of
//! them to `sink`, `sink → END`. `out` merges dicts; `sink` writes `total` and `count`.

use super::{build_timed, field, int_field, invoke_timed, Measurement, RunCtx, THREAD};
use crate::BenchError;
use agentgraph_runtime::{
    node_fn, ChannelSpec, CompiledGraph, GraphBuilder, GraphError, Input, Merge, TaskContext,
    Update, ValueType, END, START,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The wide graph of `n` branches, recursion limit 10.
pub fn build(n: usize) -> Result<CompiledGraph, GraphError> {
    let mut g = GraphBuilder::new("wide")
        .channel(
            ChannelSpec::new("out", ValueType::Map(Box::new(ValueType::Int)))
                .reducer(Arc::new(Merge))
                .default_value(json!({})),
        )
        .channel(ChannelSpec::new("total", ValueType::Int).default_value(json!(0)))
        .channel(ChannelSpec::new("count", ValueType::Int).default_value(json!(0)))
        .recursion_limit(10);
    let names: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let key = format!("k{i}");
        g = g
            .node(
                name.as_str(),
                node_fn(move |_| {
                    let mut out = Map::new();
                    out.insert(key.clone(), json!(i));
                    let update = Update::new().set("out", Value::Object(out));
                    async move { Ok(update) }
                }),
            )
            .edge(START, name.as_str());
    }
    let sources: Vec<&str> = names.iter().map(String::as_str).collect();
    g.node(
        "sink",
        node_fn(|ctx: TaskContext| {
            let (total, count) = match ctx.state().get("out").and_then(Value::as_object) {
                Some(out) => (
                    out.values().filter_map(Value::as_i64).sum::<i64>(),
                    out.len(),
                ),
                None => (0, 0),
            };
            let update = Update::new()
                .set("total", json!(total))
                .set("count", json!(count));
            async move { Ok(update) }
        }),
    )
    .join(&sources, "sink")
    .edge("sink", END)
    .compile()
}

/// `wide;count=<count>;total=<total>;out=<k:v sorted by key bytewise>`.
pub fn canonical(values: &Value) -> Result<String, BenchError> {
    let count = int_field(values, "count")?;
    let total = int_field(values, "total")?;
    let out = field(values, "out")?
        .as_object()
        .ok_or_else(|| BenchError::Run("`out` is not an object".into()))?;
    let mut items = out
        .iter()
        .map(|(k, v)| {
            v.as_i64()
                .map(|v| (k.as_str(), v))
                .ok_or_else(|| BenchError::Run(format!("out.{k} is not an integer: {v}")))
        })
        .collect::<Result<Vec<(&str, i64)>, _>>()?;
    items.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let list: Vec<String> = items.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    Ok(format!(
        "wide;count={count};total={total};out={}",
        list.join(",")
    ))
}

/// Runs `wide` once (timed).
pub async fn run(n: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| build(n))?;
    let graph = ctx.attach(graph);
    let input = Input::values(json!({"out": {}, "total": 0, "count": 0}));
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
