//! A real answer of the small local model, recorded in an eval run of the single-agent graph
//! (`same_answer_names.sse`, its request beside it): one answer of 13 calls that adds two nodes
//! and connects them by name, three times. Replayed through `llm` → `tool_executor` →
//! `apply_operations` with the real add/connect tools (the other tools it called are not
//! offered here and answer UNKNOWN_TOOL).

use crate::recorded_batch::replay_add_connect;
use serde_json::Value;

#[tokio::test]
async fn a_connect_naming_nodes_added_in_the_same_answer_sees_them() {
    let out = replay_add_connect("same_answer_names.sse", "", "build").await;
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
