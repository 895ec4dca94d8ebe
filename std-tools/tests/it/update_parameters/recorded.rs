//! The nested parameter-writing call answered by the small local model in a recorded
//! `agentgraph eval` run of the single-agent graph (case `daily-weather-report`): asked to set
//! up a Send Email node, it wrote the Gmail node's keys (`resource: message`, `messageId:
//! $('Gmail Trigger')…`, `emailType`, `message`). `messageId` is no Send Email parameter, and
//! its expression named a node the workflow does not have (`EXPRESSION_MISSING_NODE`); the run
//! ended with that finding.

use super::{ok, text, update_op};
use crate::recorded_batch::{real_catalogue, recorded_model};
use agentgraph_agents::tools::{Tool, ToolContext, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::UpdateNodeParameters;
use serde_json::{json, Value};
use std::sync::Arc;

/// The recorded answer replayed through the real tool and catalogue (skipped without
/// `$AGENTGRAPH_N8N_CATALOGUE`: the built-in one lacks Send Email, and its abridged
/// descriptions keep every key), with the Send Email node's parameters `before`.
async fn replay(before: Value) -> Option<ToolOutput> {
    let tool = UpdateNodeParameters::new(real_catalogue()?);
    let (_server, model) = recorded_model("unknown_keys_params.sse").await;
    // The run's workflow when the call was made (the trigger's long name shortened).
    let wf = json!({"name": "Weather", "nodes": [
        {"id": "4d08959b-df85-4c51-a742-41e0b63b9c90", "name": "Start",
         "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [240, 300],
         "parameters": {}},
        {"id": "d7e2a749-76e3-4bb9-be1a-abb64025b578", "name": "Get weather data",
         "type": "n8n-nodes-base.openWeatherMap", "typeVersion": 1, "position": [480, 300],
         "parameters": {"cityName": "London", "operation": "currentWeather"}},
        {"id": "dad38206-b2bc-460e-9889-d7e48405a5e9", "name": "Send email",
         "type": "n8n-nodes-base.emailSend", "typeVersion": 2.1, "position": [720, 300],
         "parameters": before}
    ], "connections": {
        "Start": {"main": [[{"node": "Get weather data", "type": "main", "index": 0}]]},
        "Get weather data": {"main": [[{"node": "Send email", "type": "main", "index": 0}]]}
    }});
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": wf})))
        .with_model(Some(Arc::new(model)));
    // The agent's recorded call.
    let args = json!({"nodeId": "dad38206-b2bc-460e-9889-d7e48405a5e9", "changes": [
        "Set the email type to 'text'",
        "Set the message to 'The weather in London is {{currentWeather.temperature}} degrees {{currentWeather.weather}}.'",
        "Set the message ID to '{{ $('Gmail Trigger').item.json.id }}'",
        "Set the operation to 'send'",
        "Set the resource to 'message'"
    ]});
    Some(ok(tool.call(args, &ctx).await))
}

#[tokio::test]
async fn new_keys_the_node_type_lacks_are_left_out_with_their_expressions() {
    let Some(out) = replay(json!({})).await else {
        return;
    };
    let op = update_op(&out, "operations");
    let params = &op["updates"]["parameters"];
    assert!(params.get("messageId").is_none(), "{params}");
    assert!(!params.to_string().contains("Gmail Trigger"), "{params}");
    // Keys Send Email has are kept; `emailType` (a Gmail key too) is not one of them.
    assert_eq!(params["operation"], "send", "{params}");
    assert!(params.get("emailType").is_none(), "{params}");
    let msg = text(&out);
    assert!(msg.contains("Left out parameters"), "{msg}");
    assert!(msg.contains("emailType, messageId"), "{msg}");
}

#[tokio::test]
async fn an_unknown_key_the_node_already_had_is_kept_and_named() {
    let Some(out) = replay(json!({"messageId": "kept"})).await else {
        return;
    };
    let op = update_op(&out, "operations");
    let params = &op["updates"]["parameters"];
    assert!(params.get("messageId").is_some(), "{params}");
    let msg = text(&out);
    assert!(
        msg.contains("(n8n would drop them): emailType. Its parameters: resource, operation,"),
        "{msg}"
    );
    assert!(msg.contains("does not define: messageId"), "{msg}");
}
