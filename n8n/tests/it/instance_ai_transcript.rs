//! Records a tool-heavy Instance AI transcript against a real n8n, the input of the
//! observational-memory measurement (`agents/tests/fixtures/observational/`).
//!
//! Opt-in (`--ignored`), with a running n8n (`scripts/n8n start`), the workflow corpus
//! (`AGENTGRAPH_N8N_WORKFLOWS`) and `AGENTGRAPH_RECORD_TRANSCRIPT=<file>`: six corpus
//! workflows and four webhook workflows (one failing) are created, the webhooks called, and an
//! agent ⇄ tools graph with Instance AI's read tools makes 60 scripted tool calls over six user
//! turns. The tool results are n8n's and the catalogue's; the model's side (calls, short
//! answers) is scripted. The conversation is written to the file as JSON.

use agentgraph_dsl::Project;
use agentgraph_n8n::client::{ExecutionQuery, N8nClient};
use agentgraph_n8n::{CatalogueSource, N8n};
use agentgraph_runtime::{Input, MemoryCheckpointer, RunConfig, RunStatus};
use serde_json::{json, Value};
use std::sync::Arc;

const GRAPH: &str = r#"
graph transcript {
  state {
    messages: messages
  }
  model m = scripted { script: "script.json" }
  tools t = [list_workflows, get_workflow, list_executions, get_execution, workflow_credentials, search_nodes, get_node_details]
  node agent: llm { model: m, messages: messages, tools: t }
  node tools: tool_executor { tools: t, messages: messages }
  START -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> agent
}
"#;

/// Corpus workflows the transcript looks at (relative to the corpus folder).
const CORPUS: [&str; 6] = [
    "Discord/Share YouTube Videos with AI Summaries on Discord.json",
    "Discord/Post New Live Tennis Matches to Discord on a Schedule.json",
    "Slack",
    "Telegram",
    "Notion",
    "Gmail_and_Email_Automation",
];

/// The first `.json` file of a corpus entry (a file, or the first file of a folder).
fn corpus_file(root: &std::path::Path, entry: &str) -> std::path::PathBuf {
    let p = root.join(entry);
    if p.is_file() {
        return p;
    }
    let mut files: Vec<_> = std::fs::read_dir(&p)
        .expect("corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|f| f.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.remove(0)
}

/// A webhook workflow on `path`: a Set node, or (failing) a Code node that throws.
fn hook(name: &str, path: &str, fail: bool) -> Value {
    let second = if fail {
        json!({"name": "Check customer", "type": "n8n-nodes-base.code", "typeVersion": 2,
               "position": [220, 0], "parameters": {"jsCode":
               "if (!$input.first().json.body.customerId) { throw new Error('Customer id missing in payload'); }\nreturn $input.all();"}})
    } else {
        json!({"name": "Tag order", "type": "n8n-nodes-base.set", "typeVersion": 3.4,
               "position": [220, 0], "parameters": {"assignments": {"assignments": [
                 {"id": "s", "name": "status", "value": "=received {{ $json.body.order }}", "type": "string"}]},
                 "options": {}}})
    };
    let second_name = second["name"].clone();
    json!({"name": name, "nodes": [
        {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0],
         "webhookId": format!("{path}-id"),
         "parameters": {"path": path, "httpMethod": "POST", "options": {}}},
        second],
        "connections": {"Hook": {"main": [[{"node": second_name, "type": "main", "index": 0}]]}}})
}

fn call(name: &str, args: Value) -> Value {
    json!({"node": "agent", "tool_calls": [{"name": name, "args": args}]})
}

fn answer(text: &str) -> Value {
    json!({"node": "agent", "text": text})
}

