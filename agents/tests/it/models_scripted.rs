//! The scripted model driving an agent ⇄ tools loop built from the `llm` and `tool_executor`
//! nodes.

use crate::common;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::ChatModel;
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode, UsageSum};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::*;
use async_trait::async_trait;
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

/// `search {query, limit?}`: answers and notes the query in the `notes` channel.
struct Search;
#[async_trait]
impl Tool for Search {
    fn name(&self) -> &str {
        "search"
    }
    fn description(&self) -> &str {
        "Searches the web."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["query"], "additionalProperties": false,
               "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let q = args["query"].as_str().unwrap_or_default().to_string();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Ok(ToolOutput::text(format!("results for {q}"))
            .write("notes", json!([format!("searched {q}")])))
    }
}

/// `flaky {}`: always fails with an actionable error.
struct Flaky;
#[async_trait]
impl Tool for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn description(&self) -> &str {
        "Always down."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "UPSTREAM_DOWN",
            "the service is down; use `search` instead",
        ))
    }
}

/// `approve {action}`: asks a human and returns the answer.
struct Approve;
#[async_trait]
impl Tool for Approve {
    fn name(&self) -> &str {
        "approve"
    }
    fn description(&self) -> &str {
        "Asks a human to approve an action."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["action"], "properties": {"action": {"type": "string"}}})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let answer = ctx.interrupt(json!({"approve": args["action"]}))?;
        Ok(ToolOutput::text(format!("answer: {answer}")))
    }
}

fn agent_graph(model: Arc<dyn ChatModel>) -> CompiledGraph {
    agent_builder(model).compile().unwrap()
}

fn agent_builder(model: Arc<dyn ChatModel>) -> GraphBuilder {
    let tools = ToolExecutorNode::new([
        Arc::new(Search) as Arc<dyn Tool>,
        Arc::new(Flaky),
        Arc::new(Approve),
    ]);
    let llm = LlmNode::new(model)
        .system("You are a helpful agent.")
        .context(|s, _| Ok(format!("Notes so far: {}", s.list("notes").len())))
        .tools(tools.specs())
        .usage_channel("usage");
    GraphBuilder::new("agent")
        .channel(message_list("messages"))
        .channel(list("notes"))
        .channel(ChannelSpec::new("usage", ValueType::Json).reducer(Arc::new(UsageSum)))
        .agent_loop(Arc::new(llm), Arc::new(tools))
}

fn ask() -> Input {
    values(json!({"messages": [{"type": "human", "id": "h1", "content": "tell me about rust"}]}))
}

fn script() -> Value {
    json!({"responses": [
        {"node": "agent", "text": "Let me search.", "tool_calls": [
            {"name": "search", "args": {"query": "rust"}, "id": "c1"},
            {"name": "flaky", "args": {}, "id": "c2"},
            {"name": "search", "args": {"limit": "ten"}, "id": "c3"},
            {"name": "nope", "args": {}, "id": "c4"}
        ], "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"node": "agent", "text": "Rust is a systems language.",
         "usage": {"input_tokens": 30, "output_tokens": 7}}
    ]})
}

