//! The deep-agent primitives driven by the scripted model: `delegate` (sub-agents as child
//! runs: no cascading, the pool check, an interrupt and a crash inside one resumed inside it),
//! `plan` (approval, dependency order, cycles refused) and deferred tools (search → load →
//! offered on the next call).

use crate::common::*;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelRequest, ModelResponse};
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_agents::orchestration::{
    orchestration_tools, DeferredTools, ToolPool, LOADED_TOOLS,
};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::*;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The scripted model, recording each request with the calling node.
struct Recorder {
    inner: ScriptedModel,
    seen: Mutex<Vec<(String, ModelRequest)>>,
}

impl Recorder {
    fn new(script: Value) -> Arc<Self> {
        Arc::new(Recorder {
            inner: ScriptedModel::from_json(script).expect("script"),
            seen: Mutex::new(Vec::new()),
        })
    }
    fn requests(&self, node: &str) -> Vec<ModelRequest> {
        let seen = self.seen.lock().expect("lock");
        seen.iter()
            .filter(|(n, _)| n == node)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

#[async_trait]
impl ChatModel for Recorder {
    fn name(&self) -> String {
        self.inner.name()
    }
    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        self.seen
            .lock()
            .expect("lock")
            .push((ctx.node.clone(), req.clone()));
        self.inner.complete(req, ctx).await
    }
}

/// A tool counting its calls; `pending_first` makes the first call never finish (a crash
/// point), `ask` makes it ask a human.
struct Counted {
    name: &'static str,
    calls: Arc<AtomicUsize>,
    mode: Mode,
    reached: Arc<tokio::sync::Notify>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    HangFirst,
    Ask,
}

#[async_trait]
impl Tool for Counted {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Reports the weather of a city (a test tool that counts its calls)."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.mode {
            Mode::HangFirst if n == 0 => {
                self.reached.notify_one();
                std::future::pending::<()>().await;
            }
            Mode::Ask => {
                let answer = ctx.interrupt(json!({"kind": "question", "question": "go on?"}))?;
                return Ok(ToolOutput::text(format!("{} answered {answer}", self.name)));
            }
            _ => {}
        }
        Ok(ToolOutput::text(format!("{} call {}", self.name, n + 1)))
    }
}

struct Kit {
    tools: BTreeMap<&'static str, Arc<AtomicUsize>>,
    reached: Arc<tokio::sync::Notify>,
}

impl Kit {
    fn new() -> Self {
        Kit {
            tools: BTreeMap::new(),
            reached: Arc::new(tokio::sync::Notify::new()),
        }
    }
    fn tool(&mut self, name: &'static str, mode: Mode) -> Arc<dyn Tool> {
        let calls = self.tools.entry(name).or_default().clone();
        Arc::new(Counted {
            name,
            calls,
            mode,
            reached: self.reached.clone(),
        })
    }
    fn calls(&self, name: &str) -> usize {
        self.tools[name].load(Ordering::SeqCst)
    }
}

/// An orchestrator (`agent` ⇄ `tools`) whose pool is `pool`; it is offered the pool and the
/// orchestration tools, or only `core` plus loaded ones when given.
fn orchestrator(
    model: Arc<dyn ChatModel>,
    pool: Vec<Arc<dyn Tool>>,
    core: Option<&[&str]>,
) -> CompiledGraph {
    let map: ToolPool = Arc::new(
        pool.iter()
            .map(|t| (t.name().to_string(), t.clone()))
            .collect(),
    );
    let mut all = pool.clone();
    all.extend(orchestration_tools(map, vec!["weather".into()], Vec::new()));
    let executor = ToolExecutorNode::new(all).model(model.clone());
    let mut llm = LlmNode::new(model).tools(executor.specs());
    if let Some(core) = core {
        llm = llm.deferred(DeferredTools {
            core: core.iter().map(|s| s.to_string()).collect(),
            loaded_channel: LOADED_TOOLS.into(),
        });
    }
    GraphBuilder::new("orchestrator")
        .channel(message_list("messages"))
        .channel(list(LOADED_TOOLS))
        .channel(ChannelSpec::new("plan", ValueType::Json))
        .channel(ChannelSpec::new("verify_loop", ValueType::Json).default_value(json!({})))
        .agent_loop(Arc::new(llm), Arc::new(executor))
        .compile()
        .expect("compiles")
        .with_checkpointer(memory())
}

