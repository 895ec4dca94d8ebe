//! The parent thread's `usage` channel counts every model call made for it: the
//! orchestrator's, its sub-agents' (`delegate`), a plan's tasks', and background tasks' once
//! they ended; a crash or an interrupt inside a child run, then the resume, counts each of the
//! child's calls once. Every expected figure is written from the scripts below.

use crate::common::*;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{
    CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, Pricing,
};
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode, UsageSum};
use agentgraph_agents::orchestration::background::registry;
use agentgraph_agents::orchestration::{orchestration_tools, ToolPool};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::*;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// $1 per million input tokens, $10 per million output tokens.
const PRICES: Pricing = Pricing {
    input: 1.0,
    output: 10.0,
    cache_read: 0.0,
    cache_write: 0.0,
};

/// A tool that answers, hangs on its first call (a crash point) or asks a human.
struct Weather {
    name: &'static str,
    calls: Arc<AtomicUsize>,
    how: How,
    reached: Arc<tokio::sync::Notify>,
}

#[derive(Clone, Copy)]
enum How {
    Answer,
    HangFirst,
    Ask,
}

#[async_trait]
impl Tool for Weather {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Reports the weather (a test tool)."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.how {
            How::HangFirst if n == 0 => {
                self.reached.notify_one();
                std::future::pending::<()>().await;
            }
            How::Ask => {
                ctx.interrupt(json!({"kind": "question", "question": "go on?"}))?;
            }
            _ => {}
        }
        Ok(ToolOutput::text("sunny"))
    }
}

fn tool(name: &'static str, how: How, reached: &Arc<tokio::sync::Notify>) -> Arc<dyn Tool> {
    Arc::new(Weather {
        name,
        calls: Arc::default(),
        how,
        reached: reached.clone(),
    })
}

/// One scripted model per node (background tasks run on their own threads, each with its own
/// cursor: a script per node keeps every thread's answers apart).
struct ByNode(BTreeMap<String, ScriptedModel>);

impl ByNode {
    fn new(scripts: &[(&str, Value)]) -> Arc<Self> {
        Arc::new(ByNode(
            scripts
                .iter()
                .map(|(node, responses)| {
                    let script = json!({ "responses": responses });
                    let model = ScriptedModel::from_json(script).expect("script");
                    (node.to_string(), model)
                })
                .collect(),
        ))
    }
}

#[async_trait]
impl ChatModel for ByNode {
    fn name(&self) -> String {
        "scripted/by-node".into()
    }
    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        match self.0.get(&ctx.node) {
            Some(m) => m.complete(req, ctx).await,
            None => Err(ModelError::Script(format!("no script for `{}`", ctx.node))),
        }
    }
}

/// An answer of `node` using `input` and `output` tokens.
fn answer(node: &str, input: u64, output: u64, body: Value) -> Value {
    let mut r = json!({"node": node, "usage": {"input_tokens": input, "output_tokens": output}});
    if let (Some(r), Some(body)) = (r.as_object_mut(), body.as_object()) {
        r.extend(body.clone());
    }
    r
}

/// An answer of `node` calling the tool `name` without arguments.
fn calls(node: &str, input: u64, output: u64, name: &str) -> Value {
    answer(node, input, output, json!({"tool_calls": [{"name": name}]}))
}

/// A final answer of `node`.
fn says(node: &str, input: u64, output: u64, text: &str) -> Value {
    answer(node, input, output, json!({"text": text}))
}

/// The orchestrator (`agent` ⇄ `tools`) recording usage, priced, in `usage`.
fn orchestrator(model: Arc<dyn ChatModel>, pool: Vec<Arc<dyn Tool>>) -> CompiledGraph {
    let map: ToolPool = Arc::new(
        pool.iter()
            .map(|t| (t.name().to_string(), t.clone()))
            .collect(),
    );
    let mut all = pool.clone();
    all.extend(orchestration_tools(map, vec!["weather".into()], Vec::new()));
    let executor = ToolExecutorNode::new(all)
        .model(model.clone())
        .usage_channel("usage")
        .pricing(PRICES);
    let llm = LlmNode::new(model)
        .tools(executor.specs())
        .usage_channel("usage")
        .pricing(PRICES);
    GraphBuilder::new("orchestrator")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("plan", ValueType::Json))
        .channel(
            ChannelSpec::new("background_tasks", ValueType::Json)
                .reducer(Arc::new(Merge))
                .default_value(json!({})),
        )
        .channel(
            ChannelSpec::new("usage", ValueType::Json)
                .reducer(Arc::new(UsageSum))
                .default_value(json!({})),
        )
        .agent_loop(Arc::new(llm), Arc::new(executor))
        .compile()
        .expect("compiles")
        .with_checkpointer(memory())
}

