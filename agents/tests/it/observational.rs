//! Observational memory in an agent graph (`observe` → `agent` ⇄ `tools` → `observe`): the
//! threshold starts the observer, the reflector condenses growing observations, the model's
//! prompt holds the observations and the recent messages but not the observed ones, a crash
//! during an observer call loses nothing, and working memory follows a principal across
//! threads but not to another principal.

use crate::common::*;
use agentgraph_agents::memory::observational::{working, ObserveNode, UpdateWorkingMemoryTool};
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{
    CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, Pricing,
};
use agentgraph_agents::nodes::{has_tool_calls, LlmNode, ToolExecutorNode};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::store::{InMemoryStore, Store};
use agentgraph_runtime::*;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The scripted model, recording each request with the calling node; with `hang_observer`
/// set, an observer call never returns (the process "dies" during it) and notifies `reached`.
struct Recorder {
    inner: ScriptedModel,
    seen: Mutex<Vec<(String, ModelRequest)>>,
    hang_observer: AtomicBool,
    reached: tokio::sync::Notify,
}

impl Recorder {
    fn new(script: Value) -> Arc<Self> {
        Arc::new(Recorder {
            inner: ScriptedModel::from_json(script).expect("script"),
            seen: Mutex::new(Vec::new()),
            hang_observer: AtomicBool::new(false),
            reached: tokio::sync::Notify::new(),
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
        if ctx.node == "observe" && self.hang_observer.load(Ordering::SeqCst) {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        self.inner.complete(req, ctx).await
    }
}

/// A tool answering with a large, recognisable record.
struct Lookup;

#[async_trait]
impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks a record up."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"id": {"type": "string"}}})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = args["id"].as_str().unwrap_or("?").to_string();
        // 1,000 characters: 400 estimated tokens.
        let body = format!("record {id}: {}", "x".repeat(1000 - 8 - id.len()));
        Ok(ToolOutput::text(body))
    }
}

fn graph(model: Arc<dyn ChatModel>, observe: ObserveNode) -> CompiledGraph {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Lookup), Arc::new(UpdateWorkingMemoryTool)];
    let executor = ToolExecutorNode::new(tools);
    let llm = LlmNode::new(model)
        .tools(executor.specs())
        .state_part("observations", "observations")
        .state_part("working_memory", "working_memory");
    GraphBuilder::new("observed")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new(
            "observations",
            ValueType::Optional(Box::new(ValueType::String)),
        ))
        .channel(ChannelSpec::new(
            "working_memory",
            ValueType::Optional(Box::new(ValueType::String)),
        ))
        .node("observe", Arc::new(observe))
        .node("agent", Arc::new(llm))
        .node("tools", Arc::new(executor))
        .edge(START, "observe")
        .edge("observe", "agent")
        .route("agent", |s| {
            if has_tool_calls(s, "messages") {
                "tools"
            } else {
                END
            }
        })
        .edge("tools", "observe")
        .compile()
        .expect("compiles")
        .with_checkpointer(memory())
}

/// The observe node of these tests: over 1,500 estimated tokens, keep the last 2 messages,
/// read about 1,000 tokens per observer call, reflect over `reflect_at`.
fn observer(model: Arc<dyn ChatModel>, reflect_at: usize) -> ObserveNode {
    let mut node = ObserveNode::new(model);
    node.threshold_tokens = 1_500;
    node.keep_last = 2;
    node.chunk_tokens = 1_000;
    node.reflect_at = reflect_at;
    node.working_memory_channel = Some("working_memory".into());
    node
}

fn lookup(id: &str) -> Value {
    json!({"node": "agent", "tool_calls": [{"name": "lookup", "args": {"id": id}}]})
}

fn ask(text: &str) -> Input {
    Input::values(json!({"messages": [{"type": "human", "id": "q", "content": text}]}))
}