fn ask(text: &str) -> Input {
    values(json!({"messages": [{"type": "human", "id": "h1", "content": text}]}))
}

fn tool_messages(values: &Value) -> Vec<Value> {
    values["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["type"] == "tool")
        .cloned()
        .collect()
}

fn delegate_call(tools: Value) -> Value {
    json!({"name": "delegate", "args": {"role": "weather checker",
        "instructions": "Find the weather and report it.", "task": "Weather in Paris?",
        "tools": tools}})
}

fn tool_names(req: &ModelRequest) -> Vec<String> {
    req.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn a_sub_agent_that_delegates_is_refused_and_its_answer_reaches_the_orchestrator() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather"]))]},
        {"node": "subagent", "tool_calls": [delegate_call(json!(["weather"]))]},
        {"node": "subagent", "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]},
        {"node": "subagent", "text": "Sunny in Paris."},
        {"node": "agent", "text": "It is sunny."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather], None);
    let (events, out) = graph
        .stream(ask("weather?"), RunConfig::thread("t"))
        .collect()
        .await;
    let out = out.expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    // The sub-agent's tool steps stream under its namespace.
    let nested: Vec<(String, String)> = events
        .iter()
        .filter(|e| !e.ns.is_empty())
        .filter_map(|e| match &e.kind {
            EventKind::Custom(d) if d["status"] == "completed" => Some((
                e.node.clone().unwrap_or_default(),
                d["tool"].as_str().unwrap_or("").to_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        nested,
        [("subagent_tools".to_string(), "weather".to_string())]
    );
    let sub = model.requests("subagent");
    assert_eq!(sub.len(), 3);
    // The sub-agent is offered its subset only, and its system prompt is the instructions.
    assert_eq!(tool_names(&sub[0]), ["weather"]);
    assert!(sub[0].system[0]
        .text
        .contains("Find the weather and report it."));
    assert_eq!(sub[0].messages.len(), 1, "a clean context: its task alone");
    let refusal = &sub[1].messages[2];
    assert_eq!(refusal["type"], "tool");
    assert_eq!(refusal["content"]["error"]["code"], "NO_DELEGATION");
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["content"]["answer"], "Sunny in Paris.");
    assert_eq!(kit.calls("weather"), 1);
}

#[tokio::test]
async fn unknown_or_forbidden_tools_in_a_delegate_subset_are_refused() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather", "rain_radar"]))]},
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather", "delegate"]))]},
        {"node": "agent", "text": "Could not delegate."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather], None);
    let out = graph
        .invoke(ask("weather?"), RunConfig::thread("t"))
        .await
        .expect("run");
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs[0]["content"]["error"]["code"], "UNKNOWN_TOOL");
    let text = msgs[0]["content"]["error"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("`rain_radar`") && text.contains("weather"),
        "{text}"
    );
    assert_eq!(msgs[1]["content"]["error"]["code"], "FORBIDDEN_TOOL");
    assert!(model.requests("subagent").is_empty(), "no sub-agent ran");
}

#[tokio::test]
async fn an_interrupt_inside_a_delegate_resumes_inside_it() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let confirm = kit.tool("confirm", Mode::Ask);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather", "confirm"]))]},
        {"node": "subagent", "tool_calls": [{"name": "weather", "args": {}}]},
        {"node": "subagent", "tool_calls": [{"name": "confirm", "args": {}}]},
        {"node": "subagent", "text": "Confirmed and done."},
        {"node": "agent", "text": "Done."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather, confirm], None);
    let out = graph
        .invoke(ask("go"), RunConfig::thread("t"))
        .await
        .expect("run");
    let interrupts = interrupts_of(out.status);
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].value["question"], "go on?");
    assert_eq!(interrupts[0].ns.len(), 1, "raised inside the child run");
    let out = graph
        .invoke(Input::resume(json!("yes")), RunConfig::thread("t"))
        .await
        .expect("resumed");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    // The sub-agent's finished steps were not run again.
    assert_eq!(kit.calls("weather"), 1);
    assert_eq!(kit.calls("confirm"), 2, "asked once, answered once");
    assert_eq!(model.requests("subagent").len(), 3);
    assert_eq!(
        tool_messages(&out.values)[0]["content"]["answer"],
        "Confirmed and done."
    );
}

