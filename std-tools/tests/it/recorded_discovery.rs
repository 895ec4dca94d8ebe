//! Real discovery answers of the small local model (`tests/fixtures/recorded/`), replayed
//! through an `llm` node and the `submit_discovery_results` tool:
//! - `discovery_cut.sse`: the call repeated three items until `max_tokens`. With
//!   `close_cut_calls` the items before the cut are submitted and the tool answers them;
//!   without the option the node asks the model again.
//! - `discovery_sub_node_only.sse`: the Default Data Loader submitted as the only node of a
//!   webhook that sorts orders; over a catalogue the tool refuses it (`NO_MAIN_NODES`).

use crate::recorded_batch::{fixture, recorded_model};
use agentgraph_agents::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::*;
use agentgraph_std_tools::builder::SubmitDiscoveryResults;
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_test_support::graphs::{memory, message_list, run_with_custom_events};
use serde_json::{json, Value};
use std::sync::Arc;

/// Replays the recorded answer `name` (and nothing after it) through `llm` → `tool_executor`
/// with `tool`; the run's result and its custom events.
async fn replay(
    name: &str,
    tool: SubmitDiscoveryResults,
    close: bool,
) -> (Result<RunOutput, RunError>, Vec<Value>) {
    let (_server, model) = recorded_model(&format!("{name}.sse")).await;
    let req: Value =
        serde_json::from_str(&fixture(&format!("{name}.request.json"))).expect("request");
    let agent = LlmNode::new(Arc::new(model))
        .system(req["messages"][0]["content"].as_str().unwrap_or(""))
        .tools(vec![tool.spec()])
        .max_tokens(400)
        .close_cut_calls(close);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(tool)];
    let g = GraphBuilder::new("discovery")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new("discovery_context", ValueType::Json))
        .channel(ChannelSpec::new("coordination_log", ValueType::Json))
        .node("agent", Arc::new(agent))
        .node("tools", Arc::new(ToolExecutorNode::new(tools)))
        .chain(&[START, "agent", "tools", END])
        .compile()
        .expect("graph")
        .with_checkpointer(memory());
    let user = req["messages"][1]["content"].as_str().unwrap_or("");
    let input = json!({"messages": [{"type": "human", "id": "h", "content": user}]});
    run_with_custom_events(&g, input, "t").await
}

fn builtin() -> Arc<Catalogue> {
    Arc::new(Catalogue::builtin().expect("built-in catalogue"))
}

/// The tool checking types against the built-in catalogue, as the cut-call tests had it.
fn checked_tool() -> SubmitDiscoveryResults {
    let catalogue = builtin();
    SubmitDiscoveryResults::new().with_type_checker(move |t| catalogue.contains(t))
}

#[tokio::test]
async fn a_discovery_list_cut_by_the_limit_is_submitted_without_its_unfinished_item() {
    let (out, events) = replay("discovery_cut", checked_tool(), true).await;
    let out = out.expect("run");
    let messages = out.values["messages"].as_array().expect("messages");
    let ai = &messages[1];
    // Marked as cut, as every answer the output limit cut is.
    assert_eq!(ai["stop_reason"], "max_tokens", "{ai}");
    let calls = ai["tool_calls"].as_array().expect("one call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "submit_discovery_results");
    // The recording holds eight complete items (HTTP Request, then Text Splitter, Count and Set
    // three times over, the last Count cut in its `version`): the eight are submitted.
    let nodes = calls[0]["args"]["nodes"].as_array().expect("nodes");
    let names: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n["nodeName"].as_str())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert_eq!(names[0], "n8n-nodes-base.httpRequest");
    assert_eq!(names[7], "n8n-nodes-base.textSplitter");
    // The tool answered the call: Text Splitter is not an n8n-nodes-base type.
    let result = &messages[2];
    assert_eq!(result["type"], "tool");
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(
        result["content"]["error"]["code"], "UNKNOWN_NODE_TYPE",
        "{result}"
    );
    let text = result["content"]["error"]["message"].as_str().unwrap_or("");
    assert!(text.contains("n8n-nodes-base.textSplitter"), "{result}");
    assert!(
        events
            .iter()
            .any(|e| e["recovery"] == "answer_cut" && e["kept_calls"] == 1),
        "{events:?}"
    );
}

#[tokio::test]
async fn without_the_option_the_cut_call_is_asked_for_again() {
    // The server has no second answer: the retry the node makes fails the run.
    let (out, events) = replay("discovery_cut", checked_tool(), false).await;
    assert!(out.is_err(), "{out:?}");
    assert!(
        events.iter().any(|e| e["recovery"] == "output_truncated"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_recorded_list_of_one_sub_node_is_refused_with_the_catalogue() {
    let tool = SubmitDiscoveryResults::new().with_catalogue(builtin());
    let (out, _) = replay("discovery_sub_node_only", tool, true).await;
    let out = out.expect("run");
    let messages = out.values["messages"].as_array().expect("messages");
    let calls = messages[1]["tool_calls"].as_array().expect("one call");
    let nodes = calls[0]["args"]["nodes"].as_array().expect("nodes");
    // The recording: the Default Data Loader alone, for a webhook that sorts orders.
    assert_eq!(nodes.len(), 1);
    assert_eq!(
        nodes[0]["nodeName"],
        "@n8n/n8n-nodes-langchain.documentDefaultDataLoader"
    );
    let result = &messages[2];
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(
        result["content"]["error"]["code"], "NO_MAIN_NODES",
        "{result}"
    );
    let text = result["content"]["error"]["message"].as_str().unwrap_or("");
    assert!(text.contains("documentDefaultDataLoader"), "{text}");
    assert!(text.contains("ai_document"), "{text}");
    // Nothing reaches the builder.
    assert!(out
        .values
        .get("discovery_context")
        .is_none_or(Value::is_null));

    // Checking the types alone (no ports), the same list is accepted.
    let (out, _) = replay("discovery_sub_node_only", checked_tool(), true).await;
    let out = out.expect("run");
    let result = &out.values["messages"][2];
    assert_ne!(result["status"], "error", "{result}");
}
