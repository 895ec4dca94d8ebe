//! Instance AI's domain tools: a running n8n's workflows, executions and credential needs,
//! over its public API (`N8N_API_URL` / `N8N_API_KEY`, read at each call). Outputs are trimmed
//! to what a model needs; large execution data is summarised with a pointer to fetch more.
//! Destructive actions (activate, deactivate, delete) ask the user first
//! ([`agentgraph_agents::orchestration::confirm`]); a denial changes nothing.
//!
//! `run_workflow` ([`crate::run_tool`]) runs a stored workflow when given `workflowId`;
//! `search_nodes` and `get_node_details` are the builder's catalogue tools. `build-workflow`
//! planned tasks run the builder graph ([`BuildWorkflowRunner`]).

mod build;
mod credentials;
mod executions;
mod fetch;
mod workflows;

pub use build::{BuildWorkflowRunner, BUILDER_GRAPH_ENV};
pub use credentials::WorkflowCredentialsTool;
pub use executions::{GetExecutionTool, ListExecutionsTool};
pub use fetch::FetchUrlTool;
pub use workflows::{Change, ChangeWorkflowTool, GetWorkflowTool, ListWorkflowsTool};

use crate::client::{ClientError, N8nClient, WorkflowQuery};
use agentgraph_agents::tools::{Tool, ToolError};
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::Value;
use std::sync::Arc;

/// The catalogue, loaded when first asked for.
pub type CatalogueFn = Arc<dyn Fn() -> Arc<Catalogue> + Send + Sync>;

/// The names of the domain tools besides `run_workflow`, `search_nodes` and
/// `get_node_details`.
pub const INSTANCE_TOOLS: [&str; 8] = [
    "list_workflows",
    "get_workflow",
    "list_executions",
    "get_execution",
    "activate_workflow",
    "deactivate_workflow",
    "delete_workflow",
    "workflow_credentials",
];

/// Every domain tool of this module.
pub fn tools(catalogue: CatalogueFn) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ListWorkflowsTool),
        Arc::new(GetWorkflowTool),
        Arc::new(ListExecutionsTool),
        Arc::new(GetExecutionTool),
        Arc::new(ChangeWorkflowTool(Change::Activate)),
        Arc::new(ChangeWorkflowTool(Change::Deactivate)),
        Arc::new(ChangeWorkflowTool(Change::Delete)),
        Arc::new(WorkflowCredentialsTool { catalogue }),
    ]
}

/// The instance's client, or an error saying how to configure it.
pub(crate) fn client() -> Result<N8nClient, ToolError> {
    N8nClient::from_env_or(None, None).map_err(|e| {
        ToolError::new(
            "N8N_NOT_CONFIGURED",
            format!("no n8n instance to talk to: {e}"),
        )
    })
}

/// A client error as an error the model can act on.
pub(crate) fn tool_error(e: ClientError) -> ToolError {
    match &e {
        ClientError::NotFound { what, id } => ToolError::new(
            "NOT_FOUND",
            format!(
                "there is no {what} with id `{id}`; list them first (list_workflows, \
                 list_executions) and use an id from the list"
            ),
        ),
        ClientError::Rejected { .. } => ToolError::new("N8N_REJECTED", e.to_string()),
        ClientError::Unauthorized { .. } | ClientError::Forbidden { .. } => {
            ToolError::new("N8N_FORBIDDEN", e.to_string())
        }
        _ => ToolError::new("N8N_UNAVAILABLE", e.to_string()),
    }
}

/// The workflow `key` names: the one with that id, or else (a model wrote the name where the id
/// goes, as a small local model did with `eval_hello` for "eval hello") the only workflow
/// whose name it is, case, `_`, `-` and spaces aside. Several of that name are an error that
/// lists their ids; none is the id's `NOT_FOUND`.
pub(crate) async fn workflow_by_key(client: &N8nClient, key: &str) -> Result<Value, ToolError> {
    let not_found = match client.get_workflow(key).await {
        Ok(w) => return Ok(w),
        Err(e @ ClientError::NotFound { .. }) => e,
        Err(e) => return Err(tool_error(e)),
    };
    let all = client
        .list_workflows(&WorkflowQuery::default())
        .await
        .map_err(tool_error)?;
    let wanted = loose(key);
    let hits: Vec<&str> = all
        .iter()
        .filter(|w| w["name"].as_str().is_some_and(|n| loose(n) == wanted))
        .filter_map(|w| w["id"].as_str())
        .collect();
    match hits.as_slice() {
        [id] => client.get_workflow(id).await.map_err(tool_error),
        [] => Err(tool_error(not_found)),
        ids => Err(ToolError::new(
            "AMBIGUOUS_WORKFLOW",
            format!(
                "`{key}` is not a workflow id, and {} workflows have that name (ids {}): use \
                 one of their ids",
                ids.len(),
                ids.join(", ")
            ),
        )),
    }
}

/// A name compared loosely: lower case, `_` and `-` as spaces, runs of spaces as one.
fn loose(s: &str) -> String {
    s.to_lowercase()
        .replace(['_', '-'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A required string argument.
pub(crate) fn arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ToolError::new(
                "INVALID_ARGUMENTS",
                format!("`{key}` must be a non-empty string"),
            )
        })
}

/// A value cut for a model: strings over `max` characters shortened, with the length said.
pub(crate) fn cut(v: &Value, max: usize) -> Value {
    match v {
        Value::String(s) if s.chars().count() > max => Value::String(format!(
            "{}… ({} characters)",
            s.chars().take(max).collect::<String>(),
            s.chars().count()
        )),
        Value::Array(a) => Value::Array(a.iter().map(|x| cut(x, max)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), cut(x, max))).collect())
        }
        other => other.clone(),
    }
}
