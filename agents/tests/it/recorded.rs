//! Real answers of a small local model (`tests/fixtures/recorded/`, see its README), replayed
//! from a loopback server through the OpenAI provider into the `llm` and `tool_executor`
//! nodes: calls written as text, a tool name in other casing, arguments as a JSON string, a
//! repeated failing call, a search sent again and a context overflow.

use crate::common::*;
use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelRequest, ToolSpec};
use agentgraph_agents::nodes::{LlmNode, OverflowCompaction, ToolExecutorNode, UsageSum};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::*;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}/{name}"))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn request(name: &str) -> Value {
    serde_json::from_str(&fixture(&format!("{name}.request.json"))).expect("request JSON")
}

/// The tools the recorded request offered.
fn specs(req: &Value) -> Vec<ToolSpec> {
    req["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| ToolSpec {
            name: t["function"]["name"].as_str().expect("name").into(),
            description: t["function"]["description"].as_str().unwrap_or("").into(),
            input_schema: t["function"]["parameters"].clone(),
        })
        .collect()
}

/// The recorded request's system prompt and its other messages as runtime messages.
fn conversation(req: &Value) -> (String, Vec<Value>) {
    let mut system = String::new();
    let mut out = Vec::new();
    for (i, m) in req["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
    {
        let id = format!("m{i}");
        let text = m["content"].as_str().unwrap_or("");
        match m["role"].as_str() {
            Some("system") => system = text.to_string(),
            Some("user") => out.push(json!({"type": "human", "id": id, "content": text})),
            Some("assistant") => {
                let calls: Vec<Value> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let args: Value = serde_json::from_str(
                            c["function"]["arguments"].as_str().unwrap_or("{}"),
                        )
                        .expect("recorded arguments are JSON");
                        json!({"id": c["id"], "name": c["function"]["name"], "args": args})
                    })
                    .collect();
                let mut ai = json!({"type": "ai", "id": id, "content": text});
                if !calls.is_empty() {
                    ai["tool_calls"] = json!(calls);
                }
                out.push(ai);
            }
            Some("tool") => {
                let content: Value = serde_json::from_str(text).unwrap_or(json!(text));
                let mut t = json!({"type": "tool", "id": id, "tool_call_id": m["tool_call_id"],
                    "name": "connect_nodes", "content": content});
                if content.get("error").is_some() {
                    t["status"] = json!("error");
                }
                out.push(t);
            }
            other => panic!("unexpected role {other:?}"),
        }
    }
    (system, out)
}

fn model(server: &MockServer) -> Arc<dyn ChatModel> {
    let retry = RetryPolicy {
        initial_interval: Duration::from_millis(1),
        max_interval: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    Arc::new(
        OpenAiModel::new("qwen2.5-coder-1.5b-instruct", Some("local".into()))
            .expect("client")
            .with_base_url(format!("{}/v1", server.uri()))
            .with_retry_policy(retry)
            .expect("retry policy"),
    )
}

/// Serves `body` once, after the responses mounted before it.
async fn serve_once(server: &MockServer, status: u16, body: String, content_type: &str) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(status).set_body_raw(body, content_type))
        .up_to_n_times(1)
        .mount(server)
        .await;
}

/// A loopback server answering its first request with the recorded stream `file`.
async fn serve_recorded(file: &str) -> MockServer {
    let server = MockServer::start().await;
    serve_once(&server, 200, fixture(file), "text/event-stream").await;
    server
}

/// A streamed text answer in the OpenAI format (for the calls that follow a recorded one).
fn text_stream(text: &str) -> String {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ];
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

/// A streamed answer with one tool call in the OpenAI format (for a call that follows a
/// recorded one).
fn tool_call_stream(name: &str, args: &Value) -> String {
    let call = json!({"index": 0, "id": "call-1", "type": "function",
        "function": {"name": name, "arguments": args.to_string()}});
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

fn graph(agent: LlmNode, tools: Option<ToolExecutorNode>) -> CompiledGraph {
    let mut g = GraphBuilder::new("g")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("summary", ValueType::Json))
        .channel(ChannelSpec::new("repeats", ValueType::Json))
        .channel(ChannelSpec::new("usage", ValueType::Json).reducer(Arc::new(UsageSum)))
        .node("agent", Arc::new(agent));
    g = match tools {
        Some(t) => g
            .node("tools", Arc::new(t))
            .chain(&[START, "agent", "tools", END]),
        None => g.chain(&[START, "agent", END]),
    };
    g.compile().expect("graph").with_checkpointer(memory())
}

