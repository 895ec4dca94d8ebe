//! A real answer of the small local model (one `agentgraph eval` run of the multi-agent graph,
//! case `weekly-email-summary`, recorded by `scripts/record-provider.py`): discovery listed the
//! Google Sheets *Trigger*, the builder added it after the schedule trigger, and connected the
//! schedule to it (`connectionType: "main"`); the run answered `INCOMPATIBLE_CONNECTION` and the
//! model tried again as `ai_tool`, then the same call once more. Replayed through `llm` →
//! `tool_executor` → `apply_operations` with the real tool on the real catalogue (it skips
//! without `$AGENTGRAPH_N8N_CATALOGUE`: the built-in one lacks Google Sheets), on the workflow
//! the run had at that point.

use crate::recorded_batch::{only_tool_message, real_catalogue, replay};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::RunOutput;
use agentgraph_std_tools::builder::ConnectNodes;
use serde_json::{json, Value};
use std::sync::Arc;

const SCHEDULE_ID: &str = "c7e8a563-cc04-4639-a39f-ec452b475600";
const SHEETS_ID: &str = "5229c1fd-6e6b-4a64-bec1-0817e9198693";
const USER: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";

/// The workflow when the call was made (ids, names, types and versions as recorded).
fn workflow(second_trigger_type: &str) -> Value {
    json!({"name": "Summary of unread Gmail for Monday", "connections": {}, "nodes": [
        {"id": SCHEDULE_ID, "name": USER, "type": "n8n-nodes-base.scheduleTrigger",
         "typeVersion": 1.2, "position": [240, 300], "parameters": {}},
        {"id": SHEETS_ID, "name": "Fetch unread Gmail from Google Sheets",
         "type": second_trigger_type, "typeVersion": 1, "position": [240, 500],
         "parameters": {}},
        {"id": "7695244b-c5c5-43f4-a2ee-9afb1ecf561f", "name": "Send the summary to Slack",
         "type": "n8n-nodes-base.slack", "typeVersion": 2.2, "position": [480, 500],
         "parameters": {}}
    ]})
}

/// The recorded `connect_nodes` call replayed with the real tool on the run's workflow, whose
/// second node has type `second`; `None` (a skip) without the real catalogue.
async fn replay_connect(second: &str) -> Option<RunOutput> {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ConnectNodes::new(real_catalogue()?))];
    Some(replay("trigger_as_step.sse", tools, "", USER, workflow(second)).await)
}

#[tokio::test]
async fn a_trigger_connected_as_a_step_becomes_its_action_node() {
    let Some(out) = replay_connect("n8n-nodes-base.googleSheetsTrigger").await else {
        return;
    };
    let result = only_tool_message(&out);
    assert_ne!(result["status"], "error", "{result}");
    let text = result["content"].to_string();
    assert!(
        text.contains("it is now `n8n-nodes-base.googleSheets`"),
        "{text}"
    );
    let wf = &out.values["workflow"];
    let node = wf["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == SHEETS_ID))
        .cloned()
        .expect("the node is kept, with its id");
    assert_eq!(node["type"], "n8n-nodes-base.googleSheets");
    assert_eq!(
        wf["connections"][USER]["main"][0][0]["node"],
        "Fetch unread Gmail from Google Sheets"
    );
}

/// A trigger with no action node of the same name (the Schedule Trigger has no
/// `n8n-nodes-base.schedule`) stays refused: there is nothing unambiguous to make of it.
#[tokio::test]
async fn a_trigger_without_an_action_node_stays_refused() {
    let Some(out) = replay_connect("n8n-nodes-base.scheduleTrigger").await else {
        return;
    };
    let result = only_tool_message(&out);
    assert_eq!(result["status"], "error", "{result}");
    assert!(result["content"]
        .to_string()
        .contains("INVALID_CONNECTION_TYPE"));
    assert_eq!(out.values["workflow"]["connections"], json!({}));
}
