//! `run_workflow`: runs a workflow in n8n and reports each node's result — the thread's
//! current workflow (the builder checks what it built), or a stored one by `workflowId`
//! (Instance AI). Running has side effects (a webhook
//! call, whatever the nodes do), so every call first asks the user: it interrupts with a
//! confirmation request and runs only when resumed with an approval (`true`, `"yes"`, or
//! `{"approved": true}`); anything else is reported to the model as declined.
//!
//! The instance comes from `N8N_API_URL` / `N8N_API_KEY`, read at the call; without them the
//! tool answers with an error that says so. A graph opts in by listing `run_workflow` in an
//! `llm` node's tools (the shipped builder graphs do not, so they never stop to ask).

use crate::client::N8nClient;
use crate::execute::{run_workflow, ExecuteError, RunOptions, RunReport};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_std_tools::builder::state::current_workflow;
use serde_json::{json, Value};

/// The tool's name.
pub const RUN_WORKFLOW: &str = "run_workflow";

/// Runs the current workflow in n8n after the user confirms.
pub struct RunWorkflowTool;

fn approved(answer: &Value) -> bool {
    match answer {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "y" | "yes" | "ok" | "run" | "approve" | "approved"
        ),
        Value::Object(o) => o.get("approved").and_then(Value::as_bool).unwrap_or(false),
        _ => false,
    }
}

fn summary(report: &RunReport) -> String {
    let mut s = format!(
        "Execution {} finished with status {}.",
        report.execution_id, report.status
    );
    for n in &report.nodes {
        match &n.error {
            Some(e) => s.push_str(&format!("\n- {} failed: {e}", n.name)),
            None => {
                let items: Vec<&Value> = n.outputs.iter().flatten().take(3).collect();
                let count: usize = n.outputs.iter().map(Vec::len).sum();
                let shown = serde_json::to_string(&items).unwrap_or_default();
                let shown: String = shown.chars().take(400).collect();
                s.push_str(&format!("\n- {} ok, {count} item(s): {shown}", n.name));
            }
        }
    }
    if let Some(e) = &report.error {
        s.push_str(&format!("\nWorkflow error: {e}"));
    }
    s
}

#[async_trait::async_trait]
impl Tool for RunWorkflowTool {
    fn name(&self) -> &str {
        RUN_WORKFLOW
    }

    fn description(&self) -> &str {
        "Run a workflow once in the user's n8n (after the user confirms) and get each node's \
         output or error: the workflow with id `workflowId`, else the current (built) workflow. \
         It needs a Webhook, Manual or Execute Workflow trigger; `input` is the webhook's body \
         or the trigger's item."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "input": {"type": "object", "description": "The data the trigger receives (default {})."},
                "workflowId": {"type": "string", "description": "A stored workflow's id (from list_workflows); omit for the current workflow."}
            },
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let client = N8nClient::from_env_or(None, None).map_err(|e| {
            ToolError::new(
                "N8N_NOT_CONFIGURED",
                format!("cannot run the workflow: {e}"),
            )
        })?;
        let (wf, name) = match args.get("workflowId").and_then(Value::as_str) {
            Some(id) => {
                let wf = crate::instance::workflow_by_key(&client, id).await?;
                let name = wf["name"].as_str().unwrap_or_default().to_string();
                (wf, name)
            }
            None => {
                let workflow = current_workflow(ctx)?;
                if workflow.nodes.is_empty() {
                    return Err(ToolError::new(
                        "EMPTY_WORKFLOW",
                        "the workflow has no nodes yet: build it before running it",
                    ));
                }
                let wf = serde_json::to_value(&workflow).map_err(|e| {
                    ToolError::new(
                        "INVALID_WORKFLOW",
                        format!("the workflow cannot be sent: {e}"),
                    )
                })?;
                (wf, workflow.name.clone().unwrap_or_default())
            }
        };
        let input = args.get("input").cloned().unwrap_or_else(|| json!({}));
        let answer = ctx.interrupt(json!({
            "kind": "confirm",
            "action": RUN_WORKFLOW,
            "message": format!(
                "Run the workflow \"{name}\" once in n8n at {}? Its nodes will really run (they may send messages or change data). Answer yes to run.",
                client.base_url()
            ),
            "input": input,
        }))?;
        if !approved(&answer) {
            return Ok(ToolOutput::text(
                "The user declined to run the workflow. Do not run it again unless they ask.",
            ));
        }
        match run_workflow(&client, &wf, &input, &RunOptions::default()).await {
            Ok(report) => Ok(ToolOutput::text(summary(&report))),
            Err(ExecuteError::Client(e)) if e.is_rejection() => Err(ToolError::new(
                "N8N_REJECTED",
                format!("n8n rejected the workflow: {e}. Fix it and validate again."),
            )),
            Err(e @ ExecuteError::NoRunnableTrigger { .. }) => {
                Err(ToolError::new("NO_RUNNABLE_TRIGGER", e.to_string()))
            }
            Err(e) => Err(ToolError::new("N8N_RUN_FAILED", e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_yes_approves() {
        for yes in [
            json!(true),
            json!("yes"),
            json!(" Yes "),
            json!({"approved": true}),
        ] {
            assert!(approved(&yes), "{yes}");
        }
        for no in [
            json!(false),
            json!("no"),
            json!("maybe"),
            json!(null),
            json!({"approved": "yes"}),
        ] {
            assert!(!approved(&no), "{no}");
        }
    }
}
