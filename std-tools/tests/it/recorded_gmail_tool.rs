//! Real answers of the small local model from one `agentgraph eval` run of the single-agent
//! graph (case `weekly-email-summary`, "Every Monday, summarize my unread Gmail with AI and
//! email me the summary"), recorded by `scripts/record-provider.py`: the model added the Gmail
//! *Tool* (a sub-node only an AI Agent calls) as the step that reads mail, searched for its
//! agent as `ai_agent` five times ("No nodes found"), then tried three times to connect the
//! schedule trigger to the tool node. Each answer is replayed through `llm` → `tool_executor`
//! → `apply_operations` with the real tool, on the workflow the run had at that point.

use crate::recorded_batch::{only_tool_message, replay};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::RunOutput;
use agentgraph_std_tools::builder::{AddNodes, ConnectNodes, SearchNodes};
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::{json, Value};
use std::sync::Arc;

const TRIGGER_ID: &str = "a94389a4-da19-401c-aca9-c23103b0eff7";
const TOOL_ID: &str = "b1f13fc7-9da5-4147-9bfc-e8ee3d4d664a";

fn catalogue() -> Arc<Catalogue> {
    Arc::new(Catalogue::builtin().expect("built-in catalogue"))
}

/// The workflow after the run's `add_trigger` call, with the Gmail Tool when `with_tool`.
fn workflow(with_tool: bool) -> Value {
    let mut nodes = vec![json!({
        "id": TRIGGER_ID, "name": "Every Monday at 7", "type": "n8n-nodes-base.scheduleTrigger",
        "typeVersion": 1.2, "position": [0, 0], "parameters": {}
    })];
    if with_tool {
        nodes.push(json!({
            "id": TOOL_ID, "name": "Fetch Unread Gmail", "type": "n8n-nodes-base.gmailTool",
            "typeVersion": 2.1, "position": [200, 200], "parameters": {}
        }));
    }
    json!({"name": "Summary of unread Gmail for Monday", "nodes": nodes, "connections": {}})
}

/// The content of the run's one tool message.
fn tool_result(out: &RunOutput) -> String {
    only_tool_message(out)["content"].to_string()
}

const USER: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";

#[tokio::test]
async fn a_query_written_as_an_identifier_finds_the_node_by_its_words() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SearchNodes::new(catalogue()))];
    let out = replay("gmail_tool_005.sse", tools, "", USER, workflow(true)).await;
    let text = tool_result(&out);
    // The recorded call searched `ai_agent`; the run answered "No nodes found".
    assert!(text.contains("\\\"ai_agent\\\""), "{text}");
    assert!(!text.contains("No nodes found"), "{text}");
    assert!(text.contains("@n8n/n8n-nodes-langchain.agent"), "{text}");
}

#[tokio::test]
async fn a_tool_variant_added_where_no_agent_takes_tools_names_the_main_flow_node() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue()))];
    let out = replay("gmail_tool_004.sse", tools, "", USER, workflow(false)).await;
    let text = tool_result(&out);
    assert!(text.contains("Successfully added"), "{text}");
    assert!(text.contains("n8n-nodes-base.gmailTool") || text.contains("Gmail Tool"));
    assert!(
        text.contains("add `n8n-nodes-base.gmail` instead"),
        "{text}"
    );
}

/// The run answered this call `INCOMPATIBLE_CONNECTION` (naming `n8n-nodes-base.gmail`), and
/// the model sent it twice more unchanged: the tool variant is now made the main-flow node and
/// connected.
#[tokio::test]
async fn connecting_a_trigger_to_a_tool_variant_makes_it_the_main_flow_node() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(catalogue()))];
    let out = replay("gmail_tool_010.sse", tools, "", USER, workflow(true)).await;
    let result = only_tool_message(&out);
    assert_ne!(result["status"], "error", "{result}");
    let text = tool_result(&out);
    assert!(text.contains("it is now `n8n-nodes-base.gmail`"), "{text}");
    assert!(
        text.contains("Connected \\\"Every Monday at 7\\\" to \\\"Fetch Unread Gmail\\\" via main"),
        "{text}"
    );
    let wf = &out.values["workflow"];
    let node = wf["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == TOOL_ID))
        .cloned()
        .expect("the node is kept, with its id");
    assert_eq!(node["type"], "n8n-nodes-base.gmail");
    assert_eq!(node["name"], "Fetch Unread Gmail");
    assert_eq!(
        wf["connections"]["Every Monday at 7"]["main"][0][0]["node"],
        "Fetch Unread Gmail"
    );
}

