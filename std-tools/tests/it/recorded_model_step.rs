//! A real answer of the small local model from one `agentgraph eval` run of the single-agent
//! graph (case `github-issue-triage`, "Create a workflow that automatically labels and assigns
//! GitHub issues based on their content using AI classification."), recorded by
//! `scripts/record-provider.py`: the model added the Cohere *model* (a sub-node) as the step
//! after the webhook trigger and connected the webhook to it, three times, each refused
//! (`INCOMPATIBLE_CONNECTION`). The answer is replayed through `llm` → `tool_executor` →
//! `apply_operations` with the real tool and the real catalogue (skipped without
//! `$AGENTGRAPH_N8N_CATALOGUE`: the built-in one lacks the Cohere model), on the workflow the run
//! had at that point.

use crate::recorded_batch::{only_tool_message, real_catalogue, replay};
use agentgraph_agents::tools::Tool;
use agentgraph_std_tools::builder::{AddNodes, ConnectNodes};
use serde_json::{json, Value};
use std::sync::Arc;

const WEBHOOK_ID: &str = "3f59812a-def9-4a69-b736-5552b80ef90c";
const MODEL_ID: &str = "e1c5c872-fb3e-45f3-967e-6d7b7ed988b2";
const USER: &str = "Create a workflow that automatically labels and assigns GitHub issues based on their content using AI classification.";

/// The workflow of the run when the call was made: the webhook and the Cohere model (named
/// for the whole task), unconnected.
fn workflow() -> Value {
    json!({
        "name": "GitHub Issue Labeler",
        "nodes": [
            {"id": WEBHOOK_ID, "name": "GitHub Issues", "type": "n8n-nodes-base.webhook",
             "typeVersion": 2.1, "position": [240, 300], "parameters": {}},
            {"id": MODEL_ID, "name": "Label and Assign GitHub Issues",
             "type": "@n8n/n8n-nodes-langchain.lmCohere", "typeVersion": 1,
             "position": [480, 500], "parameters": {}}
        ],
        "connections": {}
    })
}

fn nodes_of_type<'a>(wf: &'a Value, node_type: &str) -> Vec<&'a Value> {
    wf["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["type"] == node_type)
        .collect()
}

/// Nothing waits for a model: a Basic LLM Chain is added after the webhook, with the Cohere
/// model as its language model.
#[tokio::test]
async fn a_model_connected_as_a_step_runs_through_a_basic_llm_chain() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(catalogue))];
    let out = replay("cohere_in_flow.sse", tools, "", USER, workflow()).await;
    let result = only_tool_message(&out);
    assert_ne!(result["status"], "error", "{result}");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(text.contains("is a language model"), "{text}");
    assert!(text.contains("update_node_parameters"), "{text}");
    let wf = &out.values["workflow"];
    let chains = nodes_of_type(wf, "@n8n/n8n-nodes-langchain.chainLlm");
    assert_eq!(chains.len(), 1, "{wf}");
    let chain = chains[0]["name"].as_str().unwrap_or_default();
    let connections = &wf["connections"];
    assert_eq!(connections["GitHub Issues"]["main"][0][0]["node"], chain);
    assert_eq!(
        connections["Label and Assign GitHub Issues"]["ai_languageModel"][0][0],
        json!({"node": chain, "type": "ai_languageModel", "index": 0})
    );
    // The model is kept as it was.
    assert_eq!(
        nodes_of_type(wf, "@n8n/n8n-nodes-langchain.lmCohere")[0]["id"],
        MODEL_ID
    );
}

