//! A real answer of the small local model (one `agentgraph eval` run of the single-agent graph,
//! case `order-priority-webhook`, recorded by `scripts/record-provider.py`): the same
//! `add_nodes` call as two calls before, when its node was already in the workflow. Replayed
//! through `llm` → `tool_executor` → `apply_operations` with the real tool, on the workflow the
//! run had at that point: the node is not added a second time and the model is told which
//! node to use.

use crate::recorded_batch::{only_tool_message, replay};
use agentgraph_agents::tools::Tool;
use agentgraph_std_tools::builder::AddNodes;
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::{json, Value};
use std::sync::Arc;

const FETCH_ID: &str = "8d1c52a5-e788-4e18-94dc-4bd75773d883";

/// The workflow after the run's `add_trigger` and two `add_nodes` calls (ids as recorded).
fn workflow() -> Value {
    let node = |id: &str, name: &str, ty: &str, version: f64, x: i64| {
        json!({"id": id, "name": name, "type": ty, "typeVersion": version,
               "position": [x, 0], "parameters": {}})
    };
    json!({"name": "Order priority", "nodes": [
        node("1f92b549-f598-4e27-9cbd-90cffdbfb926", "Receive orders on a webhook",
             "n8n-nodes-base.webhook", 2.1, 0),
        node("acac8997-c3d4-4189-aac5-b32c5d020900", "Mark orders over 100 as high priority",
             "n8n-nodes-base.httpRequest", 4.2, 220),
        node(FETCH_ID, "Fetch order details", "n8n-nodes-base.httpRequest", 4.2, 440),
    ], "connections": {}})
}

#[tokio::test]
async fn an_add_that_repeats_an_existing_node_names_it_instead_of_copying_it() {
    let catalogue = Arc::new(Catalogue::builtin().expect("built-in catalogue"));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue))];
    let user = "Receive orders on a webhook, mark orders over 100 as high priority and the \
                others as normal, and answer the caller with the order id and its priority";
    let out = replay("repeated_add.sse", tools, "", user, workflow()).await;
    let result = only_tool_message(&out);
    // The recorded call asked for "Fetch order details" again; the run added "…details1".
    assert_eq!(result["status"], "error", "{result}");
    let text = result["content"].to_string();
    assert!(text.contains("NODE_EXISTS"), "{text}");
    assert!(text.contains(FETCH_ID), "{text}");
    assert!(text.contains("connect_nodes"), "{text}");
    // And what it still lacks: nothing connects to it yet.
    assert!(
        text.contains("What it still needs: UNREACHABLE_NODE: node \\\"Fetch order details\\\""),
        "{text}"
    );
    let names: Vec<&str> = out.values["workflow"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "Receive orders on a webhook",
            "Mark orders over 100 as high priority",
            "Fetch order details"
        ]
    );
}
