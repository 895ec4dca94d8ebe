//! The agent features of the `llm` node (structured output with repair, memory, max
//! iterations, usage and cost per node and run) and the `agent_output` and `compact` nodes.

use crate::common;

use agentgraph_agents::memory::{BufferMemory, ChatMemory};
use agentgraph_agents::models;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{ChatModel, Pricing};
use agentgraph_agents::nodes::{AgentOutputNode, CompactNode, LlmNode, OutputFormat, UsageSum};
use agentgraph_runtime::*;
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn scripted(responses: Value) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::from_json(json!({ "responses": responses })).unwrap())
}

fn route_schema() -> Value {
    json!({"type": "object", "required": ["next", "reason"], "properties": {
        "next": {"type": "string", "enum": ["discovery", "builder", "responder"]},
        "reason": {"type": "string"}}})
}

fn one_node(name: &str, node: Arc<dyn Node>) -> CompiledGraph {
    GraphBuilder::new("g")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("route", ValueType::Json))
        .channel(ChannelSpec::new("output", ValueType::Json))
        .channel(ChannelSpec::new("summary", ValueType::Json))
        .channel(ChannelSpec::new("usage", ValueType::Json).reducer(Arc::new(UsageSum)))
        .node(name, node)
        .chain(&[START, name, END])
        .compile()
        .unwrap()
        .with_checkpointer(memory())
}

fn human(id: &str, text: &str) -> Value {
    json!({"type": "human", "id": id, "content": text})
}

#[tokio::test]
async fn structured_output_valid_first_time_goes_to_its_channel_only() {
    let model = scripted(json!([{"node": "supervisor", "tool_calls": [
        {"name": "respond", "args": {"next": "builder", "reason": "connect nodes"}}]}]));
    let g = one_node(
        "supervisor",
        Arc::new(LlmNode::new(model.clone()).structured(route_schema(), "route")),
    );
    let out = invoke_on(
        &g,
        "t",
        values(json!({"messages": [human("h", "connect them")]})),
    )
    .await;
    assert_eq!(
        out.values["route"],
        json!({"next": "builder", "reason": "connect nodes"})
    );
    assert_eq!(out.values["messages"].as_array().unwrap().len(), 1);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn structured_output_is_repaired_once() {
    let model = scripted(json!([
        {"node": "supervisor", "tool_calls": [{"name": "respond", "args": {"next": "nowhere"}}]},
        {"node": "supervisor", "text": "```json\n{\"next\": \"responder\", \"reason\": \"chat\"}\n```"}
    ]));
    let g = one_node(
        "supervisor",
        Arc::new(LlmNode::new(model.clone()).structured(route_schema(), "route")),
    );
    let out = invoke_on(&g, "t", values(json!({"messages": [human("h", "hi")]}))).await;
    assert_eq!(out.values["route"]["next"], "responder");
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn structured_output_invalid_twice_fails_with_the_problems() {
    let model = scripted(json!([
        {"node": "supervisor", "text": "I think the builder."},
        {"node": "supervisor", "tool_calls": [{"name": "respond", "args": {"next": 3}}]}
    ]));
    let g = one_node(
        "supervisor",
        Arc::new(LlmNode::new(model).structured(route_schema(), "route")),
    );
    let err = g
        .invoke(
            values(json!({"messages": [human("h", "hi")]})),
            RunConfig::thread("t"),
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("after one repair attempt"), "{text}");
    assert!(text.contains("reason"), "names the missing field: {text}");
    assert!(
        matches!(err, RunError::NodeFailed { code: Some(ref c), .. } if c == "STRUCTURED_OUTPUT_INVALID")
    );
}

#[tokio::test]
async fn memory_carries_a_session_across_threads_and_isolates_sessions() {
    let store = Arc::new(BufferMemory::new());
    // The scripted model keeps one cursor per thread: one model per thread here.
    let graph_answering = |text: &str| {
        let model = scripted(json!([{ "node": "agent", "text": text }]));
        one_node("agent", Arc::new(LlmNode::new(model).memory(store.clone())))
    };
    let run = |g: CompiledGraph,
               thread: &'static str,
               session: &'static str,
               text: &'static str| async move {
        g.invoke(
            values(json!({"messages": [human(&format!("{thread}-h"), text)]})),
            RunConfig::thread(thread).configure("session_id", json!(session)),
        )
        .await
        .unwrap();
    };
    run(
        graph_answering("Nice to meet you, Ada."),
        "t1",
        "ada",
        "I am Ada",
    )
    .await;
    run(graph_answering("You are Ada."), "t2", "ada", "Who am I?").await;
    run(
        graph_answering("I don't know your name."),
        "t3",
        "bob",
        "Who am I?",
    )
    .await;
    let ada = store.load("ada").await.unwrap();
    let texts: Vec<&str> = ada.iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "I am Ada",
            "Nice to meet you, Ada.",
            "Who am I?",
            "You are Ada."
        ]
    );
    assert_eq!(store.load("bob").await.unwrap().len(), 2);
    // Without a session id the thread id is the session.
    let g2 = graph_answering("ok");
    invoke_on(
        &g2,
        "t9",
        values(json!({"messages": [human("x", "hello")]})),
    )
    .await;
    assert_eq!(store.load("t9").await.unwrap().len(), 2);
}

