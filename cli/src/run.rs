//! run, resume and fork: start or continue a thread, stream its events, print the outcome.

use crate::exit;
use crate::graph::{json_arg, load_with_store, Ctx};
use crate::live::LiveView;
use agentgraph_runtime::{
    CheckpointId, CompiledGraph, Durability, Mode, Modes, Resume, RunConfig, RunError,
    RunErrorKind, RunOutput, RunStatus,
};
use agentgraph_server::{open_run, OpenError, Opening};
use clap::Args;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Options shared by run, resume and fork.
#[derive(Args, Clone)]
pub struct RunOpts {
    /// The thread id (run: default a new one; resume and fork: required).
    #[arg(long, value_parser = crate::graph::thread_id)]
    thread: Option<String>,
    /// Print stream events as JSON lines: a comma-separated list of values, updates,
    /// messages, custom, debug.
    #[arg(long)]
    stream: Option<String>,
    /// When checkpoints reach the disk: sync, async or exit.
    #[arg(long, default_value = "sync")]
    durability: String,
    /// Keep only the newest N checkpoints of the thread while running (older ones are
    /// pruned as the run goes): bounds the store and its memory on long runs; history and
    /// time travel reach back only that far. Default: keep every checkpoint.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    keep_checkpoints: Option<u64>,
    /// Maximum steps of this run (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    recursion_limit: Option<u64>,
    /// Stop before these nodes (comma-separated; `*` for all).
    #[arg(long)]
    interrupt_before: Option<String>,
    /// Stop after these nodes (comma-separated; `*` for all).
    #[arg(long)]
    interrupt_after: Option<String>,
    /// The memory session of agents with memory (default: the thread id).
    #[arg(long)]
    session: Option<String>,
    /// A run setting nodes and tools can read, as KEY=VALUE (VALUE is JSON, or else a
    /// string); repeatable.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

fn config(opts: &RunOpts, thread: String) -> Result<(RunConfig, Option<Modes>), u8> {
    let durability: Durability = opts.durability.parse().map_err(|e| {
        eprintln!("error: {e}");
        exit::USAGE
    })?;
    let stream = match &opts.stream {
        Some(s) => Some(Modes::parse(s).map_err(|e| {
            eprintln!("error: {e}");
            exit::USAGE
        })?),
        None => None,
    };
    let mut c = RunConfig::thread(thread).durability(durability);
    c.keep_checkpoints = opts
        .keep_checkpoints
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    c.recursion_limit = opts
        .recursion_limit
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let list = |s: &Option<String>| {
        s.as_ref().map(|v| {
            v.split(',')
                .map(|x| x.trim().to_string())
                .collect::<Vec<_>>()
        })
    };
    c.interrupt_before = list(&opts.interrupt_before);
    c.interrupt_after = list(&opts.interrupt_after);
    for kv in &opts.settings {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("error: --config takes KEY=VALUE, got `{kv}`");
            return Err(exit::USAGE);
        };
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        c = c.configure(k.trim(), value);
    }
    if let Some(s) = &opts.session {
        c = c.configure("session_id", Value::String(s.clone()));
    }
    Ok((c, stream))
}

fn new_thread_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("t-{}", &id[..12])
}

fn required_thread(opts: &RunOpts, cmd: &str) -> Result<String, u8> {
    opts.thread.clone().ok_or_else(|| {
        eprintln!("error: `{cmd}` needs --thread ID (list them with `agentgraph threads`)");
        exit::USAGE
    })
}

/// `agentgraph run`.
pub async fn run(
    ctx: &Ctx,
    path: &Path,
    input: Option<String>,
    input_file: Option<PathBuf>,
    opts: RunOpts,
) -> u8 {
    let what = match &input_file {
        Some(f) if input.is_none() => format!("--input-file {}", f.display()),
        _ => "--input".to_string(),
    };
    let text = match (input, input_file) {
        (Some(t), _) => t,
        (None, Some(f)) => match std::fs::read_to_string(&f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                return exit::USAGE;
            }
        },
        (None, None) => "{}".to_string(),
    };
    let input = match json_arg(&what, &text) {
        Ok(v) => v,
        Err(c) => return c,
    };
    let graph = match load_with_store(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    let thread = opts.thread.clone().unwrap_or_else(new_thread_id);
    execute(
        ctx,
        &graph,
        path,
        Opening::Input(input),
        thread,
        &opts,
        None,
    )
    .await
}

