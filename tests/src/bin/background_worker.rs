//! The background-task crash worker: the orchestrator of `agentgraph_e2e::background` on a
//! sled store, its `work` calls and model calls logged to a file (line by line, synced).
//!
//! ```text
//! background-worker start  --db DIR --log FILE   turn 1 starts tasks `a`, `b` and `c`; the
//!                                                second `work` call of `a` and `b` never ends;
//!                                                prints `ready` once `c` finished and both
//!                                                others are in it, then waits to be killed
//! background-worker resume --db DIR --log FILE   turn 2 (`status?`) resumes them; once all
//!                                                are over, turn 3 (`status?`); prints one JSON
//!                                                line: both turns' answers and the task list
//! ```
//!
//! Exit status: 0 on success, 2 on usage errors, 1 on run errors.

use agentgraph_agents::orchestration::background::{registry, BACKGROUND_TASKS};
use agentgraph_e2e::background::{last_text, orchestrator, say, Brain, Log, Work};
use agentgraph_e2e::flag;
use agentgraph_runtime::{RunConfig, SledCheckpointer};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The orchestrator's thread.
const THREAD: &str = "bg-thread";
const USAGE: &str = "usage: background-worker start|resume --db DIR --log FILE";

fn say_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(db), Some(log)) = (
        args.first().map(String::as_str),
        flag(&args, "--db"),
        flag(&args, "--log"),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if !matches!(mode, "start" | "resume") {
        eprintln!("unknown mode `{mode}`\n{USAGE}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(work(mode, db, PathBuf::from(log))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("background-worker {mode}: {e}");
            ExitCode::from(1)
        }
    }
}

async fn work(mode: &str, db: &str, log: PathBuf) -> Result<(), String> {
    let log = Log::to_file(log);
    let tool = Work::new(log.clone());
    let cp = Arc::new(SledCheckpointer::open(db).map_err(|e| e.to_string())?);
    let graph = orchestrator(Brain::new(log), tool.clone(), cp);
    if mode == "start" {
        tool.hold("a", 2);
        tool.hold("b", 2);
        // `c` finishes after the turn: the thread's task list still says it runs.
        tool.hold("c", 1);
        graph
            .invoke(say("start a b c", "h1"), RunConfig::thread(THREAD))
            .await
            .map_err(|e| e.to_string())?;
        tool.release("c", 1);
        registry()
            .wait(THREAD, "c")
            .await
            .ok_or("task c is not known")?;
        tool.reached("work a 2", 1).await;
        tool.reached("work b 2", 1).await;
        let listed = graph
            .get_state(THREAD, None)
            .await
            .map_err(|e| e.to_string())?
            .map(|s| s.values[BACKGROUND_TASKS]["c"]["state"].clone());
        say_line(&format!("c is listed as {}", listed.unwrap_or_default()));
        say_line("ready");
        std::future::pending::<()>().await;
        return Ok(());
    }
    let second = graph
        .invoke(say("status?", "h2"), RunConfig::thread(THREAD))
        .await
        .map_err(|e| e.to_string())?;
    for id in ["a", "b", "c"] {
        registry()
            .wait(THREAD, id)
            .await
            .ok_or(format!("task {id} was not resumed in this process"))?;
    }
    let third = graph
        .invoke(say("status?", "h3"), RunConfig::thread(THREAD))
        .await
        .map_err(|e| e.to_string())?;
    say_line(
        &json!({
            "second": last_text(&second.values),
            "third": last_text(&third.values),
            "tasks": third.values[BACKGROUND_TASKS],
        })
        .to_string(),
    );
    Ok(())
}