fn system_text(req: &ModelRequest) -> String {
    req.system
        .iter()
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn contents(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Four lookups of 400 tokens each: the conversation passes 1,500 tokens after the fourth.
fn four_lookups_then(after: Vec<Value>) -> Value {
    let mut responses = vec![lookup("a1"), lookup("a2"), lookup("a3"), lookup("a4")];
    responses.extend(after);
    json!({ "responses": responses })
}

#[tokio::test]
async fn the_threshold_starts_the_observer_and_the_prompt_holds_observations_and_recent_messages() {
    let model = Recorder::new(four_lookups_then(vec![
        json!({"node": "observe", "text": "- a1 and a2 were looked up"}),
        json!({"node": "observe", "text": "- a3 was looked up"}),
        json!({"node": "agent", "text": "done"}),
    ]));
    let g = graph(model.clone(), observer(model.clone(), 10_000));
    let out = g
        .invoke(ask("look up a1 to a4"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    // Under the threshold for the first four model calls: no observer call before the fifth.
    let agent = model.requests("agent");
    assert_eq!(agent.len(), 5);
    assert!(!system_text(&agent[3]).contains("<observations>"));
    let observe = model.requests("observe");
    assert_eq!(observe.len(), 2, "two chunks of about 1,000 tokens");
    let read = contents(&observe[0]).join("");
    assert!(
        read.contains("record a1") && read.contains("record a2"),
        "{read}"
    );
    assert!(
        !read.contains("record a4"),
        "the recent messages are not observed"
    );

    // The fifth call: the observations, the question (pinned) and the recent messages.
    let last = &agent[4];
    assert!(
        system_text(last).contains(
            "<observations>\n- a1 and a2 were looked up\n- a3 was looked up\n</observations>"
        ),
        "{}",
        system_text(last)
    );
    let sent = contents(last);
    assert_eq!(sent[0], "look up a1 to a4");
    assert!(sent[2].starts_with("record a4"), "{sent:?}");
    assert_eq!(
        sent.len(),
        3,
        "question, the last call and its result: {sent:?}"
    );
    assert!(
        !sent
            .iter()
            .any(|c| c.contains("record a1") || c.contains("record a3")),
        "observed messages are not sent again"
    );
    assert_eq!(
        out.values["observations"],
        "- a1 and a2 were looked up\n- a3 was looked up"
    );
    assert_eq!(out.values["messages"].as_array().map(Vec::len), Some(4));
}

#[tokio::test]
async fn the_reflector_condenses_observations_once_they_grow() {
    let long = format!("- {}", "observed detail ".repeat(20)); // 322 characters: 129 tokens
    let model = Recorder::new(four_lookups_then(vec![
        json!({"node": "observe", "text": long}),
        json!({"node": "observe", "text": long}),
        json!({"node": "observe", "text": "- condensed: a1 to a3 looked up"}),
        json!({"node": "agent", "text": "done"}),
    ]));
    let g = graph(model.clone(), observer(model.clone(), 200));
    let (events, out) = g
        .stream(ask("look up a1 to a4"), RunConfig::thread("t"))
        .collect()
        .await;
    let out = out.expect("run");
    let observe = model.requests("observe");
    assert_eq!(observe.len(), 3, "two observer calls, then the reflector");
    let reflected = contents(&observe[2]).join("");
    assert!(reflected.contains("<observations>") && reflected.contains("observed detail"));
    assert_eq!(
        out.values["observations"],
        "- condensed: a1 to a3 looked up"
    );
    let agent = model.requests("agent");
    assert!(system_text(&agent[4]).contains("- condensed: a1 to a3 looked up"));
    let reflections: Vec<&Value> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Custom(d) if d["observational_memory"] == "reflected" => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(reflections.len(), 1);
    // Two observations of 321 characters and a newline: 643 characters, 258 tokens.
    assert_eq!(reflections[0]["tokens_before"], 258);
}

#[tokio::test]
async fn a_crash_during_an_observer_call_loses_nothing() {
    let model = Recorder::new(four_lookups_then(vec![
        json!({"node": "observe", "text": "- a1 and a2 were looked up"}),
        json!({"node": "observe", "text": "- a3 was looked up"}),
        json!({"node": "agent", "text": "done"}),
    ]));
    let g = graph(model.clone(), observer(model.clone(), 10_000));
    model.hang_observer.store(true, Ordering::SeqCst);
    tokio::select! {
        r = g.invoke(ask("look up a1 to a4"), RunConfig::thread("t")) => panic!("finished: {r:?}"),
        _ = model.reached.notified() => {}
    }
    let saved = g
        .get_state("t", None)
        .await
        .expect("state")
        .expect("a checkpoint");
    let kept = saved.values["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(kept.len(), 9, "question, four calls and four results");
    assert_eq!(saved.values["observations"], Value::Null);

    model.hang_observer.store(false, Ordering::SeqCst);
    let out = g
        .invoke(Input::Continue, RunConfig::thread("t"))
        .await
        .expect("continued");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    assert_eq!(
        out.values["observations"],
        "- a1 and a2 were looked up\n- a3 was looked up"
    );
    assert_eq!(
        model.requests("agent").len(),
        5,
        "no model call of the agent is repeated"
    );
}

/// One turn on `thread` as `principal`, with its own scripted model, over `store`.
async fn turn(
    store: &Arc<dyn Store>,
    thread: &str,
    principal: &str,
    ask_text: &str,
    script: Value,
) -> (Arc<Recorder>, RunOutput) {
    let model = Recorder::new(script);
    let g = graph(model.clone(), observer(model.clone(), 10_000)).with_store(store.clone());
    let mut config = RunConfig::thread(thread);
    config
        .configurable
        .insert(working::PRINCIPAL_SETTING.into(), json!(principal));
    let out = g.invoke(ask(ask_text), config).await.expect("turn");
    (model, out)
}

#[tokio::test]
async fn working_memory_follows_a_principal_across_threads_and_no_further() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let memory = "- Name: Ada\n- Prefers Slack over email";
    let (first, _) = turn(&store, "a-1", "t/ada", "I am Ada; I prefer Slack", json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "update_working_memory", "args": {"memory": memory}}]},
        {"node": "agent", "text": "Noted."}
    ]}))
    .await;
    assert!(
        system_text(&first.requests("agent")[1]).contains("Prefers Slack"),
        "the same thread sees the update at once"
    );
    let reply = json!({"responses": [{"node": "agent", "text": "Hello."}]});
    let (ada, again) = turn(&store, "a-2", "t/ada", "hi", reply.clone()).await;
    let (bob, _) = turn(&store, "b-1", "t/bob", "hi", reply).await;
    let seen = system_text(&ada.requests("agent")[0]);
    assert!(
        seen.contains(
            "<working_memory>\n- Name: Ada\n- Prefers Slack over email\n</working_memory>"
        ),
        "{seen}"
    );
    assert!(
        !system_text(&bob.requests("agent")[0]).contains("Ada"),
        "bob sees nothing of ada"
    );
    assert_eq!(again.values["working_memory"], memory);
    // Kept once, in the store, under ada's namespace only.
    let saved = working::load(store.as_ref(), "t/ada").await.expect("load");
    assert_eq!(saved.as_deref(), Some(memory));
    assert_eq!(
        working::load(store.as_ref(), "t/bob").await.expect("load"),
        None
    );
}

