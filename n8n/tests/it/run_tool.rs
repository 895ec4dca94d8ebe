//! `run_workflow` in a graph: the scripted agent calls it, the run stops to ask the user, and
//! only an approval runs the workflow in n8n; the node results come back as the tool message.

use agentgraph_dsl::Project;
use agentgraph_n8n::{CatalogueSource, N8n};
use agentgraph_runtime::{Input, MemoryCheckpointer, RunConfig, RunStatus};
use serde_json::{json, Value};
use std::sync::Arc;

const GRAPH: &str = r#"
graph runner {
  state {
    messages: messages
    workflow: json = {}
  }
  model m = scripted { script: "script.json" }
  tools t = [run_workflow]
  node agent: llm { model: m, messages: messages, tools: t }
  node tools: tool_executor { tools: t, messages: messages }
  START -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else => END
  }
  tools -> agent
}
"#;

fn workflow() -> Value {
    json!({"name": "Greeter", "nodes": [
        {"id": "a0000000-0000-4000-8000-000000000001", "name": "Start",
         "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"id": "a0000000-0000-4000-8000-000000000002", "name": "Greet",
         "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [220, 0],
         "parameters": {"assignments": {"assignments": [
             {"id": "g", "name": "greeting", "value": "=hello {{ $json.who }}", "type": "string"}]},
             "options": {}}}],
        "connections": {"Start": {"main": [[{"node": "Greet", "type": "main", "index": 0}]]}}})
}

fn last_tool_message(values: &Value) -> String {
    values["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["type"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn the_agent_runs_the_workflow_only_after_the_user_approves() {
    let Some(n8n) = agentgraph_test_support::require_n8n() else {
        return;
    };
    std::env::set_var("N8N_API_URL", &n8n.url);
    std::env::set_var("N8N_API_KEY", &n8n.api_key);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("runner.ag"), GRAPH).expect("graph");
    let script = json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "run_workflow", "args": {"input": {"who": "world"}}}]},
        {"node": "agent", "text": "It ran."}
    ]});
    std::fs::write(dir.path().join("script.json"), script.to_string()).expect("script");
    let registry = N8n::new(CatalogueSource::Builtin).registry();
    let graph = Project::load(dir.path().join("runner.ag"))
        .expect("loads")
        .compile(&registry)
        .unwrap_or_else(|d| panic!("{d:?}"))
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let input =
        json!({"messages": [{"type": "human", "content": "run it"}], "workflow": workflow()});

    for (thread, answer, expected) in [
        ("approve", json!("yes"), "finished with status success"),
        ("decline", json!("no"), "declined"),
    ] {
        let out = graph
            .invoke(Input::values(input.clone()), RunConfig::thread(thread))
            .await
            .expect("first run");
        let RunStatus::Interrupted { interrupts, .. } = &out.status else {
            panic!(
                "{thread}: expected a confirmation interrupt, got {:?}",
                out.status
            )
        };
        assert_eq!(
            interrupts[0].value["kind"], "confirm",
            "{:?}",
            interrupts[0]
        );
        assert!(interrupts[0].value["message"]
            .as_str()
            .unwrap_or("")
            .contains(&n8n.url));
        let out = graph
            .invoke(Input::resume(answer), RunConfig::thread(thread))
            .await
            .expect("resumed run");
        assert!(
            matches!(out.status, RunStatus::Done),
            "{thread}: {:?}",
            out.status
        );
        let message = last_tool_message(&out.values);
        assert!(message.contains(expected), "{thread}: {message}");
        if thread == "approve" {
            assert!(
                message.contains(r#"{"greeting":"hello world"}"#),
                "{message}"
            );
        }
    }
}
