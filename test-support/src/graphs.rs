//! Graph-building and run helpers shared by the engine and agent-node tests: channels, logged
//! chains, counting nodes, and one-line `invoke`/`resume`/`state` calls that fail the test on
//! an unexpected error.

use agentgraph_runtime::*;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Channels and graphs
// ---------------------------------------------------------------------------------------------

pub fn list(name: &str) -> ChannelSpec {
    ChannelSpec::new(name, "list<string>".parse().unwrap())
        .reducer(Arc::new(Append))
        .default_value(json!([]))
}

pub fn int(name: &str) -> ChannelSpec {
    ChannelSpec::new(name, ValueType::Int).default_value(json!(0))
}

/// A message list folded by `add_messages`, empty by default.
pub fn message_list(name: &str) -> ChannelSpec {
    ChannelSpec::new(name, ValueType::Messages)
        .reducer(Arc::new(AddMessages))
        .default_value(json!([]))
}

/// A graph whose state is one `log` list, the state of most engine tests.
pub fn log_graph(name: &str) -> GraphBuilder {
    GraphBuilder::new(name).channel(list("log"))
}

/// A [`log_graph`] with one [`logger`] per name, chained from START in that order.
pub fn logged_chain(name: &str, nodes: &[&'static str]) -> GraphBuilder {
    let mut path = vec![START];
    let mut g = log_graph(name);
    for &node in nodes {
        g = g.node(node, logger(node));
        path.push(node);
    }
    g.chain(&path)
}

// ---------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------

/// A node appending its own name to `log`.
pub fn logger(name: &'static str) -> Arc<dyn Node> {
    node_fn(move |_| async move { Ok(Update::new().set("log", json!([name]))) })
}

/// A node appending its name to `log` and counting its runs.
pub fn counted(name: &'static str, runs: Arc<AtomicUsize>) -> Arc<dyn Node> {
    counting(runs, move |_, _| async move {
        Ok(Update::new().set("log", json!([name])))
    })
}

/// A node that counts its calls in `calls`, then runs `body` with its context and the number
/// of calls before this one (0 on the first).
pub fn counting<F, Fut>(calls: Arc<AtomicUsize>, body: F) -> Arc<dyn Node>
where
    F: Fn(TaskContext, usize) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = Result<Update, NodeError>> + std::marker::Send + 'static,
{
    let body = Arc::new(body);
    node_fn(move |ctx| {
        let (calls, body) = (calls.clone(), body.clone());
        async move {
            let before = calls.fetch_add(1, Ordering::SeqCst);
            body(ctx, before).await
        }
    })
}

/// A node writing the same `value` to `channel` on every run.
pub fn writes(channel: &'static str, value: Value) -> Arc<dyn Node> {
    node_fn(move |_| {
        let value = value.clone();
        async move { Ok(Update::new().set(channel, value)) }
    })
}

// ---------------------------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------------------------

pub fn memory() -> Arc<dyn Checkpointer> {
    Arc::new(MemoryCheckpointer::new())
}

pub fn values(v: Value) -> Input {
    Input::values(v)
}

/// Streams a run of `g` on thread `thread`; its result and the custom events it emitted.
pub async fn run_with_custom_events(
    g: &CompiledGraph,
    input: Value,
    thread: &str,
) -> (Result<RunOutput, RunError>, Vec<Value>) {
    let (events, out) = g
        .stream(values(input), RunConfig::thread(thread))
        .collect()
        .await;
    let custom = events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Custom(v) => Some(v),
            _ => None,
        })
        .collect();
    (out, custom)
}

/// Runs `g` from an empty input, without a thread; the run must succeed.
pub async fn run(g: &CompiledGraph) -> RunOutput {
    g.invoke(values(json!({})), RunConfig::default())
        .await
        .unwrap_or_else(|e| panic!("run of {} failed: {e}", g.name()))
}

/// Runs `g` from an empty input, without a thread; the run must fail.
pub async fn run_err(g: &CompiledGraph) -> RunError {
    g.invoke(values(json!({})), RunConfig::default())
        .await
        .expect_err("run succeeded, expected an error")
}

/// Runs `g` from an empty input on `thread`; the run must succeed.
pub async fn run_on(g: &CompiledGraph, thread: &str) -> RunOutput {
    invoke_on(g, thread, values(json!({}))).await
}

/// Continues `thread` from its latest checkpoint; the run must succeed.
pub async fn continue_on(g: &CompiledGraph, thread: &str) -> RunOutput {
    invoke_on(g, thread, Input::Continue).await
}

/// Resumes `thread`'s pending interrupt with `value`; the run must succeed.
pub async fn resume(g: &CompiledGraph, thread: &str, value: Value) -> RunOutput {
    invoke_on(g, thread, Input::resume(value)).await
}

/// Resumes `thread` with `value`; the run must fail.
pub async fn resume_err(g: &CompiledGraph, thread: &str, value: Value) -> RunError {
    g.invoke(Input::resume(value), RunConfig::thread(thread))
        .await
        .expect_err("resume succeeded, expected an error")
}

/// Runs `input` on `thread`; the run must succeed.
pub async fn invoke_on(g: &CompiledGraph, thread: &str, input: Input) -> RunOutput {
    g.invoke(input, RunConfig::thread(thread))
        .await
        .unwrap_or_else(|e| panic!("run of {} on {thread:?} failed: {e}", g.name()))
}

// ---------------------------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------------------------

pub fn log_of(out: &RunOutput) -> Vec<String> {
    serde_json::from_value(out.values["log"].clone()).unwrap()
}

/// The pending interrupts of a run that stopped at an interrupt.
pub fn interrupts_of(status: RunStatus) -> Vec<Interrupt> {
    match status {
        RunStatus::Interrupted { interrupts, .. } => interrupts,
        other => panic!("expected an interrupted run, got {other:?}"),
    }
}

/// The status of a run stopped at a static breakpoint before `next`.
pub fn paused_before(next: &[&str]) -> RunStatus {
    RunStatus::Interrupted {
        interrupts: vec![],
        next: next.iter().map(|n| n.to_string()).collect(),
    }
}

/// The latest state of `thread`, which must exist.
pub async fn state_of(g: &CompiledGraph, thread: &str) -> StateSnapshot {
    g.get_state(thread, None)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no state for thread {thread:?}"))
}

/// How many checkpoints `thread`'s history holds.
pub async fn history_len(g: &CompiledGraph, thread: &str) -> usize {
    g.history(thread, ListQuery::default()).await.unwrap().len()
}