#[tokio::test]
async fn the_observers_calls_are_recorded_in_usage_with_their_cost() {
    let model = ScriptedModel::from_json(json!({"responses": [
        {"node": "detached", "text": "- the user asked twice",
         "usage": {"input_tokens": 1000, "output_tokens": 100}}
    ]}))
    .expect("script");
    let mut node = ObserveNode::new(Arc::new(model));
    node.threshold_tokens = 100;
    node.keep_last = 1;
    node.chunk_tokens = 100_000;
    node.usage_channel = Some("usage".into());
    node.pricing = Some(Pricing {
        input: 1.0,
        output: 10.0,
        ..Default::default()
    });
    let text = |c: char| c.to_string().repeat(500);
    let state = json!({"messages": [
        {"type": "human", "id": "h1", "content": "first"},
        {"type": "ai", "id": "a1", "content": text('x')},
        {"type": "human", "id": "h2", "content": "second"},
        {"type": "ai", "id": "a2", "content": text('y')},
        {"type": "human", "id": "h3", "content": "third"}
    ]});
    let ctx = TaskContext::detached(StateView::from_object(state), None);
    let update = node.run(ctx).await.expect("observed");
    let usage = update
        .writes
        .iter()
        .find(|(k, _)| k == "usage")
        .map(|(_, v)| v["total"].clone())
        .expect("a usage write");
    // One observer call: 1,000 tokens in at $1/M, 100 out at $10/M.
    assert_eq!(usage["calls"], 1);
    assert_eq!(usage["input_tokens"], 1000);
    let cost = usage["cost_usd"].as_f64().unwrap_or(-1.0);
    assert!((cost - 0.002).abs() < 1e-12, "{cost}");
}
