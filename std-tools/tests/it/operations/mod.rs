//! Workflow operations: each operation's happy path and errors, atomicity, the reducer, the
//! apply node in a graph, and properties (order, idempotent merge, no dangling connections).

use agentgraph_runtime::reducer::Reducer;
use agentgraph_runtime::{
    ChannelSpec, GraphBuilder, Input, ReducerRegistry, RunConfig, ValueType, END, START,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{
    apply_operations, apply_operations_with, parse_operations, register, rename_in_expression,
    ApplyNote, ApplyOperationsNode, Operation, OperationErrorKind, OperationsReducer,
};
use agentgraph_std_tools::workflow::{Connection, Connections, Workflow, WorkflowNode};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

mod batches;
mod each_operation;
mod properties;
mod reducer;

fn node(id: &str, name: &str) -> WorkflowNode {
    WorkflowNode::new(id, name, "n8n-nodes-base.set", 3.4, [0.0, 0.0])
}

/// Trigger → HTTP Request → Set, and a chat model feeding an agent (ai_languageModel).
fn sample() -> Workflow {
    let wf = json!({
        "name": "Sample",
        "nodes": [
            {"id": "1", "name": "Trigger", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"id": "2", "name": "HTTP Request", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {"url": "https://example.com"}},
            {"id": "3", "name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 0.5],
             "parameters": {"value": "={{ $('HTTP Request').item.json.x }} {{ $node[\"HTTP Request\"].json.y }}"}},
            {"id": "4", "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1, "position": [0, 200], "parameters": {}},
            {"id": "5", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 200],
             "parameters": {"text": "={{ $node.Set.json.z }} {{ $node.Settings.json }}"}}
        ],
        "connections": {
            "Trigger": {"main": [[{"node": "HTTP Request", "type": "main", "index": 0}]]},
            "HTTP Request": {"main": [[{"node": "Set", "type": "main", "index": 0}], null]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"},
        "pinData": {"HTTP Request": [{"json": {"x": 1}}]}
    });
    Workflow::from_value(wf).expect("sample loads")
}

fn ops(v: Value) -> Vec<Operation> {
    parse_operations(&v).expect("valid operations")
}

fn node_json(id: &str, name: &str) -> Value {
    serde_json::to_value(node(id, name)).expect("node json")
}