fn error_code(m: &Value) -> &str {
    m["content"]["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn agent_loop_runs_tools_and_reports_failures_as_tool_messages() {
    let model = Arc::new(ScriptedModel::from_json(script()).unwrap());
    let g = agent_graph(model.clone());
    let (events, out) = g
        .stream(ask(), RunConfig::default().modes(Modes::all()))
        .collect()
        .await;
    let out = out.unwrap();
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(model.remaining(), 0);
    let msgs = out.values["messages"].as_array().unwrap().clone();
    let types: Vec<&str> = msgs.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["human", "ai", "tool", "tool", "tool", "tool", "ai"]);
    assert_eq!(msgs[1]["tool_calls"].as_array().unwrap().len(), 4);
    // The sibling succeeds although other calls fail; results keep call order.
    assert_eq!(msgs[2]["content"], json!("results for rust"));
    assert_eq!(msgs[2]["tool_call_id"], json!("c1"));
    assert_eq!(error_code(&msgs[3]), "UPSTREAM_DOWN");
    assert_eq!(msgs[3]["status"], json!("error"));
    assert_eq!(error_code(&msgs[4]), "INVALID_ARGUMENTS");
    let text = msgs[4]["content"]["error"]["message"].as_str().unwrap();
    assert!(text.contains("missing required argument `query`"), "{text}");
    assert!(
        text.contains("argument `limit` must be an integer, got \"ten\""),
        "{text}"
    );
    assert_eq!(error_code(&msgs[5]), "UNKNOWN_TOOL");
    assert!(msgs[5]["content"]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("available tools: approve, flaky, search"));
    assert_eq!(msgs[6]["content"], json!("Rust is a systems language."));
    // Tool writes reach the state; usage adds up per node and in total.
    assert_eq!(out.values["notes"], json!(["searched rust"]));
    let usage = &out.values["usage"];
    assert_eq!(usage["total"]["input_tokens"], json!(40));
    assert_eq!(usage["nodes"]["agent"]["output_tokens"], json!(12));

    // Token chunks stream in the `messages` mode, in order, under the AI message's id.
    let first_id = msgs[1]["id"].as_str().unwrap();
    let chunks: Vec<Value> = events
        .iter()
        .filter(|e| e.mode() == Mode::Messages)
        .map(|e| e.data())
        .collect();
    let text: String = chunks
        .iter()
        .filter(|c| c["id"] == first_id)
        .filter_map(|c| c["delta"].as_str())
        .collect();
    assert_eq!(text, "Let me search.");
    assert!(chunks.iter().filter(|c| c["delta"].is_string()).count() >= 3);
    assert!(chunks
        .iter()
        .any(|c| c["tool_call_delta"]["name"] == json!("flaky")));
    // Progress events: running/completed for the good call, error for the failed ones.
    let custom: Vec<Value> = events
        .iter()
        .filter(|e| e.mode() == Mode::Custom)
        .map(|e| e.data())
        .collect();
    let status_of = |call: &str| -> Vec<String> {
        custom
            .iter()
            .filter(|c| c["call_id"] == json!(call))
            .map(|c| c["status"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(status_of("c1"), ["running", "completed"]);
    assert_eq!(status_of("c2"), ["running", "error"]);
    assert_eq!(status_of("c3"), ["error"]);
    assert!(custom
        .iter()
        .all(|c| c["title"].is_string() && c["tool"].is_string()));
}

#[tokio::test]
async fn a_script_for_another_node_fails_the_run_clearly() {
    let model = ScriptedModel::from_json(json!({"responses": [
        {"node": "planner", "text": "plan"}
    ]}))
    .unwrap();
    let g = agent_graph(Arc::new(model));
    let err = g.invoke(ask(), RunConfig::default()).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(
            "response #1 of script `inline` is for node `planner`, but node `agent` called"
        ),
        "{msg}"
    );
    assert!(matches!(err, RunError::NodeFailed { code: Some(ref c), .. } if c == "MODEL_SCRIPT"));
}

#[tokio::test]
async fn an_exhausted_script_fails_the_run_clearly() {
    let model = ScriptedModel::from_json(json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "search", "args": {"query": "x"}}]}
    ]}))
    .unwrap();
    let g = agent_graph(Arc::new(model));
    let err = g.invoke(ask(), RunConfig::default()).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("ran out: all 1 responses were used"), "{msg}");
    assert!(msg.contains("node `agent` asked for another"), "{msg}");
}

