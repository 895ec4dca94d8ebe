//! Rows and workflows the tests share.

use agentgraph_eval::Row;
use serde_json::{json, Value};

/// Webhook → If → (High, Normal) → High feeds an Agent that has an OpenAI chat model.
pub fn branching_workflow() -> Value {
    json!({
        "name": "Fixture",
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"path": "x"}},
            {"name": "Check", "type": "n8n-nodes-base.if", "typeVersion": 2, "position": [200, 0], "parameters": {}},
            {"name": "High", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, -100], "parameters": {}},
            {"name": "Normal", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 100], "parameters": {}},
            {"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 2, "position": [600, 0], "parameters": {}},
            {"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [600, 200], "parameters": {}}
        ],
        "connections": {
            "Hook": {"main": [[{"node": "Check", "type": "main", "index": 0}]]},
            "Check": {"main": [[{"node": "High", "type": "main", "index": 0}], [{"node": "Normal", "type": "main", "index": 0}]]},
            "High": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }
    })
}

/// What a test says about one row; the rest is filled with neutral values.
pub struct RowSpec<'a> {
    pub case: &'a str,
    pub graph: &'a str,
    pub status: &'a str,
    pub non_empty: bool,
    pub structure_valid: bool,
    /// Checklist items met, items.
    pub checklist: (usize, usize),
    pub n8n_accepts: Option<bool>,
    pub wall_ms: u64,
    pub requests: u64,
    pub prompt: u64,
    pub completion: u64,
    pub tool_calls: u64,
}

impl Default for RowSpec<'_> {
    fn default() -> Self {
        RowSpec {
            case: "c",
            graph: "single",
            status: "done",
            non_empty: true,
            structure_valid: true,
            checklist: (1, 1),
            n8n_accepts: None,
            wall_ms: 1000,
            requests: 1,
            prompt: 0,
            completion: 0,
            tool_calls: 0,
        }
    }
}

/// A row as a results file holds it (parsed, so the tests read rows as `compare` does).
pub fn row(s: RowSpec<'_>) -> Row {
    let (passed, total) = s.checklist;
    let validation = |valid: bool| json!({"valid": valid, "errors": u8::from(!valid), "warnings": 0, "findings": {}});
    let n8n = s
        .n8n_accepts
        .map(|a| json!({"accepts": a, "executes": null}))
        .unwrap_or(Value::Null);
    let v = json!({
        "case": s.case, "set": "fixture", "graph": s.graph, "model": "fixture-model",
        "status": s.status, "wall_ms": s.wall_ms, "model_requests": s.requests,
        "prompt_tokens": [s.prompt], "prompt_tokens_total": s.prompt,
        "completion_tokens_total": s.completion, "requests": [],
        "tool_calls": s.tool_calls, "tool_errors": {}, "answer": "",
        "workflow": {"nodes": [], "connections": {}},
        "scores": {
            "non_empty": s.non_empty, "nodes": u8::from(s.non_empty),
            "structure": validation(s.structure_valid), "configuration": validation(true),
            "checklist": {
                "score": if total == 0 { Value::Null } else { json!(passed as f64 / total as f64) },
                "passed": passed, "total": total, "items": []
            },
            "n8n": n8n
        }
    });
    serde_json::from_value(v).expect("a fixture row parses")
}