#[tokio::test]
async fn a_crash_inside_a_delegate_resumes_inside_it() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let radar = kit.tool("radar", Mode::HangFirst);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather", "radar"]))]},
        {"node": "subagent", "tool_calls": [{"name": "weather", "args": {}}]},
        {"node": "subagent", "tool_calls": [{"name": "radar", "args": {}}]},
        {"node": "subagent", "text": "Radar clear."},
        {"node": "agent", "text": "Done."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather, radar], None);
    let reached = kit.reached.clone();
    // The process "dies" while the sub-agent's radar call runs: the run's future is dropped.
    tokio::select! {
        r = graph.invoke(ask("go"), RunConfig::thread("t")) => panic!("the run finished: {r:?}"),
        _ = reached.notified() => {}
    }
    let out = graph
        .invoke(Input::Continue, RunConfig::thread("t"))
        .await
        .expect("continued");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    assert_eq!(
        kit.calls("weather"),
        1,
        "the child's finished step is not run again"
    );
    assert_eq!(kit.calls("radar"), 2);
    assert_eq!(model.requests("subagent").len(), 3);
    assert_eq!(model.requests("agent").len(), 2);
    assert_eq!(
        tool_messages(&out.values)[0]["content"]["answer"],
        "Radar clear."
    );
}

fn plan_call(tasks: Value) -> Value {
    json!({"name": "plan", "args": {"tasks": tasks}})
}