/// An agent without a model is where the model goes: the connection stays refused, and the
/// refusal says so (not that the model is a trigger).
#[tokio::test]
async fn with_an_agent_waiting_for_a_model_the_refusal_names_it() {
    let mut wf = workflow();
    wf["nodes"].as_array_mut().expect("nodes").push(json!({
        "id": "agent-1", "name": "Classify Issue", "type": "@n8n/n8n-nodes-langchain.agent",
        "typeVersion": 2.2, "position": [480, 300], "parameters": {}
    }));
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(catalogue))];
    let out = replay("cohere_in_flow.sse", tools, "", USER, wf).await;
    let result = only_tool_message(&out);
    let text = result["content"].to_string();
    assert!(text.contains("INCOMPATIBLE_CONNECTION"), "{text}");
    assert!(
        text.contains("connect it to \\\"Classify Issue\\\" instead"),
        "{text}"
    );
    assert!(!text.contains("a trigger starts the workflow"), "{text}");
    assert_eq!(out.values["workflow"]["connections"], json!({}));
    assert!(nodes_of_type(&out.values["workflow"], "@n8n/n8n-nodes-langchain.chainLlm").is_empty());
}

/// From the run at `fc44193` (case `weekly-email-summary`, multi-agent builder): the schedule
/// trigger connected to a Basic LLM Chain with `connectionType: "ai_languageModel"`. The run
/// refused it (`INVALID_CONNECTION_TYPE`) and the two were never connected; a trigger connects
/// through `main` only, so the connection is made that way, with a note.
#[tokio::test]
async fn a_trigger_connected_with_an_ai_type_is_connected_through_main() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let wf = json!({"name": "Summary of unread Gmail for Monday", "connections": {}, "nodes": [
        {"id": "f7e6882f-dca2-42c3-8017-982e1e1860d6",
         "name": "Every Monday, summarize my unread Gmail with AI and email me the summary",
         "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.4, "position": [240, 300],
         "parameters": {}},
        {"id": "3573ee1f-e106-4cf5-866e-fb7149c5e340",
         "name": "Generate a summary of unread Gmail with a language model",
         "type": "@n8n/n8n-nodes-langchain.chainLlm", "typeVersion": 1.9,
         "position": [480, 300], "parameters": {}}
    ]});
    let user = "Every Monday, summarize my unread Gmail with AI and email me the summary";
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(catalogue))];
    let out = replay("trigger_via_model_type.sse", tools, "", user, wf).await;
    let result = only_tool_message(&out);
    assert_ne!(result["status"], "error", "{result}");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("connectionType \"ai_languageModel\" is not possible"),
        "{text}"
    );
    let connections = &out.values["workflow"]["connections"];
    assert_eq!(
        connections["Every Monday, summarize my unread Gmail with AI and email me the summary"]
            ["main"][0][0]["node"],
        "Generate a summary of unread Gmail with a language model",
        "{connections}"
    );
}

/// A node with inputs that is not a sub-node keeps the refusal: an HTTP Request connected to
/// an agent "via ai_tool" may mean the HTTP Request *tool*, not the main flow.
#[tokio::test]
async fn an_impossible_type_between_flow_nodes_stays_refused() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let wf = json!({"name": "W", "connections": {}, "nodes": [
        {"id": "http-1", "name": "Fetch", "type": "n8n-nodes-base.httpRequest",
         "typeVersion": 4.2, "position": [240, 300], "parameters": {}},
        {"id": "agent-1", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent",
         "typeVersion": 2.2, "position": [480, 300], "parameters": {}}
    ]});
    let tool = ConnectNodes::new(catalogue);
    let ctx = agentgraph_agents::tools::ToolContext::detached(
        agentgraph_runtime::StateView::from_object(json!({"workflow": wf})),
    );
    let err = tool
        .call(
            json!({"sourceNodeId": "http-1", "targetNodeId": "agent-1", "connectionType": "ai_tool"}),
            &ctx,
        )
        .await
        .expect_err("refused");
    assert_eq!(err.code, "INVALID_CONNECTION_TYPE", "{err}");
}

