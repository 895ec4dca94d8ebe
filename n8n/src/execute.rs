//! Running a workflow in n8n to see what it does: `agentgraph n8n run` and the tests.
//!
//! n8n 1.123's public API cannot start an execution, so a run goes through a webhook: the
//! workflow is imported as a temporary copy whose trigger answers on a fresh webhook path,
//! the copy is activated, the webhook called with the input, and the execution's data read
//! back; the copy is deleted afterwards. Which trigger is used:
//! - a **Webhook** node: kept, on a fresh path (its method and response mode kept, except that
//!   "respond immediately" becomes "when the last node finishes", so the call waits);
//! - a **Manual** or **Execute Workflow** trigger: replaced by a Code node of the same name
//!   that passes the input on as its items, fed by a webhook (so `$('Trigger')…` expressions
//!   and connections still hold).
//!
//! Other triggers (schedules, app events) cannot be started from outside: such a workflow is
//! refused with [`ExecuteError::NoRunnableTrigger`].

use crate::client::{ClientError, ExecutionQuery, N8nClient};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WEBHOOK: &str = "n8n-nodes-base.webhook";
const MANUAL_TRIGGERS: [&str; 2] = [
    "n8n-nodes-base.manualTrigger",
    "n8n-nodes-base.executeWorkflowTrigger",
];
/// The name of the webhook that feeds a replaced Manual trigger.
pub const FEEDER: &str = "agentgraph run input";

/// Why a workflow could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// n8n refused the workflow, failed, or could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// No Webhook, Manual or Execute Workflow trigger to start it with.
    #[error("the workflow has no trigger that can be started from outside ({found}): add a Webhook or a Manual trigger to run it")]
    NoRunnableTrigger {
        /// The triggers it has, or "no trigger".
        found: String,
    },
    /// The webhook answered but no execution was recorded in time.
    #[error("n8n recorded no execution of the workflow within {secs} s (webhook answered {status}: {answer})")]
    NoExecution {
        /// How long we waited.
        secs: u64,
        /// The webhook's status.
        status: u16,
        /// The webhook's answer.
        answer: String,
    },
}

/// One node's outcome in an execution.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRun {
    /// The node's name.
    pub name: String,
    /// `success` or `error` (n8n's `executionStatus`).
    pub status: String,
    /// The `json` of each item on each main output (output index, items).
    pub outputs: Vec<Vec<Value>>,
    /// The node's error message, if it failed.
    pub error: Option<String>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// n8n's execution id.
    pub execution_id: String,
    /// n8n's execution status: `success`, `error`, `crashed`, …
    pub status: String,
    /// The nodes that ran, in order (the feeder webhook left out).
    pub nodes: Vec<NodeRun>,
    /// The workflow-level error message, if any.
    pub error: Option<String>,
    /// The webhook's HTTP status and answer.
    pub response: (u16, Value),
}

impl RunReport {
    /// Whether the execution succeeded.
    pub fn succeeded(&self) -> bool {
        self.status == "success"
    }

    /// The items the node `name` output on its first main output.
    pub fn items_of(&self, name: &str) -> Option<&[Value]> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .and_then(|n| n.outputs.first())
            .map(Vec::as_slice)
    }
}