#[tokio::test]
async fn an_approved_plan_runs_its_tasks_in_dependency_order() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    // Listed out of order: c needs a and b, b needs a.
    let tasks = json!([
        {"id": "c", "kind": "delegate", "title": "Write the report", "spec": "Combine.",
         "deps": ["a", "b"], "role": "writer", "tools": []},
        {"id": "a", "kind": "research", "title": "Get the weather", "spec": "Paris."},
        {"id": "b", "kind": "delegate", "title": "Check the radar", "spec": "Rain?",
         "deps": ["a"], "role": "radar reader", "tools": ["weather"]}
    ]);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [plan_call(tasks)]},
        {"node": "subagent", "text": "A: sunny"},
        {"node": "subagent", "text": "B: no rain"},
        {"node": "subagent", "text": "C: sunny, dry"},
        {"node": "agent", "text": "Report ready."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather], None);
    let out = graph
        .invoke(ask("report"), RunConfig::thread("t"))
        .await
        .expect("run");
    let interrupts = interrupts_of(out.status);
    assert_eq!(interrupts[0].value["kind"], "plan_review");
    assert_eq!(
        interrupts[0].value["tasks"].as_array().map(Vec::len),
        Some(3)
    );
    assert!(
        model.requests("subagent").is_empty(),
        "nothing runs before approval"
    );
    let out = graph
        .invoke(
            Input::resume(json!({"approved": true})),
            RunConfig::thread("t"),
        )
        .await
        .expect("approved");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let tasks: Vec<String> = model
        .requests("subagent")
        .iter()
        .map(|r| r.messages[0]["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tasks.len(), 3);
    assert!(tasks[0].starts_with("Get the weather"), "{tasks:?}");
    assert!(tasks[1].starts_with("Check the radar") && tasks[1].contains("A: sunny"));
    assert!(tasks[2].starts_with("Write the report"));
    assert!(tasks[2].contains("A: sunny") && tasks[2].contains("B: no rain"));
    // The research task got the research tools; the delegate ones their subsets.
    let sub = model.requests("subagent");
    assert_eq!(tool_names(&sub[0]), ["weather"]);
    assert!(tool_names(&sub[2]).is_empty());
    let result = &tool_messages(&out.values)[0]["content"]["tasks"];
    assert_eq!(
        result,
        &json!([
            {"id": "c", "status": "succeeded", "result": "C: sunny, dry"},
            {"id": "a", "status": "succeeded", "result": "A: sunny"},
            {"id": "b", "status": "succeeded", "result": "B: no rain"}
        ])
    );
    assert_eq!(out.values["plan"]["approved"], true);
    assert_eq!(out.values["plan"]["tasks"][0]["status"], "succeeded");
}

#[tokio::test]
async fn cyclic_or_dangling_plans_are_refused_before_asking() {
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [plan_call(json!([
            {"id": "a", "kind": "research", "title": "A", "spec": "a", "deps": ["b"]},
            {"id": "b", "kind": "research", "title": "B", "spec": "b", "deps": ["a"]}]))]},
        {"node": "agent", "tool_calls": [plan_call(json!([
            {"id": "a", "kind": "research", "title": "A", "spec": "a", "deps": ["z"]}]))]},
        {"node": "agent", "tool_calls": [plan_call(json!([
            {"id": "a", "kind": "build-workflow", "title": "A", "spec": "a"}]))]},
        {"node": "agent", "text": "No plan."}
    ]}));
    let graph = orchestrator(model.clone(), Vec::new(), None);
    let out = graph
        .invoke(ask("plan"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "no approval asked");
    let msgs = tool_messages(&out.values);
    let error = |i: usize| {
        (
            msgs[i]["content"]["error"]["code"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            msgs[i]["content"]["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    assert_eq!(error(0).0, "INVALID_PLAN");
    assert!(error(0).1.contains("cycle"), "{}", error(0).1);
    assert!(error(1).1.contains("`z`"), "{}", error(1).1);
    assert_eq!(error(2).0, "UNSUPPORTED_KIND");
}

#[tokio::test]
async fn a_rejected_plan_runs_nothing() {
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [plan_call(json!([
            {"id": "a", "kind": "research", "title": "A", "spec": "a"}]))]},
        {"node": "agent", "text": "OK, no plan."}
    ]}));
    let mut kit = Kit::new();
    let graph = orchestrator(model.clone(), vec![kit.tool("weather", Mode::Plain)], None);
    graph
        .invoke(ask("plan"), RunConfig::thread("t"))
        .await
        .expect("run");
    let out = graph
        .invoke(
            Input::resume(json!({"approved": false, "feedback": "Too long."})),
            RunConfig::thread("t"),
        )
        .await
        .expect("rejected");
    assert!(model.requests("subagent").is_empty());
    let text = tool_messages(&out.values)[0]["content"].to_string();
    assert!(
        text.contains("rejected") && text.contains("Too long."),
        "{text}"
    );
    assert_eq!(out.values["plan"]["approved"], false);
}

#[tokio::test]
async fn a_deferred_tool_is_offered_once_searched_and_loaded() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let radar = kit.tool("radar", Mode::Plain);
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "search_tools", "args": {"query": "weather of a city"}}]},
        {"node": "agent", "tool_calls": [{"name": "load_tool", "args": {"names": ["weather"]}}]},
        {"node": "agent", "tool_calls": [{"name": "weather", "args": {"city": "Oslo"}}]},
        {"node": "agent", "tool_calls": [{"name": "load_tool", "args": {"names": ["snow_gauge"]}}]},
        {"node": "agent", "text": "Cold."}
    ]}));
    let core = ["plan", "delegate", "ask_user", "search_tools", "load_tool"];
    let graph = orchestrator(model.clone(), vec![weather, radar], Some(&core));
    let out = graph
        .invoke(ask("weather in Oslo?"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let reqs = model.requests("agent");
    let mut sorted_core: Vec<String> = core.iter().map(|s| s.to_string()).collect();
    sorted_core.sort();
    let offered = |i: usize| {
        let mut names = tool_names(&reqs[i]);
        names.sort();
        names
    };
    assert_eq!(offered(0), sorted_core);
    assert_eq!(offered(1), sorted_core, "found is not loaded");
    let mut with_weather = sorted_core.clone();
    with_weather.push("weather".into());
    with_weather.sort();
    assert_eq!(offered(2), with_weather);
    assert_eq!(offered(4), with_weather, "kept for the rest of the thread");
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs[0]["content"]["tools"][0]["name"], "weather");
    assert_eq!(msgs[2]["content"], "weather call 1");
    assert_eq!(msgs[3]["content"]["error"]["code"], "UNKNOWN_TOOL");
    assert_eq!(out.values[LOADED_TOOLS], json!(["weather"]));
}

