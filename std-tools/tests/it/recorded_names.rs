//! A real answer of the small local model, recorded in an eval run of the single-agent graph
//! (`same_answer_names.sse`, its request beside it): one answer of 13 calls that adds two nodes
//! and connects them by name, three times. Replayed through `llm` → `tool_executor` →
//! `apply_operations` with the real add/connect tools (the other tools it called are not
//! offered here and answer UNKNOWN_TOOL).

use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::*;
use agentgraph_std_tools::builder::{AddNodes, ConnectNodes};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{reducer, ApplyOperationsNode};
use agentgraph_test_support::graphs::{memory, message_list, values};
use serde_json::{json, Value};
use std::sync::Arc;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded");

#[tokio::test]
async fn a_connect_naming_nodes_added_in_the_same_answer_sees_them() {
    let sse = std::fs::read_to_string(format!("{DIR}/same_answer_names.sse")).expect("fixture");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let catalogue = Arc::new(Catalogue::builtin().expect("built-in catalogue"));
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(AddNodes::new(catalogue.clone())),
        Arc::new(ConnectNodes::new(catalogue.clone())),
    ];
    let specs = tools.iter().map(|t| t.spec()).collect::<Vec<_>>();
    let model = OpenAiModel::new("qwen2.5-coder-1.5b-instruct", Some("local".into()))
        .expect("client")
        .with_base_url(format!("{}/v1", server.uri()));
    let g = GraphBuilder::new("batch")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("workflow", ValueType::Json))
        .channel(ChannelSpec::new("operations", ValueType::Json).reducer(reducer()))
        .node(
            "agent",
            Arc::new(LlmNode::new(Arc::new(model)).tools(specs)),
        )
        .node("tools", Arc::new(ToolExecutorNode::new(tools)))
        .node(
            "apply",
            Arc::new(ApplyOperationsNode::new().with_messages("messages")),
        )
        .chain(&[START, "agent", "tools", "apply", END])
        .compile()
        .expect("graph")
        .with_checkpointer(memory());
    let input = json!({"messages": [{"type": "human", "id": "h", "content": "build"}]});
    let out = g
        .invoke(values(input), RunConfig::thread("t"))
        .await
        .expect("run");
    let messages = out.values["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let results_of = |tool: &str| -> Vec<Value> {
        messages
            .iter()
            .filter(|m| m["type"] == "tool" && m["name"] == tool)
            .cloned()
            .collect()
    };
    // Both nodes were added.
    let nodes: Vec<&str> = out.values["workflow"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(nodes, ["Send Order Data", "Mark Order Priority"]);
    // The connect saw them (it was run again after the adds): what is left is its own
    // mistake, an `ai_tool` connection between two HTTP Request nodes, explained; the
    // identical second connect was not run.
    let connects = results_of("connect_nodes");
    assert_eq!(connects.len(), 3, "{connects:#?}");
    let first = connects[0]["content"].to_string();
    assert!(first.contains("INVALID_CONNECTION_TYPE"), "{first}");
    assert!(first.contains("does not output ai_tool"), "{first}");
    assert!(!first.contains("NODE_NOT_FOUND"), "{first}");
    for dup in &connects[1..] {
        assert!(
            dup["content"].to_string().contains("DUPLICATE_CALL"),
            "{dup}"
        );
    }
}