/// The temporary copy to import and the webhook to call, or why there is none.
pub fn runnable_copy(workflow: &Value, path: &str) -> Result<(Value, String), ExecuteError> {
    let mut copy = workflow.clone();
    let name = workflow["name"].as_str().unwrap_or("workflow");
    copy["name"] = json!(format!("[agentgraph run] {name}"));
    let nodes = copy["nodes"]
        .as_array_mut()
        .ok_or_else(|| ExecuteError::NoRunnableTrigger {
            found: "no nodes".into(),
        })?;
    let enabled = |n: &Value| !n["disabled"].as_bool().unwrap_or(false);
    if let Some(hook) = nodes
        .iter_mut()
        .find(|n| n["type"] == WEBHOOK && enabled(n))
    {
        let method = hook["parameters"]["httpMethod"]
            .as_str()
            .unwrap_or("GET")
            .to_string();
        hook["parameters"]["path"] = json!(path);
        hook["webhookId"] = json!(path);
        if hook["parameters"]["responseMode"]
            .as_str()
            .unwrap_or("onReceived")
            == "onReceived"
        {
            hook["parameters"]["responseMode"] = json!("lastNode");
        }
        return Ok((copy, method));
    }
    let Some(i) = nodes.iter().position(|n| {
        MANUAL_TRIGGERS.contains(&n["type"].as_str().unwrap_or_default()) && enabled(n)
    }) else {
        let found: Vec<String> = nodes
            .iter()
            .filter_map(|n| n["type"].as_str())
            .filter(|t| t.to_ascii_lowercase().contains("trigger"))
            .map(str::to_string)
            .collect();
        return Err(ExecuteError::NoRunnableTrigger {
            found: if found.is_empty() {
                "no trigger".into()
            } else {
                found.join(", ")
            },
        });
    };
    let trigger = nodes[i].clone();
    let (x, y) = (
        trigger["position"][0].as_f64().unwrap_or(0.0),
        trigger["position"][1].as_f64().unwrap_or(0.0),
    );
    nodes[i] = json!({
        "name": trigger["name"],
        "type": "n8n-nodes-base.code",
        "typeVersion": 2,
        "position": [x, y],
        "parameters": {
            "jsCode": "return $input.all().map((item) => {\n  const body = item.json.body;\n  return { json: body && typeof body === 'object' && !Array.isArray(body) ? body : { input: body } };\n});"
        }
    });
    nodes.push(json!({
        "name": FEEDER,
        "type": WEBHOOK,
        "typeVersion": 2,
        "webhookId": path,
        "position": [x - 220.0, y],
        "parameters": {"path": path, "httpMethod": "POST", "responseMode": "lastNode", "options": {}}
    }));
    let trigger_name = trigger["name"].as_str().unwrap_or_default().to_string();
    if !copy["connections"].is_object() {
        copy["connections"] = json!({});
    }
    copy["connections"][FEEDER] =
        json!({"main": [[{"node": trigger_name, "type": "main", "index": 0}]]});
    Ok((copy, "POST".into()))
}

/// Options of [`run_workflow`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How long to wait for the execution to be recorded.
    pub wait: Duration,
    /// Keep the temporary copy in n8n (for inspection) instead of deleting it.
    pub keep: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            wait: Duration::from_secs(60),
            keep: false,
        }
    }
}

/// Imports `workflow` as a temporary copy, runs it with `input` and reports each node.
pub async fn run_workflow(
    client: &N8nClient,
    workflow: &Value,
    input: &Value,
    options: &RunOptions,
) -> Result<RunReport, ExecuteError> {
    let path = format!("agentgraph-run-{}", uuid_like());
    let (copy, method) = runnable_copy(workflow, &path)?;
    let created = client.create_workflow(&copy).await?;
    let id = created["id"].as_str().unwrap_or_default().to_string();
    let result = run_created(client, &id, &path, &method, input, options).await;
    if !options.keep && !id.is_empty() {
        // Best effort: a failed clean-up must not hide the run's result.
        let _ = client.deactivate_workflow(&id).await;
        if let Err(e) = client.delete_workflow(&id).await {
            tracing::warn!("could not delete the temporary workflow {id}: {e}");
        }
    }
    result
}