/// With an agent in the workflow the same connection stays refused: the tool may be meant for
/// the agent.
#[tokio::test]
async fn with_an_agent_a_main_connection_to_a_tool_variant_stays_refused() {
    let mut wf = workflow(true);
    wf["nodes"].as_array_mut().expect("nodes").push(json!({
        "id": "agent-1", "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent",
        "typeVersion": 2.2, "position": [200, 0], "parameters": {}
    }));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(catalogue()))];
    let out = replay("gmail_tool_010.sse", tools, "", USER, wf).await;
    let text = tool_result(&out);
    assert!(text.contains("INCOMPATIBLE_CONNECTION"), "{text}");
    assert_eq!(out.values["workflow"]["connections"], json!({}));
    let types: Vec<&str> = out.values["workflow"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["type"].as_str())
        .collect();
    assert!(types.contains(&"n8n-nodes-base.gmailTool"), "{types:?}");
}

#[tokio::test]
async fn with_an_agent_in_the_workflow_the_tool_variant_gets_no_such_note() {
    let mut wf = workflow(false);
    wf["nodes"].as_array_mut().expect("nodes").push(json!({
        "id": "agent-1", "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent",
        "typeVersion": 2.2, "position": [200, 0], "parameters": {}
    }));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue()))];
    let out = replay("gmail_tool_004.sse", tools, "", USER, wf).await;
    let text = tool_result(&out);
    assert!(text.contains("Successfully added"), "{text}");
    assert!(!text.contains("instead"), "{text}");
}

#[tokio::test]
async fn a_sub_node_search_naming_its_connection_type_as_the_query_is_run() {
    // From the next run of the same case: the connection type written as `query`.
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SearchNodes::new(catalogue()))];
    let out = replay("sub_node_query.sse", tools, "", USER, workflow(false)).await;
    let text = tool_result(&out);
    assert!(!text.contains("INVALID_INPUT"), "{text}");
    assert!(
        text.contains("sub-nodes with output type ai_languageModel"),
        "{text}"
    );
    assert!(text.contains("@n8n/n8n-nodes-langchain.lmChat"), "{text}");
}

#[tokio::test]
async fn connection_parameters_the_node_type_lacks_are_left_out_and_named() {
    // Case `order-priority-webhook`: the tool description's vector-store example copied onto an
    // HTTP Request Tool, in a workflow holding only its webhook trigger.
    let wf = json!({"name": "Orders", "connections": {}, "nodes": [{
        "id": "1413f73d-265f-4394-a987-d249934c913b", "name": "Receive Orders",
        "type": "n8n-nodes-base.webhook", "typeVersion": 2.1, "position": [0, 0],
        "parameters": {}
    }]});
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue()))];
    let user = "Receive orders on a webhook, mark orders over 100 as high priority and the \
                others as normal, and answer the caller with the order id and its priority";
    let out = replay("copied_parameters.sse", tools, "", user, wf).await;
    let text = tool_result(&out);
    assert!(
        text.contains("Successfully added \\\"Mark Orders\\\""),
        "{text}"
    );
    assert!(
        text.contains("Ignored connectionParameters that HTTP Request Tool does not have: mode"),
        "{text}"
    );
    assert!(
        text.contains("add `n8n-nodes-base.httpRequest` instead"),
        "{text}"
    );
    let nodes = out.values["workflow"]["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let added = nodes
        .iter()
        .find(|n| n["name"] == "Mark Orders")
        .expect("the node was added");
    assert_eq!(added["parameters"].get("mode"), None, "{added}");
}

#[tokio::test]
async fn a_search_that_finds_nothing_names_the_core_nodes() {
    // Case `order-priority-webhook`: the request's own word searched again and again.
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SearchNodes::new(catalogue()))];
    let user = "Receive orders on a webhook, mark orders over 100 as high priority and the \
                others as normal, and answer the caller with the order id and its priority";
    let out = replay("search_request_words.sse", tools, "", user, workflow(false)).await;
    let text = tool_result(&out);
    assert!(
        text.contains("No nodes found matching \\\"priority\\\""),
        "{text}"
    );
    assert!(
        text.contains("n8n-nodes-base.if (a condition, two outputs)"),
        "{text}"
    );
    assert!(text.contains("n8n-nodes-base.set (sets fields)"), "{text}");
}

#[tokio::test]
async fn a_connection_type_searched_by_name_lists_its_sub_nodes() {
    // From a later run of the same case: told that the agent lacks its chat model, the model
    // searched `ai_tool` by *name*, which listed tools of services named "AI" (Jina AI Tool,
    // Mistral AI Tool), and it went on searching `ai_tool`, `ai_agent` and `ai_languageModel`
    // by name until the case's time ran out.
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SearchNodes::new(catalogue()))];
    let out = replay(
        "name_query_connection_type.sse",
        tools,
        "",
        USER,
        workflow(false),
    )
    .await;
    let text = tool_result(&out);
    assert!(
        text.contains("sub-nodes with output type ai_tool"),
        "{text}"
    );
    assert!(!text.contains("the words of"), "{text}");
}