/// `peek {url}`: gated by host, then answers without any network.
struct Peek;

#[async_trait]
impl Tool for Peek {
    fn name(&self) -> &str {
        "peek"
    }
    fn description(&self) -> &str {
        "Reads a URL."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let url = args["url"].as_str().unwrap_or_default();
        let remember = agentgraph_agents::orchestration::gate_url(ctx, url, "approved_domains")?;
        let mut out = ToolOutput::text(format!("read {url}"));
        if let Some((channel, hosts)) = remember {
            out = out.write(channel, hosts);
        }
        Ok(out)
    }
}

#[tokio::test]
async fn each_new_host_is_approved_once_per_thread_and_a_denial_is_reported() {
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "peek", "args": {"url": "https://Docs.Example.org/a"}}]},
        {"node": "agent", "tool_calls": [{"name": "peek", "args": {"url": "https://docs.example.org/b"}}]},
        {"node": "agent", "tool_calls": [{"name": "peek", "args": {"url": "https://other.example.net/"}}]},
        {"node": "agent", "tool_calls": [{"name": "peek", "args": {"url": "file:///etc/passwd"}}]},
        {"node": "agent", "text": "Done."}
    ]}));
    let executor = ToolExecutorNode::new([Arc::new(Peek) as Arc<dyn Tool>]);
    let llm = LlmNode::new(model.clone()).tools(executor.specs());
    let graph = GraphBuilder::new("web")
        .channel(message_list("messages"))
        .channel(list("approved_domains"))
        .agent_loop(Arc::new(llm), Arc::new(executor))
        .compile()
        .expect("compiles")
        .with_checkpointer(memory());
    let thread = RunConfig::thread("t");
    let out = graph
        .invoke(ask("read"), thread.clone())
        .await
        .expect("run");
    let asked = interrupts_of(out.status);
    assert_eq!(asked[0].value["kind"], "domain_access");
    assert_eq!(asked[0].value["host"], "docs.example.org");
    // Approved: the second URL on the same host is read without asking; the next host asks.
    let out = graph
        .invoke(Input::resume(json!("yes")), thread.clone())
        .await
        .expect("approved");
    let asked = interrupts_of(out.status);
    assert_eq!(asked[0].value["host"], "other.example.net");
    let out = graph
        .invoke(Input::resume(json!("no")), thread)
        .await
        .expect("denied");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs[0]["content"], "read https://Docs.Example.org/a");
    assert_eq!(msgs[1]["content"], "read https://docs.example.org/b");
    assert_eq!(msgs[2]["content"]["error"]["code"], "DOMAIN_DENIED");
    assert_eq!(msgs[3]["content"]["error"]["code"], "INVALID_URL");
    assert_eq!(out.values["approved_domains"], json!(["docs.example.org"]));
}

#[tokio::test]
async fn ask_user_pauses_and_returns_the_answer() {
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "ask_user",
            "args": {"question": "Which workflow?", "options": ["hello", "orders"]}}]},
        {"node": "agent", "text": "OK."}
    ]}));
    let graph = orchestrator(model.clone(), Vec::new(), None);
    let thread = RunConfig::thread("t");
    let out = graph
        .invoke(ask("run it"), thread.clone())
        .await
        .expect("run");
    let asked = interrupts_of(out.status);
    assert_eq!(asked[0].value["kind"], "question");
    assert_eq!(asked[0].value["options"], json!(["hello", "orders"]));
    let out = graph
        .invoke(Input::resume(json!("orders")), thread)
        .await
        .expect("answered");
    assert_eq!(
        tool_messages(&out.values)[0]["content"],
        json!({"answer": "orders"})
    );
}