/// A chat model connected to an agent "via main" connects through its own type; asked for
/// another `ai_*` type it stays refused (the model may have meant another node).
#[tokio::test]
async fn a_sub_node_asked_for_main_connects_through_its_own_type() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let wf = json!({"name": "W", "connections": {}, "nodes": [
        {"id": "model-1", "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi",
         "typeVersion": 1, "position": [240, 500], "parameters": {}},
        {"id": "agent-1", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent",
         "typeVersion": 2.2, "position": [480, 300], "parameters": {}}
    ]});
    let tool = ConnectNodes::new(catalogue);
    let ctx = agentgraph_agents::tools::ToolContext::detached(
        agentgraph_runtime::StateView::from_object(json!({"workflow": wf})),
    );
    let args = |kind: &str| json!({"sourceNodeId": "model-1", "targetNodeId": "agent-1", "connectionType": kind});
    let out = tool.call(args("main"), &ctx).await.expect("connected");
    let text = out.content.as_str().unwrap_or_default();
    assert!(text.contains("via ai_languageModel only"), "{text}");
    let err = tool
        .call(args("ai_memory"), &ctx)
        .await
        .expect_err("refused");
    assert_eq!(err.code, "INVALID_CONNECTION_TYPE", "{err}");
}

/// From the run at `fc44193` (case `github-issue-triage`, multi-agent builder): `add_nodes`
/// with `nodeType: "n8n-nodes-base.ai_languageModel"`, a connection type. The run suggested
/// Model Selector, Google Cloud Natural Language and Cohere by their words; the model sent
/// the call twice more and the phase stopped with only the trigger.
#[tokio::test]
async fn a_connection_type_given_as_node_type_names_the_nodes_that_provide_it() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let wf = json!({"name": "Automatically Labels Assigns GitHub", "connections": {}, "nodes": [
        {"id": "daf375da-ae02-4e1c-8867-0d1e72f2a1eb", "name": "Start Workflow",
         "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [240, 300],
         "parameters": {}}
    ]});
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue))];
    let out = replay("connection_type_as_node_type.sse", tools, "", USER, wf).await;
    let result = only_tool_message(&out);
    let text = result["content"].to_string();
    assert!(text.contains("NODE_TYPE_NOT_FOUND"), "{text}");
    assert!(
        text.contains("`ai_languageModel` is a connection type, not a node type"),
        "{text}"
    );
    assert!(text.contains("@n8n/n8n-nodes-langchain.lm"), "{text}");
    assert!(!text.contains("Google Cloud Natural Language"), "{text}");
}

/// From the run at `fc44193` (case `transform-text`, multi-agent builder, discovery timed
/// out): `add_nodes` with `n8n-nodes-base.codeTool`, a type that does not exist, after the
/// webhook; refused three times, the phase stopped with only the trigger. With no node taking
/// tools, the Code node is what a step can be.
#[tokio::test]
async fn an_unknown_tool_variant_without_an_agent_is_added_as_its_main_flow_node() {
    let Some(catalogue) = real_catalogue() else {
        return;
    };
    let wf = json!({"name": "Receives POST Webhook Transform", "connections": {}, "nodes": [
        {"id": "627fc69d-e816-41fa-a26d-4a84d030d759", "name": "Transform Text",
         "type": "n8n-nodes-base.webhook", "typeVersion": 2.1, "position": [240, 300],
         "parameters": {}}
    ]});
    let user = "Create a workflow that receives a POST webhook at /transform with a JSON body \
                containing a \"text\" field, converts it to uppercase, counts the words, and \
                returns both the transformed text and word count.";
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddNodes::new(catalogue))];
    let out = replay("unknown_tool_variant.sse", tools, "", user, wf).await;
    let result = only_tool_message(&out);
    assert_ne!(result["status"], "error", "{result}");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains(
            "`n8n-nodes-base.codeTool` is not a node type; it was read as `n8n-nodes-base.code`"
        ),
        "{text}"
    );
    let types: Vec<&str> = out.values["workflow"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["type"].as_str())
        .collect();
    assert!(types.contains(&"n8n-nodes-base.code"), "{types:?}");
}
