//! Whole runs through the library, as `agentgraph eval` makes them: the scripted model proves
//! the plumbing (rows, counts, scores, budgets), never the builder's quality.

use agentgraph_eval::cases::{select, shipped_set};
use agentgraph_eval::row::parse_rows;
use agentgraph_eval::{evaluate, model_label, BuilderGraph, EvalOptions, Limits, Status};
use agentgraph_n8n::{CatalogueSource, N8n};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Compiling reads the provider variables: tests that set them take turns.
static ENV: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The single-agent builder compiled with `vars` set (the others of the providers cleared),
/// and the model label those variables give.
fn compile(vars: &[(&str, &str)], n8n: &std::sync::Arc<N8n>) -> (BuilderGraph, String) {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    for v in [
        "AGENTGRAPH_PROVIDER",
        "AGENTGRAPH_SCRIPT_DIR",
        "AGENTGRAPH_SCRIPT_STATE",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
    ] {
        std::env::remove_var(v);
    }
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
    let path = root().join("graphs/workflow-builder/single-agent.ag");
    let graph =
        BuilderGraph::compile("single", &path, &n8n.registry()).expect("the builder compiles");
    (graph, model_label())
}

/// The weekly-email scenario's single-agent script with usage on every response
/// (input 100 + i, output 10 + i), written to `dir`; returns the responses.
fn script_with_usage(dir: &Path) -> Vec<Value> {
    let src = root().join("tests/scenarios/weekly-email-summary/single.json");
    let mut script: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    let responses = script["responses"].as_array_mut().unwrap();
    for (i, r) in responses.iter_mut().enumerate() {
        r["usage"] = json!({"input_tokens": 100 + i, "output_tokens": 10 + i});
    }
    let out = responses.clone();
    std::fs::write(dir.join("single.json"), script.to_string()).unwrap();
    out
}