fn ask(text: &str) -> Input {
    values(json!({"messages": [{"type": "human", "content": text}]}))
}

/// `(calls, input tokens, output tokens)` of a usage entry.
fn counts(u: &Value) -> (u64, u64, u64) {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    (n("calls"), n("input_tokens"), n("output_tokens"))
}

fn cost(input: u64, output: u64) -> f64 {
    (input as f64 * PRICES.input + output as f64 * PRICES.output) / 1_000_000.0
}

fn assert_cost(u: &Value, expected: f64) {
    let got = u["cost_usd"].as_f64().unwrap_or(-1.0);
    assert!(
        (got - expected).abs() < 1e-12,
        "cost {got}, expected {expected}"
    );
}

fn delegate(tools: Value) -> Value {
    json!({"tool_calls": [{"name": "delegate", "args": {"role": "forecaster",
        "instructions": "Report the weather.", "task": "Paris?", "tools": tools}}]})
}

#[tokio::test]
async fn a_delegates_sub_agent_calls_are_in_the_parents_usage() {
    let reached = Arc::default();
    let model = ByNode::new(&[
        (
            "agent",
            json!([
                answer("agent", 100, 10, delegate(json!(["weather"]))),
                says("agent", 200, 20, "Sunny.")
            ]),
        ),
        (
            "subagent",
            json!([
                calls("subagent", 20, 2, "weather"),
                calls("subagent", 30, 3, "weather"),
                says("subagent", 40, 4, "Sunny in Paris.")
            ]),
        ),
    ]);
    let graph = orchestrator(model, vec![tool("weather", How::Answer, &reached)]);
    let out = graph
        .invoke(ask("weather?"), RunConfig::thread("usage-delegate"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let usage = &out.values["usage"];
    // 2 orchestrator calls (300 in, 30 out) + 3 sub-agent calls (90 in, 9 out).
    assert_eq!(counts(&usage["total"]), (5, 390, 39));
    assert_eq!(counts(&usage["nodes"]["agent"]), (2, 300, 30));
    assert_eq!(
        counts(&usage["nodes"]["tools/delegate/subagent"]),
        (3, 90, 9)
    );
    assert_cost(&usage["total"], cost(390, 39));
    assert_cost(&usage["nodes"]["tools/delegate/subagent"], cost(90, 9));
}

#[tokio::test]
async fn a_plans_two_tasks_count_once_across_an_interrupt_inside_the_second() {
    let reached = Arc::default();
    let plan = json!({"tool_calls": [{"name": "plan", "args": {"tasks": [
        {"id": "a", "kind": "research", "title": "Weather", "spec": "Paris."},
        {"id": "b", "kind": "delegate", "title": "Confirm", "spec": "Ask.", "deps": ["a"],
         "role": "confirmer", "tools": ["confirm"]}
    ]}}]});
    let model = ByNode::new(&[
        (
            "agent",
            json!([
                answer("agent", 100, 10, plan),
                says("agent", 200, 20, "Both done.")
            ]),
        ),
        (
            "subagent",
            json!([
                says("subagent", 10, 1, "A: sunny"),
                calls("subagent", 20, 2, "confirm"),
                says("subagent", 30, 3, "B: confirmed")
            ]),
        ),
    ]);
    let pool = vec![
        tool("weather", How::Answer, &reached),
        tool("confirm", How::Ask, &reached),
    ];
    let graph = orchestrator(model, pool);
    let thread = || RunConfig::thread("usage-plan");
    let out = graph.invoke(ask("plan it"), thread()).await.expect("run");
    assert_eq!(interrupts_of(out.status)[0].value["kind"], "plan_review");
    let out = graph
        .invoke(Input::resume(json!({"approved": true})), thread())
        .await
        .expect("approved");
    // Task a finished, task b asks: nothing of the plan's step is counted yet.
    assert_eq!(interrupts_of(out.status)[0].value["question"], "go on?");
    assert_eq!(counts(&out.values["usage"]["total"]), (1, 100, 10));
    let out = graph
        .invoke(Input::resume(json!("yes")), thread())
        .await
        .expect("answered");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let usage = &out.values["usage"];
    // 2 orchestrator calls (300, 30); task a: 1 call (10, 1); task b: 2 calls (50, 5).
    assert_eq!(counts(&usage["total"]), (5, 360, 36));
    assert_eq!(counts(&usage["nodes"]["tools/plan:a/subagent"]), (1, 10, 1));
    assert_eq!(counts(&usage["nodes"]["tools/plan:b/subagent"]), (2, 50, 5));
    assert_cost(&usage["total"], cost(360, 36));
}

#[tokio::test]
async fn a_crash_inside_a_delegate_then_the_resume_counts_each_call_once() {
    let reached: Arc<tokio::sync::Notify> = Arc::default();
    let model = ByNode::new(&[
        (
            "agent",
            json!([
                answer("agent", 100, 10, delegate(json!(["weather", "radar"]))),
                says("agent", 200, 20, "Done.")
            ]),
        ),
        (
            "subagent",
            json!([
                calls("subagent", 20, 2, "weather"),
                calls("subagent", 30, 3, "radar"),
                says("subagent", 40, 4, "Radar clear.")
            ]),
        ),
    ]);
    let pool = vec![
        tool("weather", How::Answer, &reached),
        tool("radar", How::HangFirst, &reached),
    ];
    let graph = orchestrator(model, pool);
    let thread = || RunConfig::thread("usage-crash");
    // The process "dies" during the radar call, after two of the sub-agent's model calls.
    tokio::select! {
        r = graph.invoke(ask("go"), thread()) => panic!("the run finished: {r:?}"),
        _ = reached.notified() => {}
    }
    let out = graph
        .invoke(Input::Continue, thread())
        .await
        .expect("continued");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let usage = &out.values["usage"];
    // 2 orchestrator calls (300, 30) + the sub-agent's 3 (90, 9): the two made before the
    // crash are counted once, from its checkpoints.
    assert_eq!(counts(&usage["total"]), (5, 390, 39));
    assert_eq!(
        counts(&usage["nodes"]["tools/delegate/subagent"]),
        (3, 90, 9)
    );
}

#[tokio::test]
async fn an_interrupt_inside_a_delegate_then_the_resume_counts_each_call_once() {
    let reached = Arc::default();
    let model = ByNode::new(&[
        (
            "agent",
            json!([
                answer("agent", 100, 10, delegate(json!(["confirm"]))),
                says("agent", 200, 20, "Done.")
            ]),
        ),
        (
            "subagent",
            json!([
                calls("subagent", 20, 2, "confirm"),
                says("subagent", 30, 3, "Confirmed.")
            ]),
        ),
    ]);
    let graph = orchestrator(model, vec![tool("confirm", How::Ask, &reached)]);
    let thread = || RunConfig::thread("usage-interrupt");
    let out = graph.invoke(ask("go"), thread()).await.expect("run");
    assert_eq!(interrupts_of(out.status).len(), 1);
    let out = graph
        .invoke(Input::resume(json!("yes")), thread())
        .await
        .expect("resumed");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    // 2 orchestrator calls (300, 30) + 2 sub-agent calls (50, 5).
    assert_eq!(counts(&out.values["usage"]["total"]), (4, 350, 35));
}

#[tokio::test]
async fn a_background_tasks_calls_are_added_once_when_its_end_is_recorded() {
    let start = json!({"tool_calls": [{"name": "start_background_task", "args": {
        "id": "scan", "role": "scanner", "instructions": "Scan.", "task": "Scan it.",
        "tools": ["weather"]}}]});
    let status = json!({"tool_calls": [{"name": "task_status", "args": {}}]});
    let reached = Arc::default();
    let model = ByNode::new(&[
        (
            "agent",
            json!([
                answer("agent", 100, 10, start),
                says("agent", 100, 10, "Started."),
                answer("agent", 100, 10, status.clone()),
                says("agent", 100, 10, "It is done."),
                answer("agent", 100, 10, status),
                says("agent", 100, 10, "Still done.")
            ]),
        ),
        (
            "task",
            json!([
                calls("task", 20, 2, "weather"),
                says("task", 30, 3, "Scanned.")
            ]),
        ),
    ]);
    let graph = orchestrator(model, vec![tool("weather", How::Answer, &reached)]);
    let thread = || RunConfig::thread("usage-background");
    let out = graph.invoke(ask("scan"), thread()).await.expect("turn 1");
    // The task runs detached: not counted while it may still run.
    assert_eq!(counts(&out.values["usage"]["total"]), (2, 200, 20));
    let ended = registry().wait("usage-background", "scan").await;
    assert_eq!(ended.map(|s| s.state.as_str()), Some("done"));
    let out = graph
        .invoke(ask("status?"), thread())
        .await
        .expect("turn 2");
    let usage = &out.values["usage"];
    // 4 orchestrator calls (400, 40) + the task's 2 (50, 5), added when its end is recorded.
    assert_eq!(counts(&usage["total"]), (6, 450, 45));
    assert_eq!(
        counts(&usage["nodes"]["tools/background:scan/task"]),
        (2, 50, 5)
    );
    assert_cost(&usage["total"], cost(450, 45));
    let out = graph.invoke(ask("again?"), thread()).await.expect("turn 3");
    // Two more orchestrator calls; the task is not added again.
    assert_eq!(counts(&out.values["usage"]["total"]), (8, 650, 65));
}
