//! `list_workflows`, `get_workflow`, and the destructive `activate_workflow`,
//! `deactivate_workflow`, `delete_workflow` (each confirmed by the user first).

use super::{arg, client, cut, tool_error, workflow_by_key};
use crate::client::WorkflowQuery;
use agentgraph_agents::orchestration::{confirm, Confirmation};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

fn out(content: Value) -> ToolOutput {
    ToolOutput {
        content,
        writes: Vec::new(),
    }
}

/// One line per workflow: what a model needs to pick one.
fn brief(w: &Value) -> Value {
    let tags: Vec<&Value> = w["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| &t["name"])
        .collect();
    json!({
        "id": w["id"],
        "name": w["name"],
        "active": w["active"],
        "nodes": w["nodes"].as_array().map_or(0, Vec::len),
        "tags": tags,
        "updatedAt": w["updatedAt"],
    })
}

/// Lists the instance's workflows.
pub struct ListWorkflowsTool;

#[async_trait::async_trait]
impl Tool for ListWorkflowsTool {
    fn name(&self) -> &str {
        "list_workflows"
    }
    fn description(&self) -> &str {
        "List the workflows of the n8n instance: id, name, active, node count, tags. Filter by \
         exact name or active state."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Only the workflow(s) with this exact name."},
            "active": {"type": "boolean"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100}
        }, "additionalProperties": false})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = WorkflowQuery {
            active: args["active"].as_bool(),
            name: args["name"].as_str().map(str::to_owned),
            tags: Vec::new(),
        };
        let all = client()?.list_workflows(&query).await.map_err(tool_error)?;
        let limit = args["limit"].as_u64().unwrap_or(50) as usize;
        let shown: Vec<Value> = all.iter().take(limit).map(brief).collect();
        Ok(out(json!({"workflows": shown, "total": all.len()})))
    }
}

/// A workflow for a model: nodes with trimmed parameters, connections as `from -> to` lines.
pub(crate) fn trimmed_workflow(w: &Value) -> Value {
    let nodes: Vec<Value> = w["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            json!({
                "name": n["name"], "type": n["type"], "typeVersion": n["typeVersion"],
                "parameters": cut(&n["parameters"], 300),
                "credentials": n["credentials"].as_object().map(|c| c.keys().cloned().collect::<Vec<_>>()),
                "disabled": n.get("disabled"),
            })
        })
        .collect();
    let mut connections = Vec::new();
    for (from, kinds) in w["connections"].as_object().into_iter().flatten() {
        for (kind, outputs) in kinds.as_object().into_iter().flatten() {
            for (i, targets) in outputs.as_array().into_iter().flatten().enumerate() {
                for t in targets.as_array().into_iter().flatten() {
                    let to = t["node"].as_str().unwrap_or("?");
                    let port = if kind == "main" {
                        format!("[{i}]")
                    } else {
                        format!(" ({kind})")
                    };
                    connections.push(format!("{from}{port} -> {to}"));
                }
            }
        }
    }
    json!({"id": w["id"], "name": w["name"], "active": w["active"], "nodes": nodes,
           "connections": connections})
}

/// Reads one workflow.
pub struct GetWorkflowTool;

#[async_trait::async_trait]
impl Tool for GetWorkflowTool {
    fn name(&self) -> &str {
        "get_workflow"
    }
    fn description(&self) -> &str {
        "Read one workflow by id: its nodes (type, parameters shortened, credential types) and \
         connections."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"workflowId": {"type": "string"}},
               "required": ["workflowId"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = arg(&args, "workflowId")?;
        let w = workflow_by_key(&client()?, id).await?;
        Ok(out(trimmed_workflow(&w)))
    }
}

/// A destructive change to a workflow.
#[derive(Debug, Clone, Copy)]
pub enum Change {
    /// Activate (its triggers start listening).
    Activate,
    /// Deactivate (its triggers stop).
    Deactivate,
    /// Delete (cannot be undone).
    Delete,
}

/// `activate_workflow`, `deactivate_workflow` or `delete_workflow`: asks the user, then acts.
pub struct ChangeWorkflowTool(pub Change);

#[async_trait::async_trait]
impl Tool for ChangeWorkflowTool {
    fn name(&self) -> &str {
        match self.0 {
            Change::Activate => "activate_workflow",
            Change::Deactivate => "deactivate_workflow",
            Change::Delete => "delete_workflow",
        }
    }
    fn description(&self) -> &str {
        match self.0 {
            Change::Activate => {
                "Activate a workflow so its triggers run in production (the user confirms first)."
            }
            Change::Deactivate => {
                "Deactivate a workflow so its triggers stop (the user confirms first)."
            }
            Change::Delete => "Delete a workflow permanently (the user confirms first).",
        }
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"workflowId": {"type": "string"}},
               "required": ["workflowId"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = arg(&args, "workflowId")?;
        let client = client()?;
        let w = workflow_by_key(&client, key).await?;
        // The id n8n knows, also when the model gave the name.
        let id = w["id"].as_str().unwrap_or(key).to_string();
        let id = id.as_str();
        let name = w["name"].as_str().unwrap_or("").to_string();
        let active = w["active"].as_bool().unwrap_or(false);
        let (message, change) = match self.0 {
            Change::Activate if active => {
                return Ok(out(
                    json!({"unchanged": true, "note": format!("\"{name}\" is already active")}),
                ))
            }
            Change::Deactivate if !active => {
                return Ok(out(
                    json!({"unchanged": true, "note": format!("\"{name}\" is already inactive")}),
                ))
            }
            Change::Activate => (
                format!("Activate the workflow \"{name}\" ({id})?"),
                "active: false -> true; its triggers start running in production".to_string(),
            ),
            Change::Deactivate => (
                format!("Deactivate the workflow \"{name}\" ({id})?"),
                "active: true -> false; its triggers stop".to_string(),
            ),
            Change::Delete => (
                format!("Delete the workflow \"{name}\" ({id})? This cannot be undone."),
                format!(
                    "the workflow and its {} node(s) are deleted",
                    w["nodes"].as_array().map_or(0, Vec::len)
                ),
            ),
        };
        let what = Confirmation {
            action: self.name().to_string(),
            message,
            changes: vec![change],
            details: json!({"workflowId": id, "name": name, "active": active}),
        };
        if !confirm(ctx, self.name(), &what)? {
            return Ok(out(json!({
                "declined": true,
                "note": "The user declined; nothing was changed. Do not retry unless they ask."
            })));
        }
        let done = match self.0 {
            Change::Activate => client.activate_workflow(id).await,
            Change::Deactivate => client.deactivate_workflow(id).await,
            Change::Delete => client.delete_workflow(id).await,
        }
        .map_err(tool_error)?;
        Ok(out(json!({
            "done": self.name(),
            "workflowId": id,
            "name": name,
            "active": done.get("active").cloned().unwrap_or(Value::Null),
        })))
    }
}