#[tokio::test]
async fn a_failed_task_skips_the_tasks_that_depend_on_it() {
    // The sub-agent of `a` finds no scripted answer for itself: its model call fails.
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [plan_call(json!([
            {"id": "a", "kind": "research", "title": "A", "spec": "a"},
            {"id": "b", "kind": "research", "title": "B", "spec": "b", "deps": ["a"]}]))]},
        {"node": "agent", "text": "Task a failed."}
    ]}));
    let mut kit = Kit::new();
    let graph = orchestrator(model.clone(), vec![kit.tool("weather", Mode::Plain)], None);
    let thread = RunConfig::thread("t");
    graph
        .invoke(ask("plan"), thread.clone())
        .await
        .expect("run");
    let out = graph
        .invoke(Input::resume(json!(true)), thread)
        .await
        .expect("approved");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    let tasks = &tool_messages(&out.values)[0]["content"]["tasks"];
    assert_eq!(tasks[0]["status"], "failed");
    assert!(
        tasks[0]["result"]
            .as_str()
            .unwrap_or("")
            .starts_with("SUBAGENT_FAILED"),
        "{tasks}"
    );
    assert_eq!(tasks[1]["status"], "skipped");
    assert_eq!(model.requests("subagent").len(), 1, "b never ran");
}

#[tokio::test]
async fn the_verify_loop_stops_when_the_same_failure_repeats() {
    let verdict = |v: &str, f: &str| json!({"name": "report_verdict", "args": {"subject": "wf-1", "verdict": v, "failure": f}});
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [verdict("needs_patch", "Send failed: 401")]},
        {"node": "agent", "tool_calls": [verdict("needs_patch", "Send failed: 403")]},
        {"node": "agent", "text": "Stopped."}
    ]}));
    let verify: Arc<dyn Tool> = Arc::new(agentgraph_agents::orchestration::ReportVerdictTool);
    let graph = orchestrator(model.clone(), vec![verify], None);
    let out = graph
        .invoke(ask("verify"), RunConfig::thread("t"))
        .await
        .expect("run");
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs[0]["content"]["phase"], "patching");
    assert_eq!(msgs[1]["content"]["phase"], "failed_terminal");
    assert!(msgs[1]["content"]["next"]
        .as_str()
        .unwrap_or("")
        .starts_with("Stop"));
    assert_eq!(
        out.values["verify_loop"]["wf-1"]["phase"],
        "failed_terminal"
    );
}

/// A sub-agent sending the same failing call again and again is stopped at the third time and
/// the orchestrator told why (a small local model sent one failing run_workflow sixteen
/// times, until the sub-agent's step limit).
#[tokio::test]
async fn a_sub_agent_repeating_a_failing_call_is_stopped_and_the_orchestrator_told() {
    let mut kit = Kit::new();
    let weather = kit.tool("weather", Mode::Plain);
    let again = json!({"node": "subagent", "tool_calls": [{"name": "rain_radar", "args": {"city": "Paris"}}]});
    let model = Recorder::new(json!({"responses": [
        {"node": "agent", "tool_calls": [delegate_call(json!(["weather"]))]},
        // A fourth would be the sub-agent's next answer; the orchestrator answers instead.
        again.clone(), again.clone(), again,
        {"node": "agent", "text": "The sub-agent got stuck."}
    ]}));
    let graph = orchestrator(model.clone(), vec![weather], None);
    let out = graph
        .invoke(ask("weather?"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    // Three attempts, then no fourth model call.
    assert_eq!(model.requests("subagent").len(), 3);
    let msgs = tool_messages(&out.values);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    let error = &msgs[0]["content"]["error"];
    assert_eq!(error["code"], "SUBAGENT_STUCK", "{msgs:#?}");
    let text = error["message"].as_str().unwrap_or_default();
    assert!(text.contains("rain_radar"), "{text}");
    assert_eq!(kit.calls("weather"), 0);
}
