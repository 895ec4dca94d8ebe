//! The scores that need a running n8n: does it accept the workflow (create, then delete), and
//! does an offline-runnable case's workflow execute with the expected output.

use crate::cases::Offline;
use crate::score::{check_expectations, Item};
use agentgraph_n8n::client::N8nClient;
use agentgraph_n8n::execute::{run_workflow, ExecuteError, RunOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

/// What n8n made of a workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct N8nScore {
    /// n8n created the workflow (`false` for an empty workflow, which is not sent; `None`: n8n
    /// could not be asked, e.g. unreachable).
    pub accepts: Option<bool>,
    /// Why it did not, or why it could not be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_error: Option<String>,
    /// The execution succeeded with the expected output (`None`: not an offline case, not
    /// accepted, or n8n could not be asked).
    pub executes: Option<bool>,
    /// The execution, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
}

/// One execution of an offline-runnable case's workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// n8n's execution status (`success`, `error`, …), or `not_run`.
    pub status: String,
    /// The error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each expectation and whether the output met it.
    pub expectations: Vec<Item>,
}

/// How long an execution may take to be recorded.
const EXECUTION_WAIT: Duration = Duration::from_secs(60);

/// Asks n8n about `workflow`: creates it (and deletes it again); for an `offline` case also
/// runs it through a temporary webhook copy and checks the output.
pub async fn check_in_n8n(
    client: &N8nClient,
    workflow: &Value,
    offline: Option<&Offline>,
) -> N8nScore {
    // Nothing to send: an empty workflow counts as refused (and not run), so the rates stay
    // over every case n8n could be asked about.
    if !agentgraph_n8n::deploy::has_nodes(workflow) {
        return N8nScore {
            accepts: Some(false),
            accept_error: Some("the workflow has no nodes: nothing was sent".into()),
            executes: offline.map(|_| false),
            execution: None,
        };
    }
    let mut score = match client.create_workflow(workflow).await {
        Ok(created) => {
            if let Some(id) = created["id"].as_str() {
                let _ = client.delete_workflow(id).await;
            }
            N8nScore {
                accepts: Some(true),
                ..N8nScore::default()
            }
        }
        Err(e) => {
            return N8nScore {
                accepts: e.is_rejection().then_some(false),
                accept_error: Some(e.to_string()),
                ..N8nScore::default()
            }
        }
    };
    if let Some(offline) = offline {
        let (executes, execution) = execute(client, workflow, offline).await;
        score.executes = executes;
        score.execution = Some(execution);
    }
    score
}

async fn execute(
    client: &N8nClient,
    workflow: &Value,
    offline: &Offline,
) -> (Option<bool>, Execution) {
    let options = RunOptions {
        wait: EXECUTION_WAIT,
        keep: false,
    };
    let not_run = |error: String| Execution {
        status: "not_run".into(),
        error: Some(error),
        expectations: Vec::new(),
    };
    match run_workflow(client, workflow, &offline.input, &options).await {
        Ok(report) => {
            let triggers = trigger_names(workflow);
            let items: Vec<&Value> = report
                .nodes
                .iter()
                .filter(|n| !triggers.contains(n.name.as_str()))
                .flat_map(|n| n.outputs.iter().flatten())
                .collect();
            let expectations: Vec<Item> = check_expectations(&offline.expect, &items)
                .into_iter()
                .map(|(item, pass)| Item { item, pass })
                .collect();
            let error = report.error.clone().or_else(|| {
                report.nodes.iter().find_map(|n| {
                    n.error
                        .as_ref()
                        .map(|e| format!("node \"{}\": {e}", n.name))
                })
            });
            let ok = report.succeeded() && expectations.iter().all(|e| e.pass);
            let execution = Execution {
                status: report.status,
                error,
                expectations,
            };
            (Some(ok), execution)
        }
        // The workflow cannot be started from outside, or n8n refused to activate it: the
        // workflow's fault.
        Err(e @ ExecuteError::NoRunnableTrigger { .. }) => (Some(false), not_run(e.to_string())),
        Err(ExecuteError::Client(e)) if e.is_rejection() => (Some(false), not_run(e.to_string())),
        Err(e @ ExecuteError::NoExecution { .. }) => (Some(false), not_run(e.to_string())),
        Err(e @ ExecuteError::Client(_)) => (None, not_run(e.to_string())),
    }
}

/// The names of the workflow's trigger nodes (their output is the input, not a result).
fn trigger_names(workflow: &Value) -> HashSet<&str> {
    workflow["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| {
            let t = n["type"].as_str().unwrap_or_default();
            t.ends_with("Trigger") || t.ends_with(".webhook")
        })
        .filter_map(|n| n["name"].as_str())
        .collect()
}
