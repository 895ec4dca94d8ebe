//! `build-workflow` planned tasks: the workflow builder graph runs as a child run of the plan's
//! task (own namespace, checkpointed, resumed inside it), then the workflow it built is created
//! in n8n, inactive, and its id reported to the orchestrator. The builder's own `usage`
//! channel (its model calls, as of its last finished step) goes to the plan's usage ledger,
//! so the orchestrator's thread counts them.
//!
//! The builder graph is `$AGENTGRAPH_BUILDER_GRAPH`, else `graphs/workflow-builder/single-agent.ag`
//! under the current folder; it is compiled against the product's registry on the first task
//! and uses its own model block.

use super::client;
use crate::builder::{builder_graph, workflow_summary};
use crate::N8n;
use agentgraph_agents::orchestration::{ChildUsage, PlannedTask, TaskRunner};
use agentgraph_agents::tools::{ToolContext, ToolError};
use agentgraph_dsl::Project;
use agentgraph_runtime::{CompiledGraph, Node, Subgraph};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The variable naming the builder graph that `build-workflow` tasks run.
pub const BUILDER_GRAPH_ENV: &str = "AGENTGRAPH_BUILDER_GRAPH";

/// Runs `build-workflow` tasks with the builder graph.
pub struct BuildWorkflowRunner {
    n8n: Arc<N8n>,
    graph: OnceLock<CompiledGraph>,
}

impl BuildWorkflowRunner {
    /// A runner compiling the builder against `n8n`'s registry when first needed.
    pub fn new(n8n: Arc<N8n>) -> Self {
        BuildWorkflowRunner {
            n8n,
            graph: OnceLock::new(),
        }
    }

    fn path() -> Result<PathBuf, ToolError> {
        match std::env::var(BUILDER_GRAPH_ENV) {
            Ok(p) if !p.trim().is_empty() => Ok(PathBuf::from(p)),
            _ => builder_graph("single").map_err(|e| {
                ToolError::new(
                    "BUILDER_NOT_FOUND",
                    format!("{e}; or set {BUILDER_GRAPH_ENV} to the builder graph's file"),
                )
            }),
        }
    }

    /// The compiled builder (compiled off the async workers: it may load the catalogue).
    async fn graph(&self) -> Result<CompiledGraph, ToolError> {
        if let Some(g) = self.graph.get() {
            return Ok(g.clone());
        }
        let path = Self::path()?;
        let n8n = self.n8n.clone();
        let compiled = tokio::task::spawn_blocking(move || -> Result<CompiledGraph, String> {
            let project = Project::load(&path).map_err(|e| e.to_string())?;
            project.compile(&n8n.registry()).map_err(|d| {
                d.iter()
                    .map(|x| project.render(x, false, 100))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        })
        .await
        .map_err(|e| ToolError::new("BUILDER_INVALID", e.to_string()))?
        .map_err(|e| ToolError::new("BUILDER_INVALID", format!("the builder graph: {e}")))?;
        Ok(self.graph.get_or_init(|| compiled).clone())
    }
}

fn last_ai_text(state: &Value) -> String {
    state["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["type"] == "ai")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[async_trait::async_trait]
impl TaskRunner for BuildWorkflowRunner {
    async fn run(
        &self,
        ctx: &ToolContext,
        key: &str,
        _task: &PlannedTask,
        input: &str,
    ) -> Result<String, ToolError> {
        let client = client()?;
        let input = input.to_string();
        let usage = ChildUsage::default();
        let seen = usage.clone();
        let sub = Subgraph::new(self.graph().await?)
            .map_in(move |_| {
                Ok(json!({"messages": [{"type": "human", "id": "task", "content": input}]}))
            })
            .map_out(move |state| {
                seen.keep(state);
                Ok(vec![
                    ("workflow".to_string(), state["workflow"].clone()),
                    ("answer".to_string(), json!(last_ai_text(state))),
                ])
            });
        let child = ctx.task().scoped(key);
        let ran = sub.run(child.clone()).await;
        usage.hand_over(ctx, &child, key);
        let update = match ran {
            Ok(u) => u,
            Err(e @ agentgraph_runtime::NodeError::Interrupted(_)) => return Err(e.into()),
            Err(e) => {
                return Err(ToolError::new(
                    "BUILD_FAILED",
                    format!("the workflow builder did not finish: {e}"),
                ))
            }
        };
        let get = |k: &str| {
            update
                .writes
                .iter()
                .find(|(w, _)| w == k)
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null)
        };
        let workflow = get("workflow");
        let nodes = workflow["nodes"].as_array().map_or(0, Vec::len);
        if nodes == 0 {
            return Err(ToolError::new(
                "BUILD_EMPTY",
                format!(
                    "the builder built no workflow; its answer: {}",
                    get("answer").as_str().unwrap_or("")
                ),
            ));
        }
        let created = client
            .create_workflow(&workflow)
            .await
            .map_err(super::tool_error)?;
        let id = created["id"].as_str().unwrap_or("?");
        Ok(format!(
            "Created in n8n as workflow {id} (inactive).\n{}",
            workflow_summary(&workflow)
        ))
    }
}
