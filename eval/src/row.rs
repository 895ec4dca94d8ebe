//! One result row per case and graph: what `--out` writes as JSON Lines and `compare` reads.

use crate::instance::InstanceScore;
use crate::meter::Request;
use crate::n8n_check::N8nScore;
use crate::run::{CaseRun, Status};
use crate::score::WorkflowScores;
use crate::EvalError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Every score of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// The scores that need only the workflow.
    #[serde(flatten)]
    pub workflow: WorkflowScores,
    /// What n8n made of it (`None`: no n8n configured).
    #[serde(default)]
    pub n8n: Option<N8nScore>,
    /// An instance case's checks: answer, tools, the instance after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<InstanceScore>,
}

/// The result of one case on one graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The case id.
    pub case: String,
    /// The set it came from (or the cases file).
    pub set: String,
    /// The graph: `single`, `multi` or a path.
    pub graph: String,
    /// The model, as the environment configures it.
    pub model: String,
    /// How the run ended.
    pub status: Status,
    /// The run's error, or why it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The failing node's error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Wall time of the run, in milliseconds.
    pub wall_ms: u64,
    /// Model calls in all.
    pub model_requests: u64,
    /// Prompt tokens of each usage record, in order.
    pub prompt_tokens: Vec<u64>,
    /// Prompt tokens in all.
    pub prompt_tokens_total: u64,
    /// Completion tokens in all.
    pub completion_tokens_total: u64,
    /// Each usage record (node, calls, tokens).
    pub requests: Vec<Request>,
    /// Tool calls in all.
    pub tool_calls: u64,
    /// Failed tool calls per error code.
    pub tool_errors: BTreeMap<String, u64>,
    /// Phases of the multi-agent builder that ended in error (`coordination_log`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_errors: Vec<String>,
    /// The graph's last answer (at most 2,000 characters).
    #[serde(default)]
    pub answer: String,
    /// The workflow at the end (or at the last checkpoint before a cancel).
    pub workflow: Value,
    /// Where `workflow` comes from when it is not the root graph's state: the namespace of the
    /// subgraph a cut run was in (its last written workflow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_from: Option<String>,
    /// Every score.
    pub scores: Scores,
}

/// The longest answer a row keeps.
const ANSWER_CHARS: usize = 2000;

impl Row {
    /// The row for a run and its scores.
    pub fn new(
        case: &str,
        set: &str,
        graph: &str,
        model: &str,
        run: &CaseRun,
        scores: Scores,
    ) -> Self {
        let m = &run.meter;
        Row {
            case: case.to_string(),
            set: set.to_string(),
            graph: graph.to_string(),
            model: model.to_string(),
            status: run.status,
            error: run.error.clone(),
            error_code: run.error_code.clone(),
            wall_ms: u64::try_from(run.wall.as_millis()).unwrap_or(u64::MAX),
            model_requests: m.model_requests(),
            prompt_tokens: m.requests.iter().map(|r| r.prompt_tokens).collect(),
            prompt_tokens_total: m.prompt_tokens(),
            completion_tokens_total: m.completion_tokens(),
            requests: m.requests.clone(),
            tool_calls: m.tool_calls,
            tool_errors: m.tool_errors.clone(),
            phase_errors: phase_errors(&run.values),
            answer: answer(&run.values),
            workflow: workflow_of(&run.values),
            workflow_from: run.workflow_from.clone(),
            scores,
        }
    }

    /// Prompt and completion tokens in all.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens_total + self.completion_tokens_total
    }

    /// The row as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        // A row is plain data (strings, numbers, maps with string keys): it always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The workflow in a builder state (`{nodes: [], connections: {}}` when there is none).
pub fn workflow_of(values: &Value) -> Value {
    match agentgraph_n8n::workflow_of(values) {
        Value::Null => serde_json::json!({"nodes": [], "connections": {}}),
        wf => wf.clone(),
    }
}

fn phase_errors(values: &Value) -> Vec<String> {
    values["coordination_log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["status"] == "error")
        .filter_map(|e| e["phase"].as_str().map(str::to_string))
        .collect()
}

/// The last AI message's text (at most 2,000 characters).
pub fn answer(values: &Value) -> String {
    let last_ai = values["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["type"] == "ai");
    let text = match last_ai.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    text.chars().take(ANSWER_CHARS).collect()
}

/// Reads a results file (one row per line; blank lines skipped).
pub fn read_rows(path: &Path) -> Result<Vec<Row>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    parse_rows(&text, &path.display().to_string())
}

/// Parses rows; `file` names the text in errors.
pub fn parse_rows(text: &str, file: &str) -> Result<Vec<Row>, EvalError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| EvalError::BadLine {
                file: file.to_string(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}