#[tokio::test]
async fn a_checkpointed_run_pauses_before_tools_and_resumes() {
    let model = Arc::new(ScriptedModel::from_json(script()).unwrap());
    let g = agent_builder(model.clone())
        .interrupt_before("tools")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let out = invoke_on(&g, "t", ask()).await;
    assert_eq!(out.status, paused_before(&["tools"]));
    assert_eq!(model.remaining(), 1);
    assert_eq!(state_of(&g, "t").await.next, ["tools"]);
    let out = continue_on(&g, "t").await;
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(model.remaining(), 0);
    let msgs = out.values["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 7);
    assert_eq!(out.values["notes"], json!(["searched rust"]));
}

#[tokio::test]
async fn a_tool_that_asks_a_human_interrupts_and_resumes() {
    let model = Arc::new(
        ScriptedModel::from_json(json!({"responses": [
            {"node": "agent", "tool_calls": [
                {"name": "approve", "args": {"action": "deploy"}, "id": "a1"},
                {"name": "search", "args": {"query": "deploys"}, "id": "a2"}
            ]},
            {"node": "agent", "text": "Deployed."}
        ]}))
        .unwrap(),
    );
    let g = agent_builder(model.clone())
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let out = invoke_on(&g, "h", ask()).await;
    let interrupts = interrupts_of(out.status);
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].value, json!({"approve": "deploy"}));
    assert_eq!(interrupts[0].node, "tools");
    let out = resume(&g, "h", json!("yes")).await;
    assert_eq!(out.status, RunStatus::Done);
    let msgs = out.values["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["content"], json!("answer: \"yes\""));
    assert_eq!(msgs[3]["content"], json!("results for deploys"));
    assert_eq!(msgs[4]["content"], json!("Deployed."));
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn scripts_load_from_files_and_are_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.json");
    std::fs::write(&path, script().to_string()).unwrap();
    let model = ScriptedModel::from_file(&path).unwrap();
    assert_eq!(model.name(), "scripted/demo");
    assert_eq!(model.remaining(), 2);
    std::fs::write(&path, "{\"responses\": 3}").unwrap();
    let err = ScriptedModel::from_file(&path).unwrap_err().to_string();
    assert!(
        err.contains("script `demo` does not follow the format"),
        "{err}"
    );
}

/// `rewrite {text}`: asks the executor's model (a nested call), like `update_node_parameters`.
struct Rewrite;
#[async_trait]
impl Tool for Rewrite {
    fn name(&self) -> &str {
        "rewrite"
    }
    fn description(&self) -> &str {
        "Rewrites a text with the model."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let model = ctx.model()?;
        let req = agentgraph_agents::models::ModelRequest {
            messages: vec![json!({"type": "human", "content": args["text"]})],
            ..Default::default()
        };
        let call = agentgraph_agents::models::CallContext::for_task(ctx);
        let answer = model
            .complete(&req, &call)
            .await
            .map_err(|e| ToolError::new("MODEL", e.to_string()))?;
        Ok(ToolOutput::text(answer.text))
    }
}

#[tokio::test]
async fn nested_model_calls_of_tools_count_in_the_usage() {
    let model: Arc<dyn ChatModel> = Arc::new(
        ScriptedModel::from_json(json!({"responses": [
            {"node": "agent", "tool_calls": [
                {"name": "rewrite", "args": {"text": "one"}, "id": "r1"},
                {"name": "rewrite", "args": {"text": "two"}, "id": "r2"}],
             "usage": {"input_tokens": 100, "output_tokens": 10}},
            {"node": "tools", "match": "one", "text": "ONE",
             "usage": {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 2}},
            {"node": "tools", "match": "two", "text": "TWO",
             "usage": {"input_tokens": 5, "output_tokens": 1}},
            {"node": "agent", "text": "done", "usage": {"input_tokens": 200, "output_tokens": 20}}
        ]}))
        .unwrap(),
    );
    let tools = ToolExecutorNode::new([Arc::new(Rewrite) as Arc<dyn Tool>])
        .model(model.clone())
        .usage_channel("usage")
        .pricing(agentgraph_agents::models::Pricing {
            input: 1_000_000.0,
            ..Default::default()
        });
    let llm = LlmNode::new(model)
        .tools(tools.specs())
        .usage_channel("usage");
    let g = GraphBuilder::new("nested")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("usage", ValueType::Json).reducer(Arc::new(UsageSum)))
        .agent_loop(Arc::new(llm), Arc::new(tools))
        .compile()
        .unwrap();
    let out = g.invoke(ask(), RunConfig::default()).await.unwrap();
    let usage = &out.values["usage"];
    assert_eq!(
        usage["nodes"]["tools"],
        json!({"input_tokens": 12, "output_tokens": 4, "cache_read_tokens": 2,
               "cache_creation_tokens": 0, "calls": 2, "cost_usd": 12.0}),
        "{usage}"
    );
    assert_eq!(usage["total"]["calls"], 4, "{usage}");
    assert_eq!(usage["total"]["input_tokens"], 312, "{usage}");
    let tool_texts: Vec<&str> = out.values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tool_texts, ["ONE", "TWO"]);
}