/// A model that records the conversations it was sent.
struct Recorder(std::sync::Mutex<Vec<Vec<Value>>>);

#[async_trait::async_trait]
impl ChatModel for Recorder {
    fn name(&self) -> String {
        "recorder".into()
    }
    async fn complete(
        &self,
        req: &models::ModelRequest,
        _ctx: &models::CallContext,
    ) -> Result<models::ModelResponse, models::ModelError> {
        self.0.lock().unwrap().push(req.messages.clone());
        Ok(models::ModelResponse {
            text: "answer".into(),
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn memory_is_sent_before_the_conversation_and_not_duplicated_on_rerun() {
    let store = Arc::new(BufferMemory::new());
    store
        .append(
            "s",
            &[
                human("old", "earlier question"),
                json!({"type": "ai", "id": "old-a", "content": "earlier answer"}),
            ],
        )
        .await
        .unwrap();
    let rec = Arc::new(Recorder(Default::default()));
    let llm = LlmNode::new(rec.clone()).memory(store.clone());
    let g = one_node("agent", Arc::new(llm));
    let cfg = || RunConfig::thread("t").configure("session_id", json!("s"));
    g.invoke(
        values(json!({"messages": [human("q", "new question")]})),
        cfg(),
    )
    .await
    .unwrap();
    let sent = rec.0.lock().unwrap()[0].clone();
    let ids: Vec<&str> = sent.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["old", "old-a", "q"]);
    assert_eq!(store.load("s").await.unwrap().len(), 4);
    // Forking from the input checkpoint answers the same question again: the question is not
    // remembered twice, the new answer (a new message of the fork) is.
    let hist = g.history("t", Default::default()).await.unwrap();
    let input_cp = hist.last().unwrap().checkpoint_id;
    g.invoke(Input::Continue, cfg().at(input_cp)).await.unwrap();
    let remembered = store.load("s").await.unwrap();
    let ids: Vec<&str> = remembered
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.iter().filter(|i| **i == "q").count(), 1, "{ids:?}");
    assert_eq!(ids.len(), 5, "{ids:?}");
}

#[tokio::test]
async fn max_iterations_stops_a_looping_agent() {
    let model = scripted(json!([]));
    let g = one_node("agent", Arc::new(LlmNode::new(model).max_iterations(2)));
    let msgs = json!([human("h", "go"),
        {"type": "ai", "id": "a1", "content": "", "tool_calls": [{"id": "c1", "name": "x", "args": {}}]},
        {"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "r"},
        {"type": "ai", "id": "a2", "content": "", "tool_calls": [{"id": "c2", "name": "x", "args": {}}]},
        {"type": "tool", "id": "t2", "tool_call_id": "c2", "content": "r"}]);
    let err = g
        .invoke(values(json!({ "messages": msgs })), RunConfig::thread("t"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("max iterations (2) reached"),
        "{err}"
    );
}

#[tokio::test]
async fn usage_and_cost_add_up_per_node_and_per_run() {
    let model = scripted(json!([
        {"node": "agent", "text": "a", "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"node": "agent", "text": "b", "usage": {"input_tokens": 2000, "output_tokens": 200, "cache_read_tokens": 1000}}
    ]));
    let price = Pricing {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let g = one_node(
        "agent",
        Arc::new(LlmNode::new(model).usage_channel("usage").pricing(price)),
    );
    invoke_on(&g, "t", values(json!({"messages": [human("h1", "a")]}))).await;
    let out = invoke_on(&g, "t", values(json!({"messages": [human("h2", "b")]}))).await;
    let usage = &out.values["usage"];
    assert_eq!(usage["total"]["input_tokens"], 3000);
    assert_eq!(usage["total"]["calls"], 2);
    assert_eq!(usage["nodes"]["agent"]["output_tokens"], 300);
    let runs = usage["runs"].as_object().unwrap();
    assert_eq!(runs.len(), 2, "one entry per run: {runs:?}");
    let cost = usage["total"]["cost_usd"].as_f64().unwrap();
    let expected = (3000.0 * 3.0 + 300.0 * 15.0 + 1000.0 * 0.3) / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
}

fn answered(content: &str) -> Value {
    json!({"messages": [human("h", "q"),
        {"type": "ai", "id": "a1", "content": "", "tool_calls": [
            {"id": "c1", "name": "calculator", "args": {}}, {"id": "c2", "name": "search", "args": {}}]},
        {"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "4"},
        {"type": "tool", "id": "t2", "tool_call_id": "c2", "content": "x"},
        {"type": "ai", "id": "a2", "content": "", "tool_calls": [{"id": "c3", "name": "calculator", "args": {}}]},
        {"type": "tool", "id": "t3", "tool_call_id": "c3", "content": "5"},
        {"type": "ai", "id": "a3", "content": content}]})
}

#[tokio::test]
async fn agent_output_formats() {
    let text = one_node("out", Arc::new(AgentOutputNode::new(OutputFormat::Text)));
    let out = invoke_on(&text, "t", values(answered("It is 5."))).await;
    assert_eq!(out.values["output"], "It is 5.");

    let full = one_node("out", Arc::new(AgentOutputNode::new(OutputFormat::Full)));
    let out = invoke_on(&full, "t", values(answered("It is 5."))).await;
    assert_eq!(out.values["output"]["iterations"], 3);
    assert_eq!(
        out.values["output"]["tools_used"],
        json!(["calculator", "search"])
    );
    assert_eq!(out.values["output"]["tool_calls"], 3);

    let js = one_node("out", Arc::new(AgentOutputNode::new(OutputFormat::Json)));
    let out = invoke_on(&js, "t", values(answered("```json\n{\"result\": 5}\n```"))).await;
    assert_eq!(out.values["output"], json!({"result": 5}));
    let err = js
        .invoke(values(answered("five")), RunConfig::thread("u"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunError::NodeFailed { code: Some(ref c), .. } if c == "OUTPUT_NOT_JSON")
    );
}

#[tokio::test]
async fn compact_node_summarizes_over_its_threshold_only() {
    let long: Vec<Value> = (0..12)
        .map(|i| human(&format!("m{i}"), &"words ".repeat(50)))
        .collect();
    let model = scripted(json!([{"node": "compact", "text": "The user repeated words."}]));
    let mut node = CompactNode::new(model.clone());
    node.summary_channel = Some("summary".into());
    node.threshold_tokens = Some(1000);
    node.keep_last = 2;
    let g = one_node("compact", Arc::new(node));
    // Under the threshold: nothing happens and the model is not called.
    let out = invoke_on(&g, "small", values(json!({"messages": long[..2]}))).await;
    assert_eq!(out.values["messages"].as_array().unwrap().len(), 2);
    assert_eq!(model.remaining(), 1);
    let out = invoke_on(&g, "big", values(json!({ "messages": long }))).await;
    let msgs = out.values["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "summary + 2 kept: {msgs:?}");
    assert_eq!(msgs[0]["type"], "system");
    assert_eq!(out.values["summary"], "The user repeated words.");
}

#[tokio::test]
async fn max_calls_counts_every_answer_of_the_conversation() {
    // Two answers, each after its own human message: max_iterations would allow a third
    // (one answer since the last human message); max_calls does not.
    let model = scripted(json!([]));
    let g = one_node("agent", Arc::new(LlmNode::new(model).max_calls(2)));
    let msgs = json!([human("h1", "go"),
        {"type": "ai", "id": "a1", "content": "no"},
        human("h2", "again"),
        {"type": "ai", "id": "a2", "content": "no"},
        human("h3", "once more")]);
    let err = g
        .invoke(values(json!({ "messages": msgs })), RunConfig::thread("t"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("budget (2) spent"), "{err}");
}

#[test]
fn a_context_message_follows_the_conversation_and_keeps_the_system_prompt_stable() {
    let model = scripted(json!([]));
    let node = LlmNode::new(model)
        .system("rules")
        .context(|s, _| {
            Ok(format!(
                "workflow: {}",
                s.get("workflow").cloned().unwrap_or_default()
            ))
        })
        .context_as_message();
    let state = |w: Value| {
        StateView::from_object(json!({"messages": [human("h", "build it")], "workflow": w}))
    };
    let first = node.request(&state(json!({"nodes": []})), None).unwrap();
    let second = node.request(&state(json!({"nodes": ["A"]})), None).unwrap();
    assert_eq!(first.system.len(), 1);
    assert_eq!(first.system[0].text, "rules");
    assert_eq!(first.system[0].text, second.system[0].text);
    assert_eq!(first.messages.len(), 2);
    assert_eq!(first.messages[0]["content"], "build it");
    assert_eq!(first.messages[1]["type"], "human");
    assert_eq!(first.messages[1]["content"], "workflow: {\"nodes\":[]}");
    assert_eq!(
        second.messages[1]["content"],
        "workflow: {\"nodes\":[\"A\"]}"
    );
    // Without the option, the context is the last system part.
    let inline = LlmNode::new(scripted(json!([])))
        .system("rules")
        .context(|_, _| Ok("ctx".into()));
    let req = inline.request(&state(json!({})), None).unwrap();
    assert_eq!(req.system.len(), 2);
    assert_eq!(req.messages.len(), 1);
}

#[test]
fn the_tool_choice_may_come_from_the_state() {
    let node = LlmNode::new(scripted(json!([]))).tool_choice_fn(|s, _| {
        Ok(if s.get("empty") == Some(&json!(true)) {
            models::ToolChoice::Required
        } else {
            models::ToolChoice::Auto
        })
    });
    let req = |empty: bool| {
        node.request(
            &StateView::from_object(json!({"messages": [], "empty": empty})),
            None,
        )
        .unwrap()
        .tool_choice
    };
    assert_eq!(req(true), models::ToolChoice::Required);
    assert_eq!(req(false), models::ToolChoice::Auto);
}

#[test]
fn the_context_and_tool_choice_see_the_send_payload() {
    let node = LlmNode::new(scripted(json!([])))
        .context(|s, payload| {
            let subject = payload.and_then(|p| p.get("subject")).cloned();
            let topic = s.get("topic").cloned().unwrap_or_default();
            Ok(format!("about {}", subject.unwrap_or(topic)))
        })
        .tool_choice_fn(|_, payload| {
            Ok(match payload {
                Some(_) => models::ToolChoice::None,
                None => models::ToolChoice::Auto,
            })
        });
    let state = StateView::from_object(json!({"messages": [], "topic": "the state"}));
    let pushed = node
        .request(&state, Some(&json!({"subject": "cats"})))
        .unwrap();
    assert_eq!(pushed.system[0].text, "about \"cats\"");
    assert_eq!(pushed.tool_choice, models::ToolChoice::None);
    let pulled = node.request(&state, None).unwrap();
    assert_eq!(pulled.system[0].text, "about \"the state\"");
    assert_eq!(pulled.tool_choice, models::ToolChoice::Auto);
}

#[tokio::test]
async fn each_sent_task_renders_its_own_payload() {
    let rec = Arc::new(Recorder(Default::default()));
    let llm = LlmNode::new(rec.clone())
        .context(|_, payload| {
            let subject = payload
                .and_then(|p| p.get("subject"))
                .and_then(Value::as_str);
            Ok(format!("a joke about {}", subject.unwrap_or("nothing")))
        })
        .context_as_message();
    let g = GraphBuilder::new("jokes")
        .channel(message_list("messages"))
        .channel(list("subjects"))
        .node("split", node_fn(|_| async { Ok(Update::new()) }))
        .node("joke", Arc::new(llm))
        .edge(START, "split")
        .route("split", |s| {
            s.list("subjects")
                .iter()
                .map(|subject| Send {
                    node: "joke".into(),
                    payload: json!({ "subject": subject }),
                })
                .collect::<Vec<_>>()
        })
        .edge("joke", END)
        .compile()
        .unwrap();
    let out = g
        .invoke(
            values(json!({"subjects": ["cats", "dogs"]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.values["messages"].as_array().map(Vec::len), Some(2));
    let mut sent: Vec<Value> = rec
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|conversation| conversation[0]["content"].clone())
        .collect();
    sent.sort_by_key(Value::to_string);
    assert_eq!(
        sent,
        [json!("a joke about cats"), json!("a joke about dogs")]
    );
}
