//! The n8n scores against a real n8n (`agentgraph_test_support::require_n8n`; skipped without
//! one): create and delete, run an offline workflow and check its output.

use agentgraph_eval::cases::{Expect, Offline};
use agentgraph_eval::n8n_check::check_in_n8n;
use agentgraph_n8n::client::N8nClient;
use serde_json::{json, Value};

fn client() -> Option<N8nClient> {
    let n8n = agentgraph_test_support::require_n8n()?;
    Some(N8nClient::new(&n8n.url, &n8n.api_key).expect("the test n8n's address and key"))
}

/// Manual trigger → Code returning one item `{total: 110}`.
fn computing() -> Value {
    json!({"name": "agentgraph eval test", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Sum", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [220, 0],
         "parameters": {"jsCode": "return [{ json: { total: 110, label: 'done' } }];"}}
    ], "connections": {"Start": {"main": [[{"node": "Sum", "type": "main", "index": 0}]]}}})
}

fn offline(expect: Vec<Expect>) -> Offline {
    Offline {
        input: json!({}),
        expect,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_workflow_is_accepted_and_runs_with_its_output() {
    let Some(client) = client() else { return };
    let case = offline(vec![
        Expect::Item(json!({"total": 110})),
        Expect::Value(json!("done")),
    ]);
    let s = check_in_n8n(&client, &computing(), Some(&case)).await;
    assert_eq!(s.accepts, Some(true), "{s:?}");
    assert_eq!(s.executes, Some(true), "{s:?}");
    let run = s.execution.expect("an execution");
    assert_eq!(run.status, "success");
    assert!(run.expectations.iter().all(|e| e.pass));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_output_or_a_trigger_n8n_cannot_start_does_not_execute() {
    let Some(client) = client() else { return };
    let wrong = offline(vec![Expect::Item(json!({"total": 111}))]);
    let s = check_in_n8n(&client, &computing(), Some(&wrong)).await;
    assert_eq!((s.accepts, s.executes), (Some(true), Some(false)), "{s:?}");
    let run = s.execution.expect("an execution");
    assert_eq!(run.status, "success");
    assert!(!run.expectations[0].pass);

    let scheduled = json!({"name": "agentgraph eval test", "nodes": [
        {"name": "Daily", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2, "position": [0, 0],
         "parameters": {"rule": {"interval": [{}]}}}
    ], "connections": {}});
    let s = check_in_n8n(&client, &scheduled, Some(&offline(vec![]))).await;
    assert_eq!((s.accepts, s.executes), (Some(true), Some(false)), "{s:?}");
    let run = s.execution.expect("a refused run");
    assert_eq!(run.status, "not_run");
    assert!(run.error.unwrap_or_default().contains("scheduleTrigger"));
    // Without an offline part only acceptance is asked.
    let s = check_in_n8n(&client, &scheduled, None).await;
    assert_eq!(
        (s.accepts, s.executes, s.execution),
        (Some(true), None, None)
    );
}

#[tokio::test]
async fn an_empty_workflow_is_not_sent_and_counts_as_refused() {
    // No request is made, so no n8n is needed: a closed loopback port would fail if it were.
    let client = N8nClient::new("http://127.0.0.1:9", "key").unwrap();
    let empty = json!({"nodes": [], "connections": {}});
    let s = check_in_n8n(&client, &empty, None).await;
    assert_eq!((s.accepts, s.executes), (Some(false), None));
    assert!(s.accept_error.unwrap_or_default().contains("no nodes"));
    let s = check_in_n8n(&client, &empty, Some(&offline(vec![]))).await;
    assert_eq!((s.accepts, s.executes), (Some(false), Some(false)));
}
