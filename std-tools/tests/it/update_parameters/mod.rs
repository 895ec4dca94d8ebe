//! `update_node_parameters`: happy paths, post-processing, the request sent to the model and
//! every error code, with scripted and recording models.

use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{
    CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, ToolCall, ToolChoice,
};
use agentgraph_agents::tools::{validate_args, Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::update_parameters::{answer_schema, TOOL_NAME};
use agentgraph_std_tools::builder::UpdateNodeParameters;
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{apply_operations, parse_operations};
use agentgraph_std_tools::workflow::Workflow;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

mod answers;
mod connections;
mod errors;
mod recorded;
mod request;

fn tool() -> UpdateNodeParameters {
    match Catalogue::builtin() {
        Ok(c) => UpdateNodeParameters::new(Arc::new(c)),
        Err(e) => panic!("builtin catalogue: {e}"),
    }
}

fn workflow() -> Value {
    json!({
        "name": "Test",
        "nodes": [
            {"id": "trigger-1", "name": "Webhook", "type": "n8n-nodes-base.webhook",
             "typeVersion": 2, "position": [0, 0], "parameters": {"path": "in"}},
            {"id": "set-1", "name": "Edit Fields", "type": "n8n-nodes-base.set",
             "typeVersion": 3.4, "position": [200, 0], "parameters": {}},
            {"id": "http-1", "name": "HTTP Request", "type": "n8n-nodes-base.httpRequest",
             "typeVersion": 4.2, "position": [400, 0],
             "parameters": {"method": "GET", "url": "", "options": {}}},
            {"id": "gmail-tool-1", "name": "Send Email", "type": "n8n-nodes-base.gmailTool",
             "typeVersion": 2.1, "position": [600, 200], "parameters": {}},
            {"id": "gmail-1", "name": "Gmail", "type": "n8n-nodes-base.gmail",
             "typeVersion": 2.1, "position": [600, 0], "parameters": {}},
            {"id": "odd-1", "name": "Odd", "type": "n8n-nodes-base.doesNotExist",
             "typeVersion": 1, "position": [800, 0], "parameters": {}}
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "Edit Fields", "type": "main", "index": 0}]]},
            "Edit Fields": {"main": [[{"node": "HTTP Request", "type": "main", "index": 0}]]}
        }
    })
}

fn state() -> StateView {
    StateView::from_object(json!({
        "workflow": workflow(),
        "messages": [
            {"type": "human", "id": "h1", "content": "Build a workflow that posts orders to our API"},
            {"type": "ai", "id": "a1", "content": "On it."}
        ]
    }))
}

fn respond(parameters: Value) -> Value {
    json!({"node": "detached", "tool_calls": [{"name": "respond", "args": {"parameters": parameters}}]})
}

fn scripted(responses: Vec<Value>) -> Arc<dyn ChatModel> {
    match ScriptedModel::from_json(json!({ "responses": responses })) {
        Ok(m) => Arc::new(m),
        Err(e) => panic!("script: {e}"),
    }
}

fn ctx_with(model: Option<Arc<dyn ChatModel>>, state: StateView) -> ToolContext {
    ToolContext::detached(state).with_model(model)
}

async fn call(args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    tool().call(args, ctx).await
}

fn ok(r: Result<ToolOutput, ToolError>) -> ToolOutput {
    match r {
        Ok(o) => o,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(r: Result<ToolOutput, ToolError>) -> ToolError {
    match r {
        Ok(o) => panic!("expected an error, got {o:?}"),
        Err(e) => e,
    }
}

fn text(out: &ToolOutput) -> &str {
    out.content.as_str().unwrap_or_default()
}

/// The single updateNode operation written to `channel`.
fn update_op(out: &ToolOutput, channel: &str) -> Value {
    assert_eq!(out.writes.len(), 1, "{:?}", out.writes);
    assert_eq!(out.writes[0].0, channel);
    let ops = out.writes[0].1.as_array().cloned().unwrap_or_default();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["type"], "updateNode");
    ops[0].clone()
}

fn applied(out: &ToolOutput) -> Workflow {
    let wf = match Workflow::from_value(workflow()) {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    let ops = match parse_operations(&out.writes[0].1) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    match apply_operations(&wf, &ops) {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    }
}