/// Runs `g` on `messages`; the final state and the custom events.
async fn run(g: &CompiledGraph, messages: Vec<Value>) -> (Result<RunOutput, RunError>, Vec<Value>) {
    run_with_custom_events(g, json!({ "messages": messages }), "t").await
}

/// The recorded request replayed through an `llm` node offering its tools; the AI message it
/// wrote and the recoveries reported.
async fn replay_answer(name: &str) -> (Value, Vec<Value>, Value) {
    let server = serve_recorded(&format!("{name}.sse")).await;
    let req = request(name);
    let (system, messages) = conversation(&req);
    let agent = LlmNode::new(model(&server))
        .system(system)
        .tools(specs(&req))
        .usage_channel("usage");
    let (out, events) = run(&graph(agent, None), messages).await;
    let out = out.expect("run");
    let ai = out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("an answer");
    let recoveries = events
        .into_iter()
        .filter(|e| e.get("recovery").is_some())
        .collect();
    (ai, recoveries, out.values["usage"].clone())
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["recovery"].as_str().unwrap_or(""))
        .collect()
}

const PREPARE: &str = "n8n-nodes-base.set";

#[tokio::test]
async fn a_call_written_as_text_becomes_a_real_call() {
    let (ai, recoveries, usage) = replay_answer("text_call").await;
    let calls = ai["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "add_nodes");
    assert_eq!(
        calls[0]["args"],
        json!({"nodeType": PREPARE, "name": "Prepare",
               "connectionParametersReasoning": "static connections", "connectionParameters": {}})
    );
    assert!(calls[0]["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("call_")));
    // The call text is not content any more; it is kept aside.
    assert_eq!(ai["content"], "");
    let original = ai["recovered_from_text"].as_str().expect("original text");
    assert!(
        original.starts_with("[tool_call]{\"name\": \"add_nodes\""),
        "{original}"
    );
    assert_eq!(kinds(&recoveries), ["text_call"]);
    assert_eq!(recoveries[0]["detail"], "tag:[tool_call]");
    assert_eq!(usage["total"]["recoveries"], 1);
    assert_eq!(usage["nodes"]["agent"]["recoveries"], 1);
}

#[tokio::test]
async fn a_text_call_naming_the_tool_in_other_casing_goes_to_the_tool() {
    let (ai, recoveries, _) = replay_answer("text_call_casing").await;
    assert_eq!(ai["tool_calls"][0]["name"], "add_nodes");
    assert_eq!(ai["tool_calls"][0]["args"]["name"], "Prepare");
    assert_eq!(kinds(&recoveries), ["text_call"]);
    assert_eq!(recoveries[0]["tool"], "add_nodes");
    assert!(ai["recovered_from_text"]
        .as_str()
        .is_some_and(|t| t.contains("\"AddNodes\"")));
}

#[tokio::test]
async fn arguments_given_as_a_json_string_are_unwrapped() {
    let (ai, recoveries, _) = replay_answer("text_call_string_args").await;
    assert_eq!(
        ai["tool_calls"][0]["args"],
        json!({"nodeType": PREPARE, "name": "Prepare",
               "connectionParametersReasoning": "static connections", "connectionParameters": {}})
    );
    assert_eq!(kinds(&recoveries), ["text_call", "arguments"]);
    assert_eq!(recoveries[1]["detail"], "json_string");
}

/// `connect_nodes` as it answers while the workflow has no nodes.
struct NoNodesYet;

#[async_trait]
impl Tool for NoNodesYet {
    fn name(&self) -> &str {
        "connect_nodes"
    }
    fn description(&self) -> &str {
        "Connect two nodes."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["sourceNodeId", "targetNodeId"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "NODE_NOT_FOUND",
            format!(
                "sourceNodeId \"{}\" matches no node id or name in the workflow; the workflow \
                 has no nodes yet. Use the id returned by add_nodes.",
                args["sourceNodeId"].as_str().unwrap_or("")
            ),
        ))
    }
}

#[tokio::test]
async fn the_recorded_repeat_of_a_failing_call_is_answered_as_a_repeat() {
    let server = serve_recorded("repeat_failing.sse").await;
    let req = request("repeat_failing");
    let (system, messages) = conversation(&req);
    let agent = LlmNode::new(model(&server))
        .system(system)
        .tools(specs(&req));
    let tools =
        ToolExecutorNode::new([Arc::new(NoNodesYet) as Arc<dyn Tool>]).repeats_channel("repeats");
    let (out, events) = run(&graph(agent, Some(tools)), messages).await;
    let out = out.expect("run");
    let messages = out.values["messages"].as_array().expect("messages");
    let ai = &messages[messages.len() - 2];
    // The model made the very call that had failed.
    assert_eq!(
        ai["tool_calls"][0]["args"],
        json!({"sourceNodeId": "Start", "targetNodeId": "Prepare"})
    );
    let answer = &messages[messages.len() - 1];
    assert_eq!(answer["status"], "error");
    let error = &answer["content"]["error"];
    assert_eq!(error["code"], "REPEATED_CALL");
    assert_eq!(error["repeats"], 2);
    assert_eq!(error["repeated"]["code"], "NODE_NOT_FOUND");
    let message = error["message"].as_str().unwrap_or("");
    assert!(
        message.contains("has now failed 2 times in a row"),
        "{message}"
    );
    assert!(message.contains("change the arguments"), "{message}");
    assert_eq!(out.values["repeats"], 2);
    assert!(events
        .iter()
        .any(|e| e["status"] == "error" && e["repeats"] == 2));
}

/// `search_nodes` as a pure tool that counts its runs.
struct CountingSearch(std::sync::atomic::AtomicUsize);

#[async_trait]
impl Tool for CountingSearch {
    fn name(&self) -> &str {
        "search_nodes"
    }
    fn description(&self) -> &str {
        "Search node types."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["queries"]})
    }
    fn pure(&self) -> bool {
        true
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(ToolOutput::text("Found 3 nodes"))
    }
}

