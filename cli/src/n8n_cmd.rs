//! `agentgraph n8n …`: working with a running n8n (`N8N_API_URL`, `N8N_API_KEY`).
//!
//! `agentgraph n8n run FILE|--thread ID [--input JSON]` imports a workflow as a temporary copy,
//! runs it through a webhook (see `agentgraph_n8n::execute`) and prints each node's result or
//! error. Exit codes: 0 the execution succeeded; 1 it failed (a node failed, or n8n failed or
//! could not be reached); 2 n8n rejected the workflow, or bad usage (no runnable trigger, no
//! address or key, a bad file).

use crate::exit;
use crate::graph::Ctx;
use agentgraph_n8n::client::{ClientError, N8nClient};
use agentgraph_n8n::execute::{run_workflow, ExecuteError, RunOptions, RunReport};
use agentgraph_n8n::{builder_graph, workflow_of};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The `agentgraph n8n` subcommands.
#[derive(clap::Subcommand)]
pub enum N8nCmd {
    /// Run a workflow in n8n and print each node's result: a workflow file, or the workflow
    /// of a builder thread. Its Webhook, Manual or Execute Workflow trigger starts it.
    Run {
        /// The workflow JSON file.
        #[arg(required_unless_present = "thread", conflicts_with = "thread")]
        file: Option<PathBuf>,
        /// Run the workflow of this builder thread (in --db).
        #[arg(long, value_parser = crate::graph::thread_id)]
        thread: Option<String>,
        /// The builder graph of the thread (`single`, `multi` or a file).
        #[arg(long, default_value = "single")]
        graph: String,
        /// The input: the webhook's body, or the items a Manual trigger passes on (JSON).
        #[arg(long, default_value = "{}")]
        input: String,
        /// Keep the temporary copy in n8n instead of deleting it.
        #[arg(long)]
        keep: bool,
        /// Seconds to wait for the execution.
        #[arg(long, default_value_t = 60)]
        wait: u64,
        /// The instance's address (default: $N8N_API_URL).
        #[arg(long)]
        n8n_url: Option<String>,
    },
}

/// `agentgraph n8n …`.
pub async fn n8n(ctx: &Ctx, cmd: N8nCmd) -> u8 {
    match cmd {
        N8nCmd::Run {
            file,
            thread,
            graph,
            input,
            keep,
            wait,
            n8n_url,
        } => {
            let workflow = match (file, thread) {
                (Some(file), _) => read_file(&file),
                (None, Some(thread)) => thread_workflow(ctx, &graph, &thread).await,
                (None, None) => Err("give a workflow file or --thread".into()),
            };
            let workflow = match workflow {
                Ok(w) => w,
                Err(e) => return crate::graph::fail(e, exit::USAGE),
            };
            let input: Value = match serde_json::from_str(&input) {
                Ok(v) => v,
                Err(e) => {
                    return crate::graph::fail(format!("--input is not JSON: {e}"), exit::USAGE)
                }
            };
            let client = match N8nClient::from_env_or(n8n_url.as_deref(), None) {
                Ok(c) => c,
                Err(e) => return crate::graph::fail(e, exit::USAGE),
            };
            let options = RunOptions {
                wait: Duration::from_secs(wait),
                keep,
            };
            match run_workflow(&client, &workflow, &input, &options).await {
                Ok(report) => print_report(ctx, &report),
                Err(e) => {
                    let code = error_code(&e);
                    crate::graph::fail(e, code)
                }
            }
        }
    }
}

fn read_file(file: &std::path::Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    if !v["nodes"].is_array() {
        return Err(format!(
            "{} is not an n8n workflow (no nodes)",
            file.display()
        ));
    }
    Ok(v)
}

async fn thread_workflow(ctx: &Ctx, graph: &str, thread: &str) -> Result<Value, String> {
    let path = builder_graph(graph)?;
    if !ctx.db.is_dir() {
        return Err(format!("no store at {} (pass --db)", ctx.db.display()));
    }
    agentgraph_dsl::agents::defer_model_errors();
    let graph = crate::graph::load_with_store(ctx, &path).map_err(|_| "cannot load the graph")?;
    let state = graph
        .get_state(thread, None)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("thread {thread:?} has no checkpoint"))?;
    let wf = workflow_of(&state.values).clone();
    if wf["nodes"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("thread {thread:?} has no workflow yet"));
    }
    Ok(wf)
}

/// Rejected or unusable: 2; anything that went wrong while running: 1.
fn error_code(e: &ExecuteError) -> u8 {
    match e {
        ExecuteError::NoRunnableTrigger { .. } => exit::USAGE,
        ExecuteError::NoExecution { .. } => exit::FAILED,
        ExecuteError::Client(c) => match c {
            ClientError::Config(_)
            | ClientError::Unauthorized { .. }
            | ClientError::Forbidden { .. }
            | ClientError::NotFound { .. }
            | ClientError::Rejected { .. } => exit::USAGE,
            _ => exit::FAILED,
        },
    }
}

fn print_report(ctx: &Ctx, report: &RunReport) -> u8 {
    if ctx.json {
        let nodes: Vec<Value> = report
            .nodes
            .iter()
            .map(|n| json!({"name": n.name, "status": n.status, "outputs": n.outputs, "error": n.error}))
            .collect();
        println!(
            "{}",
            json!({"execution": report.execution_id, "status": report.status,
                   "error": report.error, "nodes": nodes,
                   "response": {"status": report.response.0, "body": report.response.1}})
        );
    } else {
        println!("execution {}: {}", report.execution_id, report.status);
        for n in &report.nodes {
            match &n.error {
                Some(e) => println!("  ✗ {}: {e}", n.name),
                None => {
                    let items: usize = n.outputs.iter().map(Vec::len).sum();
                    println!(
                        "  ✓ {} ({items} item{})",
                        n.name,
                        if items == 1 { "" } else { "s" }
                    );
                    for (i, out) in n.outputs.iter().enumerate() {
                        for item in out.iter().take(3) {
                            let label = if n.outputs.len() > 1 {
                                format!("[{i}] ")
                            } else {
                                String::new()
                            };
                            println!("      {label}{item}");
                        }
                        if out.len() > 3 {
                            println!("      … {} more", out.len() - 3);
                        }
                    }
                }
            }
        }
        if let Some(e) = &report.error {
            println!("  error: {e}");
        }
    }
    if report.succeeded() {
        exit::DONE
    } else {
        exit::FAILED
    }
}
