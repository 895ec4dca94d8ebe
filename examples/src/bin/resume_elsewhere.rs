//! Resuming a thread from another process: one process starts a run that stops at a
//! human-approval interrupt (its state on sled), exits, and a second process answers it.
//!
//! ```sh
//! cargo run -p agentgraph-examples --bin resume_elsewhere            # runs both steps
//! cargo run -p agentgraph-examples --bin resume_elsewhere -- start DB
//! cargo run -p agentgraph-examples --bin resume_elsewhere -- resume DB yes
//! ```

use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{CompiledGraph, Input, RunConfig, RunStatus, SledCheckpointer};
use serde_json::json;
use std::sync::Arc;

const THREAD: &str = "approval-1";

fn graph(db: &str) -> Result<CompiledGraph, Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../graphs/examples/approval.ag"
    );
    let graph = Project::load(path)?
        .compile(&Registry::default())
        .map_err(|d| format!("{} diagnostic(s): {}", d.len(), d[0].message))?;
    Ok(graph.with_checkpointer(Arc::new(SledCheckpointer::open(db)?)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["start", db] => {
            let out = graph(db)?
                .invoke(
                    Input::values(json!({"draft": "Hello, world"})),
                    RunConfig::thread(THREAD),
                )
                .await?;
            match out.status {
                RunStatus::Interrupted { interrupts, .. } => {
                    for i in interrupts {
                        println!("[start] waiting for a human: {}", i.value);
                    }
                }
                other => println!("[start] ended without a question: {other:?}"),
            }
        }
        ["resume", db, answer] => {
            let out = graph(db)?
                .invoke(Input::resume(json!(answer)), RunConfig::thread(THREAD))
                .await?;
            println!("[resume] published: {}", out.values["published"]);
        }
        [] => {
            // Both steps, each in its own process, on one sled folder.
            let dir =
                std::env::temp_dir().join(format!("agentgraph-resume-{}", std::process::id()));
            let db = dir.display().to_string();
            let me = std::env::current_exe()?;
            for step in [vec!["start", &db], vec!["resume", &db, "yes"]] {
                let status = std::process::Command::new(&me).args(&step).status()?;
                if !status.success() {
                    return Err(format!("step {step:?} failed: {status}").into());
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        _ => return Err("usage: resume_elsewhere [start DB | resume DB ANSWER]".into()),
    }
    Ok(())
}
