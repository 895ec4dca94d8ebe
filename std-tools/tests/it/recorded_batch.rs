//! A real answer of a small local model (`tests/fixtures/recorded/`; how it was recorded:
//! `agents/tests/fixtures/recorded/README.md`) that adds two nodes and connects them in one
//! batch, replayed from a loopback server through `llm` → `tool_executor` → `apply_operations`
//! with the real builder tools: the connect sees the nodes its batch adds.

use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::models::ToolSpec;
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::*;
use agentgraph_std_tools::builder::{AddNodes, ConnectNodes};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{reducer, ApplyOperationsNode};
use agentgraph_std_tools::workflow::Workflow;
use agentgraph_test_support::graphs::{memory, message_list, values};
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded");

pub(crate) fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{DIR}/{name}"))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// The real add_nodes and connect_nodes tools over the built-in catalogue.
fn add_connect_tools() -> Vec<Arc<dyn Tool>> {
    let catalogue = Arc::new(Catalogue::builtin().expect("built-in catalogue"));
    vec![
        Arc::new(AddNodes::new(catalogue.clone())),
        Arc::new(ConnectNodes::new(catalogue)),
    ]
}

/// Replays the recorded answer `sse` (a fixture name) from a loopback server through
/// `llm` (with `system`) → `tool_executor` → `apply_operations` with the add and connect
/// tools, for the human message `user`; the run's output.
pub(crate) async fn replay_add_connect(sse: &str, system: &str, user: &str) -> RunOutput {
    replay(sse, add_connect_tools(), system, user, json!(null)).await
}

/// The run's one tool message (there must be exactly one).
pub(crate) fn only_tool_message(out: &RunOutput) -> Value {
    let messages = out.values["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let results: Vec<&Value> = messages.iter().filter(|m| m["type"] == "tool").collect();
    assert_eq!(results.len(), 1, "{messages:#?}");
    results[0].clone()
}

/// The local model as recorded: a loopback server answering the first chat request with the
/// recorded stream `sse` (a file of `tests/fixtures/recorded/`), and the OpenAI provider
/// pointed at it. The server must outlive the model's use.
pub(crate) async fn recorded_model(sse: &str) -> (MockServer, OpenAiModel) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(fixture(sse), "text/event-stream"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let model = OpenAiModel::new("qwen2.5-coder-1.5b-instruct", Some("local".into()))
        .expect("client")
        .with_base_url(format!("{}/v1", server.uri()));
    (server, model)
}

/// Replays the recorded answer `sse` through `llm` → `tool_executor` → `apply_operations` with
/// `tools`, on a thread whose workflow starts as `workflow` (`null`: none yet).
pub(crate) async fn replay(
    sse: &str,
    tools: Vec<Arc<dyn Tool>>,
    system: &str,
    user: &str,
    workflow: Value,
) -> RunOutput {
    let (_server, model) = recorded_model(sse).await;
    let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec()).collect();
    let agent = LlmNode::new(Arc::new(model)).system(system).tools(specs);
    let g = GraphBuilder::new("batch")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("workflow", ValueType::Json))
        .channel(ChannelSpec::new("operations", ValueType::Json).reducer(reducer()))
        .node("agent", Arc::new(agent))
        .node("tools", Arc::new(ToolExecutorNode::new(tools)))
        .node(
            "apply",
            Arc::new(ApplyOperationsNode::new().with_messages("messages")),
        )
        .chain(&[START, "agent", "tools", "apply", END])
        .compile()
        .expect("graph")
        .with_checkpointer(memory());
    let mut input = json!({"messages": [{"type": "human", "id": "h", "content": user}]});
    if !workflow.is_null() {
        input["workflow"] = workflow;
    }
    g.invoke(values(input), RunConfig::thread("t"))
        .await
        .expect("run")
}

#[tokio::test]
async fn a_connect_in_the_batch_that_adds_its_nodes_succeeds() {
    let req: Value =
        serde_json::from_str(&fixture("parallel_add_connect.request.json")).expect("request");
    // The tools offered are the ones the recorded request offered.
    let recorded: Vec<&str> = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let offered: Vec<String> = add_connect_tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(recorded, offered);
    let system = req["messages"][0]["content"].as_str().unwrap_or("");
    let user = req["messages"][1]["content"].as_str().unwrap_or("");
    let out = replay_add_connect("parallel_add_connect.sse", system, user).await;
    let messages = out.values["messages"].as_array().expect("messages");
    let ai = &messages[1];
    let called: Vec<&str> = ai["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(called, ["add_nodes", "add_nodes", "connect_nodes"]);
    for m in &messages[2..] {
        assert!(m.get("status").is_none(), "a call failed: {m}");
    }
    let connected = messages[4]["content"].as_str().unwrap_or("");
    assert!(
        connected.starts_with("Connected \"Start\" to \"Prepare\" via main"),
        "{connected}"
    );
    let wf = Workflow::from_value_ref(&out.values["workflow"]).expect("workflow");
    let mut nodes: Vec<(&str, &str)> = wf
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.node_type.as_str()))
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        [
            ("Prepare", "n8n-nodes-base.set"),
            ("Start", "n8n-nodes-base.manualTrigger")
        ]
    );
    let edges: Vec<(String, String, String)> = wf
        .edges()
        .into_iter()
        .map(|e| (e.source, e.kind, e.target.node))
        .collect();
    assert_eq!(
        edges,
        [(
            "Start".to_string(),
            "main".to_string(),
            "Prepare".to_string()
        )]
    );
}

/// The real catalogue (`$AGENTGRAPH_N8N_CATALOGUE`), loaded once for the recorded tests that
/// need node types the built-in one lacks; `None` records a skip.
pub(crate) fn real_catalogue() -> Option<Arc<Catalogue>> {
    let dir = agentgraph_test_support::n8n_catalogue()?;
    static C: OnceLock<Arc<Catalogue>> = OnceLock::new();
    Some(
        C.get_or_init(|| {
            Arc::new(
                Catalogue::load_n8n_dir(dir)
                    .unwrap_or_else(|e| panic!("the real catalogue loads: {e}")),
            )
        })
        .clone(),
    )
}
