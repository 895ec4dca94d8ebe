//! The JSONL row: its fields, its values, and that it reads back.

use agentgraph_eval::meter::{Meter, Request};
use agentgraph_eval::row::{parse_rows, Scores};
use agentgraph_eval::run::CaseRun;
use agentgraph_eval::{Row, Status};
use serde_json::{json, Value};
use std::time::Duration;

fn run() -> CaseRun {
    let mut meter = Meter::default();
    meter.requests = vec![
        Request {
            node: "agent".into(),
            calls: 1,
            prompt_tokens: 120,
            completion_tokens: 8,
        },
        Request {
            node: "tools".into(),
            calls: 2,
            prompt_tokens: 50,
            completion_tokens: 5,
        },
    ];
    meter.tool_calls = 3;
    meter.tool_errors.insert("INVALID_ARGUMENTS".into(), 1);
    CaseRun {
        status: Status::Timeout,
        error: Some("cancelled after 60 s".into()),
        error_code: None,
        wall: Duration::from_millis(1534),
        meter,
        answered: Vec::new(),
        workflow_from: None,
        values: json!({
            "workflow": {"name": "W", "nodes": [{"name": "A", "type": "t"}], "connections": {}},
            "messages": [
                {"type": "human", "content": "Build it"},
                {"type": "ai", "content": "Done."},
                {"type": "tool", "content": "x"}
            ],
            "coordination_log": [
                {"phase": "discovery", "status": "completed"},
                {"phase": "builder", "status": "error"}
            ]
        }),
    }
}

#[test]
fn a_row_has_every_field_with_the_run_s_values() {
    let row = Row::new("case-1", "quick", "multi", "m", &run(), Scores::default());
    let line = row.to_line();
    assert!(!line.contains('\n'));
    let v: Value = serde_json::from_str(&line).expect("a row is JSON");
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "answer",
            "case",
            "completion_tokens_total",
            "error",
            "graph",
            "model",
            "model_requests",
            "phase_errors",
            "prompt_tokens",
            "prompt_tokens_total",
            "requests",
            "scores",
            "set",
            "status",
            "tool_calls",
            "tool_errors",
            "wall_ms",
            "workflow"
        ]
    );
    assert_eq!(v["status"], "timeout");
    assert_eq!(v["wall_ms"], 1534);
    assert_eq!(v["model_requests"], 3);
    assert_eq!(v["prompt_tokens"], json!([120, 50]));
    assert_eq!(v["prompt_tokens_total"], 170);
    assert_eq!(v["completion_tokens_total"], 13);
    assert_eq!(
        v["requests"][1],
        json!({"node": "tools", "calls": 2, "prompt_tokens": 50, "completion_tokens": 5})
    );
    assert_eq!(v["tool_calls"], 3);
    assert_eq!(v["tool_errors"], json!({"INVALID_ARGUMENTS": 1}));
    assert_eq!(v["phase_errors"], json!(["builder"]));
    assert_eq!(v["answer"], "Done.");
    assert_eq!(v["workflow"]["name"], "W");
    let mut score_keys: Vec<&str> = v["scores"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    score_keys.sort_unstable();
    assert_eq!(
        score_keys,
        [
            "checklist",
            "configuration",
            "n8n",
            "nodes",
            "non_empty",
            "structure"
        ]
    );
    assert_eq!(v["scores"]["n8n"], Value::Null);
    let back = parse_rows(&format!("{line}\n\n{line}\n"), "rows").expect("rows read back");
    assert_eq!(back, vec![row.clone(), row]);
}

#[test]
fn a_state_without_a_workflow_gives_an_empty_one_and_bad_lines_are_located() {
    let mut r = run();
    r.values = Value::Null;
    let row = Row::new("c", "s", "single", "m", &r, Scores::default());
    assert_eq!(row.workflow, json!({"nodes": [], "connections": {}}));
    assert_eq!(row.answer, "");
    let err = parse_rows(
        &format!("{}\n{{\"case\": 1}}\n", row.to_line()),
        "results.jsonl",
    )
    .expect_err("a bad second line");
    assert!(err.to_string().starts_with("results.jsonl:2:"), "{err}");
}