fn options(model: String, limits: Limits) -> EvalOptions {
    EvalOptions {
        set: "scenarios".into(),
        model,
        concurrency: 2,
        limits,
        n8n: None,
        verbose: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_scripted_cases_give_two_complete_rows() {
    let dir = tempfile::tempdir().unwrap();
    let responses = script_with_usage(dir.path());
    let n8n = N8n::new(CatalogueSource::Builtin);
    let (graph, model) = compile(
        &[
            ("AGENTGRAPH_PROVIDER", "scripted"),
            ("AGENTGRAPH_SCRIPT_DIR", dir.path().to_str().unwrap()),
        ],
        &n8n,
    );
    let only = [
        "weekly-email-summary".to_string(),
        "order-priority-webhook".to_string(),
    ];
    let cases = select(shipped_set("scenarios").unwrap(), "scenarios", &only, None).unwrap();
    let mut seen = Vec::new();
    let rows = evaluate(
        &cases,
        &[graph],
        n8n.catalogue(),
        &options(model, Limits::default()),
        |r| seen.push(r.case.clone()),
    )
    .await;
    assert_eq!(seen.len(), 2);
    // In set order, whatever order they finished in.
    let ids: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
    assert_eq!(ids, ["order-priority-webhook", "weekly-email-summary"]);

    // What the script says the run must count: one usage record per `llm` call, one per tool
    // step for the calls tools make (the `tools` responses, consecutive in this script).
    let mut want_prompt: Vec<u64> = Vec::new();
    let mut last_tools = false;
    for r in &responses {
        let input = r["usage"]["input_tokens"].as_u64().unwrap();
        let tools = r["node"] == "tools";
        match want_prompt.last_mut() {
            Some(last) if tools && last_tools => *last += input,
            _ => want_prompt.push(input),
        }
        last_tools = tools;
    }
    let sum = |k: &str| {
        responses
            .iter()
            .map(|r| r["usage"][k].as_u64().unwrap())
            .sum::<u64>()
    };
    let agent_calls: u64 = responses
        .iter()
        .filter(|r| r["node"] == "agent")
        .map(|r| r["tool_calls"].as_array().map_or(0, |c| c.len() as u64))
        .sum();
    for row in &rows {
        assert_eq!(row.status, Status::Done, "{row:?}");
        assert_eq!(row.model_requests, responses.len() as u64);
        assert_eq!(row.prompt_tokens, want_prompt);
        assert_eq!(row.prompt_tokens_total, sum("input_tokens"));
        assert_eq!(row.completion_tokens_total, sum("output_tokens"));
        assert_eq!(row.tool_calls, agent_calls);
        assert_eq!(row.graph, "single");
        assert!(row.model.starts_with("scripted"), "{}", row.model);
        assert_eq!(row.workflow["name"], "Weekly Email Summary");
        assert_eq!(
            row.workflow_from, None,
            "a finished run is scored on its own state"
        );
        assert!(row.scores.workflow.non_empty);
        assert!(row.scores.n8n.is_none());
        assert!(!row.answer.is_empty());
    }
    // The script builds the weekly email workflow whatever the prompt: its own checklist
    // passes, the order webhook's does not (no webhook).
    let weekly = &rows[1].scores.workflow.checklist;
    assert!(weekly.all_pass() && weekly.total > 0, "{weekly:?}");
    let order = &rows[0].scores.workflow.checklist;
    assert!(!order.all_pass(), "{order:?}");
    assert!(order
        .items
        .iter()
        .any(|i| i.item == "trigger webhook" && !i.pass));
    // The rows write and read back.
    let text: String = rows.iter().map(|r| r.to_line() + "\n").collect();
    assert_eq!(parse_rows(&text, "rows").unwrap(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_over_its_token_budget_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    script_with_usage(dir.path());
    let n8n = N8n::new(CatalogueSource::Builtin);
    let (graph, model) = compile(
        &[
            ("AGENTGRAPH_PROVIDER", "scripted"),
            ("AGENTGRAPH_SCRIPT_DIR", dir.path().to_str().unwrap()),
        ],
        &n8n,
    );
    let cases = select(
        shipped_set("scenarios").unwrap(),
        "scenarios",
        &["weekly-email-summary".to_string()],
        None,
    )
    .unwrap();
    // The first call alone uses 110 tokens, the first two 222.
    let limits = Limits {
        max_tokens: Some(150),
        ..Limits::default()
    };
    let rows = evaluate(
        &cases,
        &[graph],
        n8n.catalogue(),
        &options(model, limits),
        |_| {},
    )
    .await;
    assert_eq!(rows[0].status, Status::OverBudget);
    assert!(rows[0]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("over the budget of 150"));
    assert!(rows[0].model_requests >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_over_its_time_is_cancelled_and_keeps_the_state_reached() {
    let base = silent_model_server().await;
    let n8n = N8n::new(CatalogueSource::Builtin);
    let (graph, model) = compile(
        &[
            ("AGENTGRAPH_PROVIDER", "openai"),
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "test"),
            ("OPENAI_MODEL", "never-answers"),
        ],
        &n8n,
    );
    let (cases, limits) = one_case_within_a_second();
    let started = Instant::now();
    let rows = evaluate(
        &cases,
        &[graph],
        n8n.catalogue(),
        &options(model, limits),
        |_| {},
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let row = &rows[0];
    assert_eq!(row.status, Status::Timeout);
    assert!(
        row.error
            .as_deref()
            .unwrap_or_default()
            .contains("after 1 s"),
        "{row:?}"
    );
    assert_eq!(row.model_requests, 0);
    // The state reached: the input checkpoint, its workflow still empty.
    assert_eq!(row.workflow["nodes"], json!([]));
    assert!(!row.scores.workflow.non_empty);
    assert!(
        row.model.contains("never-answers") && row.model.contains(&base),
        "{}",
        row.model
    );
}

/// The `if-branch` case of the control-flow set, with one second to run (five to stop).
fn one_case_within_a_second() -> (Vec<agentgraph_eval::cases::Case>, Limits) {
    let cases = select(
        shipped_set("control-flow").unwrap(),
        "control-flow",
        &["if-branch".to_string()],
        None,
    )
    .unwrap();
    let limits = Limits {
        case_timeout: Duration::from_secs(1),
        max_tokens: None,
        grace: Duration::from_secs(5),
    };
    (cases, limits)
}

/// A loopback model server that accepts requests and never answers; returns its base URL.
async fn silent_model_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_cut_inside_a_subgraph_is_scored_on_the_workflow_the_subgraph_wrote() {
    // A phase (a subgraph, as the multi-agent builder's) adds a node, then waits on a model
    // that never answers: the parent never commits the phase's output.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("phase.ag"),
        r#"graph phase {
  state {
    messages: messages
    workflow: json = { name: "", nodes: [], connections: {} }
  }
  model main = auto { openai: "never-answers", max_tokens: 16 }
  node add {
    set {
      workflow: {
        name: "",
        nodes: [{ name: "Start", type: "n8n-nodes-base.manualTrigger", typeVersion: 1, position: [0, 0], parameters: {} }],
        connections: {},
      }
    }
  }
  node think: llm { model: main, messages: messages }
  START -> add -> think -> END
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("parent.ag"),
        r#"use "phase.ag" as phase_graph
graph parent {
  state {
    messages: messages
    workflow: json = { name: "", nodes: [], connections: {} }
  }
  input { messages }
  output { messages, workflow }
  node builder: subgraph phase_graph {
    in { messages: messages, workflow: workflow }
    out { workflow: workflow }
  }
  START -> builder -> END
}
"#,
    )
    .unwrap();
    let base = silent_model_server().await;
    let n8n = N8n::new(CatalogueSource::Builtin);
    let graph = {
        let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var("AGENTGRAPH_PROVIDER", "openai");
        std::env::set_var("OPENAI_BASE_URL", &base);
        std::env::set_var("OPENAI_API_KEY", "test");
        BuilderGraph::compile("phases", &dir.path().join("parent.ag"), &n8n.registry())
            .expect("the test graph compiles")
    };
    let (cases, limits) = one_case_within_a_second();
    let rows = evaluate(
        &cases,
        &[graph],
        n8n.catalogue(),
        &options("test".into(), limits),
        |_| {},
    )
    .await;
    let row = &rows[0];
    assert_eq!(row.status, Status::Timeout, "{row:?}");
    assert_eq!(row.workflow["nodes"][0]["name"], "Start", "{row:?}");
    assert!(row.scores.workflow.non_empty);
    let from = row.workflow_from.as_deref().unwrap_or_default();
    assert!(from.starts_with("builder:"), "{from}");
    // The results file keeps where the workflow came from.
    let back = &parse_rows(&row.to_line(), "rows.jsonl").unwrap()[0];
    assert_eq!(back.workflow_from, row.workflow_from);
}
