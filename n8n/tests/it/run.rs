//! Running workflows in n8n through a temporary webhook copy: results per node, a failing
//! node, triggers that cannot be started, and the copy removed afterwards.

use agentgraph_n8n::client::WorkflowQuery;
use agentgraph_n8n::execute::{run_workflow, ExecuteError, RunOptions};
use serde_json::json;

fn set_node(name: &str, field: &str, value: &str, x: i64) -> serde_json::Value {
    json!({"name": name, "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [x, 0],
           "parameters": {"assignments": {"assignments": [
               {"id": field, "name": field, "value": value, "type": "string"}]}, "options": {}}})
}

#[tokio::test]
async fn a_webhook_workflow_runs_with_the_input_as_its_body() {
    let Some(client) = super::client() else {
        return;
    };
    let wf = json!({
        "name": "agentgraph run webhook",
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0],
             "webhookId": "11111111-2222-4333-8444-555555555555",
             "parameters": {"path": "orders", "httpMethod": "POST", "options": {}}},
            set_node("Echo", "customer", "={{ $json.body.customer.toUpperCase() }}", 220)
        ],
        "connections": {"Hook": {"main": [[{"node": "Echo", "type": "main", "index": 0}]]}}
    });
    let report = run_workflow(
        &client,
        &wf,
        &json!({"customer": "ada"}),
        &RunOptions::default(),
    )
    .await
    .expect("run");
    assert!(report.succeeded(), "{report:?}");
    assert_eq!(
        report.items_of("Echo"),
        Some(&[json!({"customer": "ADA"})][..])
    );
    assert_eq!(
        report.response,
        (200, json!({"customer": "ADA"})),
        "the last node answers"
    );
    let names: Vec<&str> = report.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["Hook", "Echo"]);
    let left = client
        .list_workflows(&WorkflowQuery {
            name: Some("[agentgraph run] agentgraph run webhook".into()),
            ..Default::default()
        })
        .await
        .expect("list");
    assert!(left.is_empty(), "the temporary copy is deleted: {left:?}");
}

#[tokio::test]
async fn a_manual_workflow_gets_the_input_as_its_items_and_a_failing_node_is_reported() {
    let Some(client) = super::client() else {
        return;
    };
    let wf = json!({
        "name": "agentgraph run manual",
        "nodes": [
            {"name": "When clicking", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1,
             "position": [0, 0], "parameters": {}},
            set_node("Greet", "greeting", "=hello {{ $('When clicking').item.json.who }}", 220),
            {"name": "Check", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [440, 0],
             "parameters": {"jsCode": "if ($input.first().json.greeting !== 'hello world') throw new Error('unexpected greeting');\nreturn $input.all();"}}
        ],
        "connections": {
            "When clicking": {"main": [[{"node": "Greet", "type": "main", "index": 0}]]},
            "Greet": {"main": [[{"node": "Check", "type": "main", "index": 0}]]}
        }
    });
    let ok = run_workflow(
        &client,
        &wf,
        &json!({"who": "world"}),
        &RunOptions::default(),
    )
    .await
    .expect("run");
    assert!(ok.succeeded(), "{ok:?}");
    assert_eq!(
        ok.items_of("When clicking"),
        Some(&[json!({"who": "world"})][..])
    );
    assert_eq!(
        ok.items_of("Check"),
        Some(&[json!({"greeting": "hello world"})][..])
    );
    let failed = run_workflow(
        &client,
        &wf,
        &json!({"who": "moon"}),
        &RunOptions::default(),
    )
    .await
    .expect("run");
    assert_eq!(failed.status, "error", "{failed:?}");
    let check = failed
        .nodes
        .iter()
        .find(|n| n.name == "Check")
        .expect("Check ran");
    assert_eq!(check.status, "error");
    assert!(
        check
            .error
            .as_deref()
            .unwrap_or("")
            .contains("unexpected greeting"),
        "{check:?}"
    );
}

#[tokio::test]
async fn a_schedule_only_workflow_is_refused_before_anything_is_created() {
    let Some(client) = super::client() else {
        return;
    };
    let wf = json!({"name": "agentgraph run schedule", "nodes": [
        {"name": "Daily", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2,
         "position": [0, 0], "parameters": {"rule": {"interval": [{}]}}}], "connections": {}});
    let e = run_workflow(&client, &wf, &json!({}), &RunOptions::default())
        .await
        .expect_err("no runnable trigger");
    assert!(matches!(e, ExecuteError::NoRunnableTrigger { .. }), "{e:?}");
    assert!(
        e.to_string().contains("n8n-nodes-base.scheduleTrigger"),
        "{e}"
    );
}