/// `agentgraph resume`.
pub async fn resume(
    ctx: &Ctx,
    path: &Path,
    value: Option<String>,
    by_id: bool,
    opts: RunOpts,
) -> u8 {
    let thread = match required_thread(&opts, "resume") {
        Ok(t) => t,
        Err(c) => return c,
    };
    let opening = match value {
        None => Opening::Continue,
        Some(text) => match json_arg("--value", &text) {
            Err(c) => return c,
            Ok(v) if by_id => match serde_json::from_value::<BTreeMap<String, Value>>(v) {
                Ok(map) => Opening::Answer(Resume::ById(map)),
                Err(_) => {
                    eprintln!("error: with --by-id, --value must be an object from interrupt id to answer");
                    return exit::USAGE;
                }
            },
            Ok(v) => Opening::Answer(Resume::Value(v)),
        },
    };
    let graph = match load_with_store(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    execute(ctx, &graph, path, opening, thread, &opts, None).await
}

/// `agentgraph fork`.
pub async fn fork(
    ctx: &Ctx,
    path: &Path,
    checkpoint: &str,
    values: Option<String>,
    opts: RunOpts,
) -> u8 {
    let thread = match required_thread(&opts, "fork") {
        Ok(t) => t,
        Err(c) => return c,
    };
    let id: CheckpointId = match checkpoint.parse() {
        Ok(id) => id,
        Err(e) => {
            eprintln!("error: {e} (see `agentgraph history`)");
            return exit::USAGE;
        }
    };
    let graph = match load_with_store(ctx, path) {
        Ok(g) => g,
        Err(c) => return c,
    };
    let from = match values {
        None => id,
        Some(text) => {
            let v = match json_arg("--values", &text) {
                Ok(v) => v,
                Err(c) => return c,
            };
            // The update itself branches from the old checkpoint; the run continues from it.
            match graph.update_state(&thread, Some(id), v, None).await {
                Ok(new_id) => new_id,
                Err(e) => return report_error(&e),
            }
        }
    };
    execute(
        ctx,
        &graph,
        path,
        Opening::Continue,
        thread,
        &opts,
        Some(from),
    )
    .await
}

fn report_error(e: &RunError) -> u8 {
    eprintln!("error: {e}");
    match e.kind() {
        RunErrorKind::Caller => exit::USAGE,
        RunErrorKind::Conflict | RunErrorKind::Cancelled | RunErrorKind::Failed => exit::FAILED,
    }
}

async fn execute(
    ctx: &Ctx,
    graph: &CompiledGraph,
    path: &Path,
    opening: Opening,
    thread: String,
    opts: &RunOpts,
    at: Option<CheckpointId>,
) -> u8 {
    let (mut config, stream_modes) = match config(opts, thread.clone()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    config.checkpoint_id = at;
    let printed = stream_modes.unwrap_or(Modes::NONE);
    let live = !ctx.json;
    let mut wanted: Vec<Mode> = Mode::ALL
        .into_iter()
        .filter(|m| printed.contains(*m))
        .collect();
    if live {
        wanted.extend([Mode::Debug, Mode::Custom, Mode::Messages]);
    }
    config.modes = Modes::of(&wanted);
    eprintln!("thread: {thread}");
    crate::threads_cmd::record_graph(&ctx.db, &thread, path);
    let run = match open_run(graph, opening, config).await {
        Ok(run) => run,
        Err(OpenError::Input(e) | OpenError::Run(e)) => return report_error(&e),
        Err(e) => return crate::graph::fail(e, exit::USAGE),
    };
    let mut view = live.then(LiveView::new);
    let mut stream = graph.stream(run.input, run.config);
    while let Some(ev) = stream.next().await {
        if printed.contains(ev.mode()) {
            println!("{}", serde_json::to_string(&ev).unwrap_or_default());
        }
        if let Some(v) = view.as_mut() {
            v.handle(&ev);
        }
    }
    if let Some(v) = view.as_mut() {
        v.finish();
    }
    match stream.finish().await {
        Ok(out) => outcome(ctx, &thread, path, &out),
        Err(e) => report_error(&e),
    }
}

fn outcome(ctx: &Ctx, thread: &str, path: &Path, out: &RunOutput) -> u8 {
    let mut values = out.values.clone();
    let code = match &out.status {
        RunStatus::Done => exit::DONE,
        RunStatus::Interrupted { interrupts, next } => {
            if let Value::Object(m) = &mut values {
                m.insert(
                    "__interrupt__".into(),
                    serde_json::to_value(interrupts).unwrap_or(Value::Null),
                );
            }
            if !ctx.json {
                if interrupts.is_empty() {
                    eprintln!("stopped before {} (a breakpoint)", next.join(", "));
                } else {
                    for i in interrupts {
                        eprintln!("interrupt {} from {}: {}", i.id, i.node, i.value);
                    }
                }
                let hint = if interrupts.len() > 1 {
                    " --by-id --value '{\"<id>\": …}'"
                } else if interrupts.is_empty() {
                    ""
                } else {
                    " --value '<json>'"
                };
                // The store flag only when it is not the default, so the line pastes as is.
                let db = if ctx.db == std::path::Path::new("./.agentgraph") {
                    String::new()
                } else {
                    format!(" --db {}", ctx.db.display())
                };
                eprintln!(
                    "resume with: agentgraph resume {}{db} --thread {thread}{hint}",
                    path.display()
                );
            }
            exit::INTERRUPTED
        }
    };
    if ctx.json {
        println!("{}", values);
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&values).unwrap_or_default()
        );
        eprintln!(
            "{} steps, {} tasks, {} checkpoints",
            out.stats.steps, out.stats.tasks, out.stats.checkpoints_written
        );
    }
    code
}
