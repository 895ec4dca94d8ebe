//! The crash-test worker: runs the crash graph (see the `agentgraph_e2e` crate docs) on a sled
//! store and prints `started step K NODE` (flushed) as each task starts.
//!
//! ```text
//! crash-worker run    --db DIR [--thread T] --steps N   [OPTIONS]   start a fresh thread
//! crash-worker resume --db DIR [--thread T] [--steps N] [OPTIONS]   continue the thread
//! crash-worker final  --db DIR [--thread T]                         print its state as JSON
//!
//! OPTIONS: --threads N                           N threads `T-0` … `T-{N-1}` at once on the
//!                                                one store (lines then end with the thread id)
//!          --sleep-us U                          per-task sleep (default 2000)
//!          --durability sync|async|exit          default sync
//!          --die before-flush:S|after-flush:S    SIGKILL itself at that storage boundary
//! ```
//!
//! `resume` continues from the newest checkpoint with `Input::Continue`; when the thread has no
//! checkpoint at all (killed before the first one was flushed) it starts fresh, which needs
//! `--steps`. The crash test uses `sync` durability; `async` and `exit` are there for negative
//! controls (they may lose completed steps by design). `--die` kills the process right after the
//! checkpoint of step S was written but before it was flushed, or right after it was flushed.
//! Exit status: 0 on success, 2 on usage errors, 1 on run errors.

use agentgraph_e2e::{crash_graph, flag, input, DieAt, DiePoint, StepHook, THREAD};
use agentgraph_runtime::{Checkpointer, Durability, Input, RunConfig, SledCheckpointer};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: crash-worker run|resume|final --db DIR [--thread T] [--steps N] \
                     [--threads N] [--sleep-us U] [--durability sync|async|exit] \
                     [--die before-flush:S|after-flush:S]";

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A failed write (the reader is gone) must not change what the graph does.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(db)) = (args.first().map(String::as_str), flag(&args, "--db")) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let thread = flag(&args, "--thread").unwrap_or(THREAD).to_string();
    let steps = match flag(&args, "--steps").map(str::parse::<i64>).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bad --steps: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let threads = match flag(&args, "--threads")
        .map(str::parse::<usize>)
        .transpose()
    {
        Ok(n) => n,
        Err(e) => {
            eprintln!("bad --threads: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let sleep = match flag(&args, "--sleep-us").map(str::parse::<u64>).transpose() {
        Ok(us) => Duration::from_micros(us.unwrap_or(2000)),
        Err(e) => {
            eprintln!("bad --sleep-us: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let die = match flag(&args, "--die").map(str::parse::<DiePoint>).transpose() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bad --die: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let durability = match flag(&args, "--durability")
        .map(str::parse::<Durability>)
        .transpose()
    {
        Ok(d) => d.unwrap_or(Durability::Sync),
        Err(e) => {
            eprintln!("bad --durability: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !matches!(mode, "run" | "resume" | "final") {
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
    let job = Job {
        mode,
        steps,
        sleep,
        durability,
    };
    match rt.block_on(work(&job, db, &thread, threads, die)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crash-worker {mode}: {e}");
            ExitCode::from(1)
        }
    }
}

/// What to do on each thread.
struct Job<'a> {
    mode: &'a str,
    steps: Option<i64>,
    sleep: Duration,
    durability: Durability,
}

/// Runs the job on `thread`, or on `threads` threads `thread-0` … at once, on one store.
async fn work(
    job: &Job<'_>,
    db: &str,
    thread: &str,
    threads: Option<usize>,
    die: Option<DiePoint>,
) -> Result<(), String> {
    let sled = Arc::new(SledCheckpointer::open(db).map_err(|e| e.to_string())?);
    let cp: Arc<dyn Checkpointer> = Arc::new(DieAt::new(sled, die));
    let Some(n) = threads else {
        return one(job, cp, thread, "").await;
    };
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let (cp, name) = (cp.clone(), format!("{thread}-{i}"));
        let (mode, steps, sleep, durability) =
            (job.mode.to_string(), job.steps, job.sleep, job.durability);
        set.spawn(async move {
            let job = Job {
                mode: &mode,
                steps,
                sleep,
                durability,
            };
            let suffix = format!(" {name}");
            one(&job, cp, &name, &suffix).await
        });
    }
    let mut first_error = None;
    while let Some(r) = set.join_next().await {
        let r = r
            .map_err(|e| format!("a thread's task failed: {e}"))
            .and_then(|r| r);
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The job on one thread; every line printed ends with `suffix` (the thread id when several
/// threads run).
async fn one(
    job: &Job<'_>,
    cp: Arc<dyn Checkpointer>,
    thread: &str,
    suffix: &str,
) -> Result<(), String> {
    let tail = suffix.to_string();
    let hook: StepHook =
        Arc::new(move |step, node| say(&format!("started step {step} {node}{tail}")));
    let graph = crash_graph(job.sleep, Some(hook)).with_checkpointer(cp);
    let state = graph
        .get_state(thread, None)
        .await
        .map_err(|e| e.to_string())?;
    let config = RunConfig::thread(thread).durability(job.durability);
    let fresh = |steps: Option<i64>| -> Result<Input, String> {
        let n = steps.ok_or("--steps is needed to start a thread")?;
        Ok(Input::values(input(n)))
    };
    let run_input = match (job.mode, &state) {
        ("final", Some(s)) => {
            let out =
                json!({ "thread": thread, "step": s.step, "next": s.next, "values": s.values });
            say(&out.to_string());
            return Ok(());
        }
        ("final", None) => return Err(format!("thread {thread:?} has no checkpoint")),
        ("run", Some(s)) => {
            return Err(format!(
                "thread {thread:?} already exists (step {}); use resume",
                s.step
            ))
        }
        ("run", None) => fresh(job.steps)?,
        (_, None) => {
            say(&format!("resuming from nothing: starting fresh{suffix}"));
            fresh(job.steps)?
        }
        (_, Some(s)) => {
            say(&format!("resuming from step {}{suffix}", s.step));
            Input::Continue
        }
    };
    let out = graph
        .invoke(run_input, config)
        .await
        .map_err(|e| e.to_string())?;
    let last = graph
        .get_state(thread, None)
        .await
        .map_err(|e| e.to_string())?
        .map(|s| s.step)
        .unwrap_or(i64::MIN);
    say(&format!(
        "done at step {last} ({} steps, {} tasks, {} checkpoints in this run){suffix}",
        out.stats.steps, out.stats.tasks, out.stats.checkpoints_written
    ));
    Ok(())
}