async fn executions(client: &N8nClient, workflow: &str, want: usize) -> Vec<String> {
    for _ in 0..80 {
        let q = ExecutionQuery {
            workflow_id: Some(workflow.to_string()),
            ..Default::default()
        };
        let found = client.list_executions(&q).await.expect("executions");
        let done: Vec<String> = found
            .iter()
            .filter(|e| e["status"] == "success" || e["status"] == "error")
            .map(|e| match &e["id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        if done.len() >= want {
            return done;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("the executions of {workflow} did not finish");
}

#[tokio::test]
#[ignore = "records a fixture: needs n8n, the corpus and AGENTGRAPH_RECORD_TRANSCRIPT"]
async fn record_a_tool_heavy_instance_ai_transcript() {
    let Ok(out) = std::env::var("AGENTGRAPH_RECORD_TRANSCRIPT") else {
        panic!("set AGENTGRAPH_RECORD_TRANSCRIPT to the file to write");
    };
    let Some(client) = super::client() else {
        return;
    };
    let n8n = agentgraph_test_support::require_n8n().expect("instance");
    std::env::set_var("N8N_API_URL", &n8n.url);
    std::env::set_var("N8N_API_KEY", &n8n.api_key);
    let Some(corpus) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let mut corpus_ids = Vec::new();
    for entry in CORPUS {
        let text = std::fs::read_to_string(corpus_file(&corpus, entry)).expect("corpus file");
        let wf: Value = serde_json::from_str(&text).expect("JSON");
        let created = client.create_workflow(&wf).await.expect("create");
        corpus_ids.push(created["id"].as_str().expect("id").to_string());
    }
    let mut hooks = Vec::new();
    for (i, (name, fail)) in [
        ("Order intake", false),
        ("Refund requests", false),
        ("Shipping updates", false),
        ("Customer sync", true),
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("transcript-{i}-{}", std::process::id());
        let id = client
            .create_workflow(&hook(name, &path, fail))
            .await
            .expect("create")["id"]
            .as_str()
            .expect("id")
            .to_string();
        client.activate_workflow(&id).await.expect("activate");
        for n in 0..3 {
            let body = if fail {
                json!({"order": n})
            } else {
                json!({"order": format!("A-{}", 1000 + n), "customerId": n})
            };
            let _ = client
                .call_webhook("POST", &path, &body)
                .await
                .expect("webhook");
        }
        hooks.push((id, fail));
    }
    let mut runs = Vec::new();
    for (id, _) in &hooks {
        runs.push(executions(&client, id, 3).await);
    }

    // Six turns, 60 tool calls in all.
    let c = &corpus_ids;
    let h: Vec<&str> = hooks.iter().map(|(id, _)| id.as_str()).collect();
    let mut turns: Vec<(&str, Vec<Value>, &str)> = Vec::new();
    let mut t1 = vec![call("list_workflows", json!({}))];
    t1.extend(
        c.iter()
            .map(|id| call("get_workflow", json!({"workflowId": id}))),
    );
    t1.extend(
        h.iter()
            .map(|id| call("get_workflow", json!({"workflowId": id}))),
    );
    turns.push((
        "Which workflows do I have, and what does each one do?",
        t1,
        "You have ten workflows: six imported automations (Discord, Slack, Telegram, Notion, \
         email) and four webhook flows (orders, refunds, shipping, customer sync).",
    ));
    let mut t2 = vec![call("list_executions", json!({"status": "error"}))];
    for id in &runs[3] {
        t2.push(call("get_execution", json!({"executionId": id})));
        t2.push(call(
            "get_execution",
            json!({"executionId": id, "node": "Hook"}),
        ));
    }
    t2.push(call("list_executions", json!({"workflowId": h[3]})));
    turns.push((
        "Some runs failed today. Which ones, and why?",
        t2,
        "Customer sync failed three times: its Check customer node throws 'Customer id missing \
         in payload' because the webhook bodies carry no customerId.",
    ));
    let mut t3: Vec<Value> = c
        .iter()
        .map(|id| call("workflow_credentials", json!({"workflowId": id})))
        .collect();
    t3.extend(
        h.iter()
            .map(|id| call("workflow_credentials", json!({"workflowId": id}))),
    );
    turns.push((
        "What credentials do these workflows need, and which are missing?",
        t3,
        "The imported workflows need Discord, Slack, Telegram, Notion, Gmail and OpenAI \
         credentials; none are assigned yet. The webhook flows need none.",
    ));
    let mut t4 = Vec::new();
    for q in ["openai", "summarize text", "slack message", "if condition"] {
        t4.push(call(
            "search_nodes",
            json!({"queries": [{"queryType": "name", "query": q}]}),
        ));
    }
    for n in [
        "@n8n/n8n-nodes-langchain.openAi",
        "n8n-nodes-base.slack",
        "n8n-nodes-base.if",
        "n8n-nodes-base.code",
    ] {
        t4.push(call(
            "get_node_details",
            json!({"nodeName": n, "withParameters": true}),
        ));
    }
    turns.push((
        "I want Customer sync to post a short AI summary to Slack when a customer id is missing. \
         Which nodes would I use?",
        t4,
        "An If node on the customer id, then an OpenAI node for the summary and a Slack node \
         to post it.",
    ));
    let mut t5 = Vec::new();
    for (i, id) in h.iter().take(3).enumerate() {
        t5.push(call("list_executions", json!({"workflowId": id})));
        for e in runs[i].iter().take(2) {
            t5.push(call("get_execution", json!({"executionId": e})));
        }
        t5.push(call(
            "get_execution",
            json!({"executionId": runs[i][0], "node": "Tag order"}),
        ));
    }
    turns.push((
        "And the three order flows: did their runs go through, with what data?",
        t5,
        "All nine runs of Order intake, Refund requests and Shipping updates succeeded; each \
         tagged its order as received.",
    ));
    let used: usize = turns.iter().map(|(_, calls, _)| calls.len()).sum();
    let mut t6 = vec![
        call("list_workflows", json!({"active": true})),
        call("list_workflows", json!({"active": false})),
    ];
    let mut i = 0;
    while used + t6.len() < 60 {
        t6.push(call("get_workflow", json!({"workflowId": c[i % c.len()]})));
        i += 1;
    }
    turns.push((
        "Give me the overall state of my instance.",
        t6,
        "Four webhook flows are active (Customer sync failing on a missing customer id); the \
         six imported workflows are inactive and need their credentials.",
    ));

    let mut responses = Vec::new();
    for (_, calls, text) in &turns {
        responses.extend(calls.iter().cloned());
        responses.push(answer(text));
    }
    let total: usize = turns.iter().map(|(_, calls, _)| calls.len()).sum();
    assert_eq!(total, 60);

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("script.json"),
        json!({ "responses": responses }).to_string(),
    )
    .expect("script");
    std::fs::write(dir.path().join("transcript.ag"), GRAPH).expect("graph");
    let source = match agentgraph_test_support::n8n_catalogue() {
        Some(d) => CatalogueSource::Dir(d),
        None => CatalogueSource::Builtin,
    };
    let graph = Project::load(dir.path().join("transcript.ag"))
        .expect("loads")
        .compile(&N8n::new(source).registry())
        .unwrap_or_else(|d| panic!("{d:?}"))
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let mut last = Value::Null;
    for (ask, _, _) in &turns {
        let input = json!({"messages": [{"type": "human", "content": ask}]});
        let done = graph
            .invoke(Input::values(input), RunConfig::thread("transcript"))
            .await
            .expect("turn");
        assert!(matches!(done.status, RunStatus::Done), "{:?}", done.status);
        last = done.values["messages"].clone();
    }
    let messages = last.as_array().cloned().unwrap_or_default();
    let errors = messages
        .iter()
        .filter(|m| m["type"] == "tool" && m["status"] == "error")
        .count();
    println!("{} messages, {errors} tool errors", messages.len());
    std::fs::write(&out, serde_json::to_string_pretty(&messages).expect("JSON")).expect("write");
    let created: Vec<&str> = corpus_ids.iter().map(String::as_str).chain(h).collect();
    for id in created {
        let _ = client.deactivate_workflow(id).await;
        let _ = client.delete_workflow(id).await;
    }
}
