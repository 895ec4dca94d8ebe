//! `list_executions` and `get_execution`: a summary per node, with a pointer to the items.

use super::{arg, client, cut, tool_error};
use crate::client::ExecutionQuery;
use crate::execute::report;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

const STATUSES: [&str; 5] = ["success", "error", "waiting", "running", "canceled"];

/// Lists executions.
pub struct ListExecutionsTool;

#[async_trait::async_trait]
impl Tool for ListExecutionsTool {
    fn name(&self) -> &str {
        "list_executions"
    }
    fn description(&self) -> &str {
        "List recent executions (newest first): id, workflow, status, start and end. Filter by \
         workflow id and status (success, error, waiting, running, canceled)."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "workflowId": {"type": "string"},
            "status": {"type": "string", "enum": STATUSES},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100}
        }, "additionalProperties": false})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = ExecutionQuery {
            workflow_id: args["workflowId"].as_str().map(str::to_owned),
            status: args["status"].as_str().map(str::to_owned),
            include_data: false,
            limit: Some(args["limit"].as_u64().unwrap_or(20).min(100) as u32),
        };
        let list = client()?
            .list_executions(&query)
            .await
            .map_err(tool_error)?;
        let shown: Vec<Value> = list
            .iter()
            .map(|e| json!({"id": e["id"], "workflowId": e["workflowId"], "status": e["status"],
                            "mode": e["mode"], "startedAt": e["startedAt"], "stoppedAt": e["stoppedAt"]}))
            .collect();
        Ok(ToolOutput {
            content: json!({"executions": shown}),
            writes: Vec::new(),
        })
    }
}

/// Reads one execution: its status and a summary per node; `node` gives that node's items.
pub struct GetExecutionTool;

#[async_trait::async_trait]
impl Tool for GetExecutionTool {
    fn name(&self) -> &str {
        "get_execution"
    }
    fn description(&self) -> &str {
        "Read one execution: status, error, and per node its status, item count and first \
         item. Give `node` to see that node's items (up to `limit`)."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "executionId": {"type": "string"},
            "node": {"type": "string", "description": "A node name: return its items."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50}
        }, "required": ["executionId"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = arg(&args, "executionId")?;
        let exec = client()?
            .get_execution(id, true)
            .await
            .map_err(tool_error)?;
        let r = report(&exec, (0, Value::Null));
        let content = match args["node"].as_str() {
            Some(node) => {
                let Some(n) = r.nodes.iter().find(|n| n.name == node) else {
                    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
                    return Err(ToolError::new(
                        "NOT_FOUND",
                        format!(
                            "node `{node}` did not run in execution {id}; nodes that ran: {}",
                            names.join(", ")
                        ),
                    ));
                };
                let limit = args["limit"].as_u64().unwrap_or(10) as usize;
                let items: Vec<Value> = n
                    .outputs
                    .iter()
                    .flatten()
                    .take(limit)
                    .map(|i| cut(i, 500))
                    .collect();
                json!({"executionId": id, "node": node, "status": n.status, "error": n.error,
                       "items": items, "total": n.outputs.iter().map(Vec::len).sum::<usize>()})
            }
            None => {
                let nodes: Vec<Value> = r
                    .nodes
                    .iter()
                    .map(|n| {
                        json!({
                            "name": n.name, "status": n.status, "error": n.error,
                            "items": n.outputs.iter().map(Vec::len).sum::<usize>(),
                            "first": n.outputs.iter().flatten().next().map(|i| cut(i, 200)),
                        })
                    })
                    .collect();
                json!({"executionId": id, "workflowId": exec["workflowId"], "status": r.status,
                       "error": r.error, "nodes": nodes,
                       "more": "call get_execution with `node` to see a node's items"})
            }
        };
        Ok(ToolOutput {
            content,
            writes: Vec::new(),
        })
    }
}
