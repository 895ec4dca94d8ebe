//! `loop` (§2.3): `START → agent`; after `agent` a route goes to `tools` while
//! `iterations < N`, else to END; `tools → agent`. `messages` uses `add_messages`, `iterations`
//! is LastValue. Messages are JSON objects `{type, id, content, [tool_calls], [tool_call_id]}`.

use super::{
    build_timed, field, int_field, invoke_timed, list_field, str_of, Measurement, RunCtx, THREAD,
};
use crate::BenchError;
use agentgraph_runtime::{
    node_fn, AddMessages, ChannelSpec, CompiledGraph, GraphBuilder, GraphError, Input, NodeError,
    Targets, TaskContext, Update, ValueType, END, START,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// The `ai` message the agent appends at iteration `i` (or the final one when `i >= n`).
fn agent_message(i: i64, n: i64) -> Value {
    if i < n {
        json!({
            "type": "ai",
            "id": format!("ai-{i}"),
            "content": format!("call {i}"),
            "tool_calls": [{"id": format!("call-{i}"), "name": "square", "args": {"x": i}}],
        })
    } else {
        json!({"type": "ai", "id": "ai-final", "content": "done"})
    }
}

/// What `tools` does: answer the last message's first tool call.
fn tools_update(ctx: &TaskContext) -> Result<Update, NodeError> {
    let state = ctx.state();
    let i = state.i64("iterations");
    let call = state
        .list("messages")
        .last()
        .and_then(|m| m.get("tool_calls"))
        .and_then(|c| c.get(0))
        .ok_or_else(|| NodeError::fatal("tools: the last message has no tool call"))?;
    let x = call
        .get("args")
        .and_then(|a| a.get("x"))
        .and_then(Value::as_i64)
        .ok_or_else(|| NodeError::fatal("tools: the tool call has no integer args.x"))?;
    let call_id = call.get("id").cloned().unwrap_or(Value::Null);
    let msg = json!({
        "type": "tool",
        "id": format!("tool-{i}"),
        "content": (x * x).to_string(),
        "tool_call_id": call_id,
    });
    Ok(Update::new()
        .set("messages", Value::Array(vec![msg]))
        .set("iterations", json!(i + 1)))
}

/// The agent/tools graph looping `n` times, recursion limit 2N + 10.
pub fn build(n: usize) -> Result<CompiledGraph, GraphError> {
    let n_i = i64::try_from(n).unwrap_or(i64::MAX);
    GraphBuilder::new("loop")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .channel(ChannelSpec::new("iterations", ValueType::Int).default_value(json!(0)))
        .node(
            "agent",
            node_fn(move |ctx: TaskContext| {
                let msg = agent_message(ctx.state().i64("iterations"), n_i);
                let update = Update::new().set("messages", Value::Array(vec![msg]));
                async move { Ok(update) }
            }),
        )
        .node(
            "tools",
            node_fn(|ctx: TaskContext| {
                let r = tools_update(&ctx);
                async move { r }
            }),
        )
        .edge(START, "agent")
        .route_to("agent", &["tools", END], move |s| {
            Ok(Targets::from(if s.i64("iterations") < n_i {
                "tools"
            } else {
                END
            }))
        })
        .edge("tools", "agent")
        .recursion_limit(2 * n + 10)
        .compile()
}

/// `loop;iterations=<N>;messages=<type>:<id>:<content>|…`.
pub fn canonical(values: &Value) -> Result<String, BenchError> {
    let iterations = int_field(values, "iterations")?;
    let msgs = list_field(values, "messages")?
        .iter()
        .map(|m| {
            Ok(format!(
                "{}:{}:{}",
                str_of(field(m, "type")?, "a message type")?,
                str_of(field(m, "id")?, "a message id")?,
                str_of(field(m, "content")?, "a message content")?
            ))
        })
        .collect::<Result<Vec<String>, BenchError>>()?;
    Ok(format!(
        "loop;iterations={iterations};messages={}",
        msgs.join("|")
    ))
}

/// Runs `loop` once (timed).
pub async fn run(n: usize, ctx: &RunCtx<'_>) -> Result<Measurement, BenchError> {
    let (graph, build) = build_timed(|| build(n))?;
    let graph = ctx.attach(graph);
    let input = Input::values(json!({
        "messages": [{"type": "human", "id": "human-0", "content": "start"}],
        "iterations": 0,
    }));
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