#[tokio::test]
async fn the_recorded_search_sent_again_after_another_call_is_not_run_twice() {
    let server = serve_recorded("repeat_search.sse").await;
    let req = request("repeat_search");
    let (system, messages) = conversation(&req);
    // The conversation: add_trigger, this search (it succeeded), add_nodes, the context.
    let earlier = messages
        .iter()
        .find(|m| m["tool_calls"][0]["name"] == "search_nodes")
        .map(|m| m["tool_calls"][0]["args"].clone())
        .expect("an earlier search");
    let agent = LlmNode::new(model(&server))
        .system(system)
        .tools(specs(&req));
    let search = Arc::new(CountingSearch(Default::default()));
    let tools = ToolExecutorNode::new([search.clone() as Arc<dyn Tool>]);
    let (out, _) = run(&graph(agent, Some(tools)), messages).await;
    let out = out.expect("run");
    let messages = out.values["messages"].as_array().expect("messages");
    let ai = &messages[messages.len() - 2];
    // The model sent the search it had made two calls before, unchanged.
    assert_eq!(ai["tool_calls"][0]["name"], "search_nodes");
    assert_eq!(ai["tool_calls"][0]["args"], earlier);
    let answer = &messages[messages.len() - 1];
    assert_eq!(answer["status"], "error");
    assert_eq!(answer["content"]["error"]["code"], "REPEATED_CALL");
    let message = answer["content"]["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("earlier in this conversation"),
        "{message}"
    );
    // It quotes the start of the earlier result (the recorded tool message).
    let earlier_result = messages
        .iter()
        .filter(|m| m["type"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("Found"))
        .expect("the earlier result");
    let start: String = earlier_result.chars().take(60).collect();
    assert!(message.contains(&start), "{message}");
    assert_eq!(search.0.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_recorded_overflow_is_a_typed_error_with_the_sizes() {
    let server = MockServer::start().await;
    serve_once(&server, 400, fixture("overflow.json"), "application/json").await;
    let req = ModelRequest {
        messages: vec![json!({"type": "human", "id": "h", "content": "Summarize: …"})],
        ..Default::default()
    };
    let err = model(&server)
        .complete(&req, &CallContext::default())
        .await
        .expect_err("overflow");
    match err {
        ModelError::ContextOverflow {
            prompt_tokens,
            context_tokens,
            ref message,
            ..
        } => {
            assert_eq!((prompt_tokens, context_tokens), (Some(27356), Some(16384)));
            assert!(
                message.contains("exceeds the available context size"),
                "{message}"
            );
        }
        other => panic!("expected a context overflow, got {other:?}"),
    }
    // Not retried: one request.
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(1));
}

fn long_conversation() -> Vec<Value> {
    let mut m = Vec::new();
    for i in 0..6 {
        m.push(json!({"type": "human", "id": format!("h{i}"), "content": format!("question {i}")}));
        m.push(json!({"type": "ai", "id": format!("a{i}"), "content": format!("answer {i}")}));
    }
    m.push(json!({"type": "human", "id": "last", "content": "and now?"}));
    m
}

#[tokio::test]
async fn an_overflow_compacts_the_conversation_and_calls_once_more() {
    let server = MockServer::start().await;
    serve_once(&server, 400, fixture("overflow.json"), "application/json").await;
    serve_once(
        &server,
        200,
        text_stream("The user asked six questions."),
        "text/event-stream",
    )
    .await;
    serve_once(
        &server,
        200,
        text_stream("Here it is."),
        "text/event-stream",
    )
    .await;
    let policy = OverflowCompaction {
        keep_last: 2,
        summary_channel: Some("summary".into()),
        ..OverflowCompaction::default()
    };
    let agent = LlmNode::new(model(&server))
        .on_overflow(Some(policy))
        .usage_channel("usage");
    let (out, events) = run(&graph(agent, None), long_conversation()).await;
    let out = out.expect("run");
    let messages = out.values["messages"].as_array().expect("messages");
    let ids: Vec<&str> = messages.iter().filter_map(|m| m["id"].as_str()).collect();
    // The summary, the last two messages kept, then the answer.
    assert_eq!(&ids[..3], ["conversation_summary", "a5", "last"]);
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[3]["content"], "Here it is.");
    assert_eq!(out.values["summary"], "The user asked six questions.");
    assert_eq!(out.values["usage"]["total"]["calls"], 2);
    assert!(events
        .iter()
        .any(|e| e["compaction"] == "context_overflow" && e["summarized"] == 11));
    // The retry sent the summary and the kept messages only.
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 3);
    let retry: Value = serde_json::from_slice(&requests[2].body).expect("JSON body");
    let sent: Vec<&str> = retry["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[0].contains("The user asked six questions."));
    assert_eq!(&sent[1..], ["answer 5", "and now?"]);
}

#[tokio::test]
async fn a_second_overflow_fails_with_a_clear_error() {
    let server = MockServer::start().await;
    serve_once(&server, 400, fixture("overflow.json"), "application/json").await;
    serve_once(&server, 200, text_stream("A summary."), "text/event-stream").await;
    serve_once(&server, 400, fixture("overflow.json"), "application/json").await;
    let (out, _) = run(
        &graph(LlmNode::new(model(&server)), None),
        long_conversation(),
    )
    .await;
    let err = out.expect_err("still too large").to_string();
    assert!(
        err.contains("even after compacting the conversation"),
        "{err}"
    );
    assert!(err.contains("system prompt ~"), "{err}");
    // Without compaction the first overflow fails the node.
    let server = MockServer::start().await;
    serve_once(&server, 400, fixture("overflow.json"), "application/json").await;
    let agent = LlmNode::new(model(&server)).on_overflow(None);
    let (out, _) = run(&graph(agent, None), long_conversation()).await;
    let err = out.expect_err("overflow").to_string();
    assert!(
        err.contains(
            "larger than the openai model's context (27356 tokens for a context of 16384)"
        ),
        "{err}"
    );
}

/// The recorded request replayed through an `llm` node forced to call `add_nodes`, with the
/// request's output limit; `answers` are served in turn.
async fn replay_cut(
    name: &str,
    answers: &[&str],
) -> (MockServer, Result<RunOutput, RunError>, Vec<Value>) {
    let server = MockServer::start().await;
    for a in answers {
        serve_once(&server, 200, fixture(a), "text/event-stream").await;
    }
    let req = request(name);
    let (system, messages) = conversation(&req);
    let limit = req["max_tokens"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .expect("max_tokens");
    let agent = LlmNode::new(model(&server))
        .system(system)
        .tools(specs(&req))
        .tool_choice(agentgraph_agents::models::ToolChoice::Tool(
            "add_nodes".into(),
        ))
        .max_tokens(limit)
        .usage_channel("usage");
    let (out, events) = run(&graph(agent, None), messages).await;
    (server, out, events)
}

/// Asked for four nodes with a 120-token limit, the model made one complete `add_nodes` call
/// and was cut in the middle of the second: the complete call is kept, the cut one dropped.
#[tokio::test]
async fn complete_calls_before_a_cut_one_are_kept() {
    let (_server, out, events) = replay_cut("truncated_batch", &["truncated_batch.sse"]).await;
    let out = out.expect("the answer is used");
    let ai = out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("answer");
    let calls = ai["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 1, "{ai}");
    assert_eq!(calls[0]["name"], "add_nodes");
    assert_eq!(calls[0]["args"]["name"], "Every Morning");
    assert_eq!(
        calls[0]["args"]["nodeType"],
        "n8n-nodes-base.scheduleTrigger"
    );
    assert_eq!(ai["stop_reason"], "length");
    let cut: Vec<&Value> = events
        .iter()
        .filter(|e| e["recovery"] == "answer_cut")
        .collect();
    assert_eq!(cut.len(), 1, "{events:?}");
    assert_eq!(cut[0]["kept_calls"], 1);
}

/// With a 40-token limit the only call was cut after `"name":`: the node asks once more with a
/// note after the conversation; the recorded second answer (to exactly that request) was cut
/// again, so the node answers without the call: a text message naming the tool and the limit,
/// marked as cut, and the run goes on (it failed the whole turn before).
#[tokio::test]
async fn a_cut_only_call_is_asked_again_once_with_a_note() {
    let (server, out, events) = replay_cut(
        "truncated_single",
        &["truncated_single.sse", "truncated_single_retry.sse"],
    )
    .await;
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 2);
    let retry: Value = serde_json::from_slice(&requests[1].body).expect("JSON body");
    let recorded = request("truncated_single_retry");
    // The second request is the one the retry answer was recorded for.
    assert_eq!(retry["messages"], recorded["messages"]);
    let note = retry["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("note");
    assert_eq!(note["role"], "user");
    assert!(note["content"]
        .as_str()
        .is_some_and(|t| t.contains("cut off at 40 tokens in the middle of the `add_nodes` call")));
    assert!(
        events.iter().any(|e| e["recovery"] == "output_truncated"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["recovery"] == "output_truncated_twice"),
        "{events:?}"
    );
    let out = out.expect("a second cut does not fail the run");
    let ai = out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("answer");
    assert_eq!(ai["type"], "ai");
    assert!(ai.get("tool_calls").is_none(), "{ai}");
    assert_eq!(ai["stop_reason"], "max_tokens");
    let text = ai["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("cut off twice at 40 tokens") && text.contains("`add_nodes`"),
        "{text}"
    );
}

/// The recorded request and answer: the single agent's first call on an empty workflow, sent
/// with `parallel_tool_calls: false` and `search_nodes` named; llama-server still streamed 14
/// calls until the 1 024-token limit cut the last (178 s of generation on two cores).
async fn replay_flood(one_call: bool) -> (MockServer, Value) {
    let server = serve_recorded("one_call_flood.sse").await;
    let req = request("one_call_flood");
    assert_eq!(req["parallel_tool_calls"], false, "as recorded");
    let (system, messages) = conversation(&req);
    let mut agent = LlmNode::new(model(&server))
        .system(system)
        .tools(specs(&req))
        .tool_choice(agentgraph_agents::models::ToolChoice::Tool(
            "search_nodes".into(),
        ))
        .max_tokens(1024);
    if one_call {
        agent = agent.parallel_tool_calls(false);
    }
    let (out, _) = run(&graph(agent, None), messages).await;
    let ai = out.expect("run").values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("an answer");
    (server, ai)
}

#[tokio::test]
async fn one_call_per_answer_holds_when_the_server_sends_more() {
    let (server, ai) = replay_flood(true).await;
    let requests = server.received_requests().await.unwrap_or_default();
    let sent: Value = serde_json::from_slice(&requests[0].body).expect("JSON body");
    assert_eq!(sent["parallel_tool_calls"], false);
    // Only the first call, whole; the answer ends where the second began.
    let calls = ai["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 1, "{ai}");
    assert_eq!(calls[0]["name"], "search_nodes");
    assert_eq!(
        calls[0]["args"],
        json!({"queries": [{"queryType": "name", "query": "http"},
                           {"queryType": "name", "query": "chat"}]})
    );
    // Not an answer cut by the output limit.
    assert!(ai.get("stop_reason").is_none(), "{ai}");
}

#[tokio::test]
async fn without_the_setting_the_whole_recorded_batch_is_kept() {
    let (server, ai) = replay_flood(false).await;
    let requests = server.received_requests().await.unwrap_or_default();
    let sent: Value = serde_json::from_slice(&requests[0].body).expect("JSON body");
    assert!(sent.get("parallel_tool_calls").is_none());
    // 14 calls streamed; the 14th was cut by the output limit and is dropped.
    let calls = ai["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 13, "{ai}");
    assert_eq!(calls[12]["name"], "update_node_parameters");
}

/// The single agent's forced `add_nodes` request of a recorded eval run (case
/// `daily-weather-report`, `OPENAI_NAMED_TOOL_CHOICE=hint`), answered first with a recorded
/// answer that calls `search_nodes` instead (the same run's free search for "email": the answer
/// that ignored a hint in an earlier run was not recorded), then with the recorded answer to
/// the forced request. The node asks again with `add_nodes` alone and keeps that answer.
#[tokio::test]
async fn an_answer_ignoring_the_named_tool_is_asked_again_with_that_tool_alone() {
    use agentgraph_agents::models::openai::NamedToolChoice;
    let server = serve_recorded("named_ignored.sse").await;
    serve_once(
        &server,
        200,
        fixture("named_retry.sse"),
        "text/event-stream",
    )
    .await;
    let req = request("named_ignored");
    let (system, mut messages) = conversation(&req);
    // The hint the provider adds itself.
    if messages
        .last()
        .and_then(|m| m["content"].as_str())
        .is_some_and(|t| t.starts_with("Call the `"))
    {
        messages.pop();
    }
    let model: Arc<dyn ChatModel> = Arc::new(
        OpenAiModel::new("qwen2.5-coder-1.5b-instruct", Some("local".into()))
            .expect("client")
            .with_base_url(format!("{}/v1", server.uri()))
            .with_named_tool_choice(NamedToolChoice::Hint),
    );
    let agent = LlmNode::new(model)
        .system(system)
        .tools(specs(&req))
        .tool_choice(agentgraph_agents::models::ToolChoice::Tool(
            "add_nodes".into(),
        ))
        .max_tokens(1024)
        .usage_channel("usage");
    let (out, events) = run(&graph(agent, None), messages).await;
    let out = out.expect("the run ends");
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).expect("JSON body");
    let second: Value = serde_json::from_slice(&requests[1].body).expect("JSON body");
    assert_eq!(first["tools"].as_array().map(Vec::len), Some(8));
    let tools: Vec<&str> = second["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["add_nodes"]);
    assert_eq!(second["tool_choice"], "required");
    let ai = out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("answer");
    let calls: Vec<&str> = ai["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(calls, ["add_nodes"], "{ai}");
    let retry: Vec<&Value> = events
        .iter()
        .filter(|e| e["recovery"] == "named_tool_ignored")
        .collect();
    assert_eq!(retry.len(), 1, "{events:?}");
    assert_eq!(retry[0]["called"], json!(["search_nodes"]));
}

/// The nested parameter-writing call of a recorded eval run (`update_node_parameters`, case
/// `order-priority-webhook`, `max_tokens` 4 096): the model streamed `respond` calls one after
/// another — 41 of them, 700 kB, until its limit (the fixture keeps the answer up to the first
/// chunk of the second call: the provider reads no further). A structured call asks for one
/// call per answer, so the answer ends at the first call and its value is used.
#[tokio::test]
async fn a_structured_answer_ends_where_a_second_call_begins() {
    let (server, out) = replay_structured("structured_flood", 4096).await;
    let out = out.expect("the first call is the answer");
    assert!(!out.repaired);
    assert!(out.value["parameters"].is_object(), "{}", out.value);
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    let sent: Value = serde_json::from_slice(&requests[0].body).expect("JSON body");
    assert_eq!(sent["parallel_tool_calls"], json!(false));
}

/// The multi-agent supervisor's routing answer in a recorded eval run (case `if-branch`,
/// `max_tokens` 512): `{"next": "responder", "reason": "…"}` with `reason` running on until the
/// limit cut it. The complete `next` is what the route needs: the answer is closed where it
/// stopped and used, with no second call.
#[tokio::test]
async fn a_structured_answer_cut_in_a_text_field_is_closed_and_used() {
    let (server, out) = replay_structured("structured_cut", 512).await;
    let out = out.expect("the cut answer holds a valid route");
    assert!(out.cut && !out.repaired);
    assert_eq!(out.value["next"], json!("responder"));
    let reason = out.value["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("The user requested a workflow with a webhook"),
        "{reason}"
    );
    assert_eq!(out.usage.output_tokens, 512);
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        1
    );
}

/// A structured answer cut before its required fields were complete is not guessed: the
/// repair asks again, saying the answer was cut and must be shorter. (The first answer is the
/// recorded stream above, cut by hand inside `next` (`\"res`); the second is written here.)
#[tokio::test]
async fn a_structured_answer_cut_before_its_fields_is_asked_again_shorter() {
    use agentgraph_agents::models::structured::complete_structured;
    let server = MockServer::start().await;
    let recorded = fixture("structured_cut.sse");
    let inside_next: String = recorded
        .split("\n\n")
        .filter(|e| e.starts_with("data: {"))
        .take_while(|e| !e.contains(r#""arguments":"ponder""#))
        .chain(recorded.split("\n\n").filter(|e| e.contains("\"length\"")))
        .map(|e| format!("{e}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n";
    serve_once(&server, 200, inside_next, "text/event-stream").await;
    serve_once(
        &server,
        200,
        tool_call_stream("respond", &json!({"next": "discovery", "reason": "empty"})),
        "text/event-stream",
    )
    .await;
    let req = request("structured_cut");
    let schema = req["tools"][0]["function"]["parameters"].clone();
    let out = complete_structured(
        model(&server).as_ref(),
        &structured_call(&req, 512),
        &schema,
        &CallContext::default(),
    )
    .await
    .expect("the repair answers");
    assert!(out.repaired && !out.cut);
    assert_eq!(out.value["next"], json!("discovery"));
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).expect("JSON body");
    let last = second["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let note = last["content"].as_str().unwrap_or_default();
    assert!(note.contains("cut off at 512 tokens"), "{note}");
    assert!(note.contains("next"), "{note}");
}

/// The recorded stream `name.sse` replayed as the answer to the recorded request `name`, asked
/// as a structured call with its own schema and `max_tokens`; the server (to count requests).
async fn replay_structured(
    name: &str,
    max_tokens: u32,
) -> (
    MockServer,
    Result<
        agentgraph_agents::models::structured::Structured,
        agentgraph_agents::models::structured::StructuredError,
    >,
) {
    use agentgraph_agents::models::structured::complete_structured;
    let server = serve_recorded(&format!("{name}.sse")).await;
    let req = request(name);
    let schema = req["tools"][0]["function"]["parameters"].clone();
    let out = complete_structured(
        model(&server).as_ref(),
        &structured_call(&req, max_tokens),
        &schema,
        &CallContext::default(),
    )
    .await;
    (server, out)
}

/// The recorded request as a structured call: its system prompt and messages, the limit given.
fn structured_call(req: &Value, max_tokens: u32) -> ModelRequest {
    use agentgraph_agents::models::SystemPart;
    let (system, messages) = conversation(req);
    ModelRequest {
        system: vec![SystemPart {
            text: system,
            cacheable: true,
        }],
        messages,
        max_tokens: Some(max_tokens),
        ..ModelRequest::default()
    }
}
