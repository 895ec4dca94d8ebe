//! Connection-shaping parameters (`WOULD_BREAK_CONNECTIONS`) and the workflow context.

use super::*;

fn agent_state() -> StateView {
    StateView::from_object(json!({
        "workflow": {
            "name": "Agents",
            "nodes": [
                {"id": "agent-1", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent",
                 "typeVersion": 2.2, "position": [0, 0],
                 "parameters": {"hasOutputParser": true, "promptType": "define", "text": "hi"}},
                {"id": "parser-1", "name": "Parser",
                 "type": "@n8n/n8n-nodes-langchain.outputParserStructured",
                 "typeVersion": 1.3, "position": [0, 200], "parameters": {}},
                {"id": "store-1", "name": "Knowledge",
                 "type": "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
                 "typeVersion": 1.3, "position": [200, 200],
                 "parameters": {"mode": "retrieve-as-tool", "toolName": "kb",
                                "toolDescription": "docs", "memoryKey": "k"}}
            ],
            "connections": {
                "Parser": {"ai_outputParser": [[{"node": "Agent", "type": "ai_outputParser", "index": 0}]]},
                "Knowledge": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
            }
        }
    }))
}

#[tokio::test]
async fn dropped_connection_parameters_are_kept() {
    // The model leaves hasOutputParser out: it is kept, and the message says why.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"promptType": "define", "text": "Summarise the input"}),
        )])),
        agent_state(),
    );
    let out = ok(call(
        json!({"nodeId": "agent-1", "changes": ["Set the prompt to Summarise the input"]}),
        &ctx,
    )
    .await);
    let t = text(&out);
    assert!(!t.contains("removed hasOutputParser"), "{t}");
    assert!(t.contains("Kept hasOutputParser as before"), "{t}");
    assert!(
        t.contains("\"Parser\" → \"Agent\" (ai_outputParser)"),
        "{t}"
    );
    let op = update_op(&out, "operations");
    assert_eq!(op["updates"]["parameters"]["hasOutputParser"], true);
    assert_eq!(op["updates"]["parameters"]["text"], "Summarise the input");

    // A vector store used as a tool: the model drops `mode`.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"toolName": "kb", "toolDescription": "Company handbook", "memoryKey": "k"}),
        )])),
        agent_state(),
    );
    let out = ok(call(
        json!({"nodeId": "store-1", "changes": ["Describe the tool as the company handbook"]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "operations");
    assert_eq!(
        op["updates"]["parameters"]["mode"],
        "retrieve-as-tool",
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("Kept mode as before"), "{}", text(&out));
}

#[tokio::test]
async fn requested_change_that_breaks_connections_is_refused() {
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"hasOutputParser": false, "promptType": "define", "text": "hi"}),
        )])),
        agent_state(),
    );
    let e = err(call(
        json!({"nodeId": "agent-1", "changes": ["Remove the output parser"]}),
        &ctx,
    )
    .await);
    assert_eq!(e.code, "WOULD_BREAK_CONNECTIONS", "{e}");
    assert!(
        e.message
            .contains("\"Parser\" → \"Agent\" (ai_outputParser)"),
        "{e}"
    );
    assert!(e.message.contains("remove_connection"), "{e}");
    // Unconnected nodes change freely.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"mode": "insert", "memoryKey": "k"}),
        )])),
        StateView::from_object(json!({"workflow": {
            "name": "x",
            "nodes": [{"id": "s", "name": "Store",
                       "type": "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
                       "typeVersion": 1.3, "position": [0, 0],
                       "parameters": {"mode": "retrieve-as-tool"}}],
            "connections": {}
        }})),
    );
    let out = ok(call(
        json!({"nodeId": "s", "changes": ["Set mode to insert"]}),
        &ctx,
    )
    .await);
    assert_eq!(
        update_op(&out, "operations")["updates"]["parameters"]["mode"],
        "insert"
    );
}

#[tokio::test]
async fn from_ai_is_allowed_in_langchain_tool_nodes() {
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"url": "={{ $fromAI('url') }}", "toolDescription": "Fetch a page"}),
        )])),
        StateView::from_object(json!({"workflow": {
            "name": "x",
            "nodes": [{"id": "t", "name": "Fetch Page",
                       "type": "@n8n/n8n-nodes-langchain.toolHttpRequest",
                       "typeVersion": 1.1, "position": [0, 0], "parameters": {}}],
            "connections": {}
        }})),
    );
    let out = ok(call(
        json!({"nodeId": "t", "changes": ["Let the agent pick the URL"]}),
        &ctx,
    )
    .await);
    assert_eq!(
        update_op(&out, "operations")["updates"]["parameters"]["url"],
        "={{ $fromAI('url') }}"
    );
}

/// The caller's execution schema (`workflow_context`) is shown to the updater model, so it can
/// use real field names; nothing is added when there is none.
#[test]
fn the_workflow_context_is_shown_to_the_updater() {
    use agentgraph_std_tools::builder::update_parameters::{
        build_request, build_request_with_context,
    };
    use agentgraph_std_tools::workflow::WorkflowNode;
    let cat = Catalogue::builtin().unwrap();
    let desc = cat.get("n8n-nodes-base.set", None).unwrap();
    let node = WorkflowNode::new(
        "n1",
        "Edit",
        "n8n-nodes-base.set",
        desc.version.max(),
        [0.0, 0.0],
    );
    let mut wf = Workflow::default();
    wf.add_node(node.clone());
    let changes = ["Copy the customer's email".to_string()];
    let context = json!({"execution_schema": [{"nodeName": "Trigger",
        "schema": {"customer_email_field": "string"}}]});
    let req = build_request_with_context(desc, &wf, &node, &changes, None, Some(&context));
    let dynamic = &req.system[2].text;
    assert!(dynamic.contains("<workflow_context>"), "{dynamic}");
    assert!(dynamic.contains("customer_email_field"), "{dynamic}");
    for none in [None, Some(&json!({})), Some(&Value::Null)] {
        let req = build_request_with_context(desc, &wf, &node, &changes, None, none);
        assert!(!req.system[2].text.contains("<workflow_context>"));
    }
    let plain = build_request(desc, &wf, &node, &changes, None);
    assert!(!plain.system[2].text.contains("<workflow_context>"));
}