async fn run_created(
    client: &N8nClient,
    id: &str,
    path: &str,
    method: &str,
    input: &Value,
    options: &RunOptions,
) -> Result<RunReport, ExecuteError> {
    client.activate_workflow(id).await?;
    let response = client.call_webhook(method, path, input).await?;
    let started = Instant::now();
    let query = ExecutionQuery {
        workflow_id: Some(id.to_string()),
        include_data: true,
        limit: Some(5),
        ..Default::default()
    };
    loop {
        let executions = client.list_executions(&query).await?;
        if let Some(e) = executions
            .iter()
            .find(|e| e["finished"].as_bool() == Some(true) || !e["stoppedAt"].is_null())
        {
            return Ok(report(e, response));
        }
        if started.elapsed() > options.wait {
            return Err(ExecuteError::NoExecution {
                secs: options.wait.as_secs(),
                status: response.0,
                answer: response.1.to_string().chars().take(300).collect(),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The per-node outcome of an execution (as the public API returns it with its data).
pub fn report(execution: &Value, response: (u16, Value)) -> RunReport {
    let result = &execution["data"]["resultData"];
    let mut nodes: Vec<(u64, NodeRun)> = Vec::new();
    if let Some(run_data) = result["runData"].as_object() {
        for (name, runs) in run_data {
            if name == FEEDER {
                continue;
            }
            let Some(last) = runs.as_array().and_then(|r| r.last()) else {
                continue;
            };
            let outputs = last["data"]["main"]
                .as_array()
                .map(|outs| {
                    outs.iter()
                        .map(|items| {
                            items
                                .as_array()
                                .map(|items| items.iter().map(|i| i["json"].clone()).collect())
                                .unwrap_or_default()
                        })
                        .collect()
                })
                .unwrap_or_default();
            let error = last["error"]["message"].as_str().map(str::to_string);
            let status = last["executionStatus"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| if error.is_some() { "error" } else { "success" }.into());
            let order = last["executionIndex"]
                .as_u64()
                .or_else(|| last["startTime"].as_u64())
                .unwrap_or(u64::MAX);
            nodes.push((
                order,
                NodeRun {
                    name: name.clone(),
                    status,
                    outputs,
                    error,
                },
            ));
        }
    }
    nodes.sort_by_key(|(order, _)| *order);
    RunReport {
        execution_id: execution["id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| execution["id"].to_string()),
        status: execution["status"]
            .as_str()
            .unwrap_or("unknown")
            .to_string(),
        nodes: nodes.into_iter().map(|(_, n)| n).collect(),
        error: result["error"]["message"].as_str().map(str::to_string),
        response,
    }
}

/// A fresh, unguessable-enough path segment (no uuid dependency needed here).
fn uuid_like() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_trigger_becomes_a_code_node_fed_by_a_webhook() {
        let wf = json!({"name": "W", "nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [200, 0], "parameters": {}}
        ], "connections": {"Start": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}});
        let (copy, method) = runnable_copy(&wf, "p1").unwrap();
        assert_eq!(method, "POST");
        assert_eq!(copy["name"], "[agentgraph run] W");
        assert_eq!(copy["nodes"][0]["name"], "Start");
        assert_eq!(copy["nodes"][0]["type"], "n8n-nodes-base.code");
        assert_eq!(copy["nodes"][2]["parameters"]["path"], "p1");
        assert_eq!(copy["connections"][FEEDER]["main"][0][0]["node"], "Start");
        assert_eq!(copy["connections"]["Start"], wf["connections"]["Start"]);
    }

    #[test]
    fn a_webhook_keeps_its_method_on_a_fresh_path_and_waits() {
        let wf = json!({"nodes": [{"name": "Hook", "type": WEBHOOK, "parameters": {"path": "orders", "httpMethod": "PUT"}}]});
        let (copy, method) = runnable_copy(&wf, "p2").unwrap();
        assert_eq!(method, "PUT");
        assert_eq!(copy["nodes"][0]["parameters"]["path"], "p2");
        assert_eq!(copy["nodes"][0]["parameters"]["responseMode"], "lastNode");
    }

    #[test]
    fn a_schedule_cannot_be_started() {
        let wf =
            json!({"nodes": [{"name": "Every day", "type": "n8n-nodes-base.scheduleTrigger"}]});
        let e = runnable_copy(&wf, "p").unwrap_err();
        assert!(e.to_string().contains("scheduleTrigger"), "{e}");
    }
}
