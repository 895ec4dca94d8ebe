//! A loopback load test of the agentgraph server.
//!
//! Starts the server in-process on `127.0.0.1:0` (memory storage by default, `--sled` for a
//! temporary sled folder) over a generated graphs folder holding one deterministic graph
//! `load`, then runs `--runs` runs, at most `--concurrency` at a time and for at most
//! `--seconds`. Each run gets its own thread: the client opens the thread's SSE stream
//! (`?lastEventId=0`, so no event can be missed even if the subscription lags the POST), POSTs
//! the run and reads events until the run-end event.
//!
//! Two graphs (`--model`):
//! - `scripted` (the default): an agent loop on the scripted model (docs/scripted-model.md).
//!   An `llm` node answers with `--words` words and a `calculator` call, a `tool_executor`
//!   runs it, the `llm` node answers again with `--words` words, so each run streams tokens
//!   (`messages` events, word by word, plus the tool call's deltas), tool progress (`custom`)
//!   and three `updates`. One generated script serves every thread: the scripted model keeps
//!   a cursor per thread, so concurrent threads each start at its first response.
//! - `none`: a loop of `--steps` `set` steps, no model.
//!
//! Every run is checked: event ids 1, 2, 3, … with no gap or duplicate, `run started` first,
//! the expected `updates` (one per step; three for the agent) and, for the agent,
//! `2 × --words + 2` `messages` events (one per word, two for the tool call), `run done` last. The envelope carries no timestamp, so
//! the latencies reported are client-side: POST → first event (`run started`), POST → first
//! token (`messages` event), the gap between consecutive events of a run (event delivery),
//! and the run's wall time (POST → run-end event).
//!
//! Each report also gives the process's CPU time per run (user + system, from `getrusage`,
//! client included), its voluntary context switches per run ("sleeps": a thread waited, on
//! the disk, a lock or for work; in a virtual machine each one costs an exit and a wake-up)
//! and, for sled, the store's size on disk once the server closed it.
//!
//! `--compare R` measures both storages side by side in one process: R rounds, each a memory
//! run and a sled run (the order alternating round by round, a fresh store each time), and
//! reports each round's sled ÷ memory runs/s and their median. On a shared machine whose speed
//! drifts within minutes, the per-round ratio is what can be compared between builds; single
//! runs say little.
//!
//! ```text
//! cargo run --release -p agentgraph-bench --bin loadtest -- --runs 200 --concurrency 16
//! cargo run --release -p agentgraph-bench --bin loadtest -- --runs 2000 --concurrency 16 --compare 8
//! ```

use agentgraph_n8n::{CatalogueSource, N8n};
use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: loadtest [--runs N] [--concurrency C] [--seconds S] \
[--model scripted|none] [--words W] [--steps K] [--sled] [--compare R]
[--durability sync|async|exit] [--nodelay] [--json]
  --runs N         runs to start (default 200)
  --concurrency C  runs in flight at once, one client task each (default 8)
  --seconds S      stop starting runs after S seconds (default 60)
  --model M        scripted: an llm node on the scripted model with a tool call through a
                   tool_executor, streaming tokens (default); none: `set` steps only
  --words W        words per scripted answer, two answers per run (default 12)
  --steps K        set steps per run with --model none (default 5)
  --sled           store checkpoints and events in a temporary sled folder (default memory)
  --compare R      R rounds of one memory and one sled run each, alternating which goes
                   first; reports every round and the median of sled ÷ memory runs/s
  --durability D   the runs' durability (the server's default, sync, when not given)
  --nodelay        serve with TCP_NODELAY on accepted sockets (axum::serve over the router)
                   instead of agentgraph_server::serve_on, to compare
  --json           print the report as JSON instead of a table";

struct Args {
    runs: usize,
    concurrency: usize,
    seconds: u64,
    scripted: bool,
    words: usize,
    steps: usize,
    sled: bool,
    compare: usize,
    /// The `durability` of each run request (`None`: the server's default).
    durability: Option<&'static str>,
    nodelay: bool,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        runs: 200,
        concurrency: 8,
        seconds: 60,
        scripted: true,
        words: 12,
        steps: 5,
        sled: false,
        compare: 0,
        durability: None,
        nodelay: false,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match arg.as_str() {
            "--runs" => a.runs = num("--runs")? as usize,
            "--concurrency" => a.concurrency = (num("--concurrency")? as usize).max(1),
            "--seconds" => a.seconds = num("--seconds")?.max(1),
            "--steps" => a.steps = (num("--steps")? as usize).max(1),
            "--words" => a.words = (num("--words")? as usize).max(1),
            "--model" => {
                a.scripted = match it.next().as_deref() {
                    Some("scripted") => true,
                    Some("none") => false,
                    _ => return Err("--model needs `scripted` or `none`".into()),
                }
            }
            "--sled" => a.sled = true,
            "--compare" => a.compare = (num("--compare")? as usize).max(1),
            "--durability" => {
                a.durability = match it.next().as_deref() {
                    Some("sync") => Some("sync"),
                    Some("async") => Some("async"),
                    Some("exit") => Some("exit"),
                    _ => return Err("--durability needs `sync`, `async` or `exit`".into()),
                }
            }
            "--nodelay" => a.nodelay = true,
            "--json" => a.json = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// What one run measured.
struct RunResult {
    events: usize,
    messages: usize,
    first_event: Duration,
    first_token: Option<Duration>,
    wall: Duration,
    gaps: Vec<Duration>,
}

#[derive(Default)]
struct Collected {
    ok: Vec<RunResult>,
    failures: Vec<String>,
}

/// What the client expects of each run.
#[derive(Clone, Copy)]
struct Expect {
    /// `updates` events per run.
    updates: usize,
    /// `messages` events per run: a word-by-word delta per word of the two answers and two
    /// per tool call (id and name, then the arguments).
    messages: usize,
    /// The body's `stream_modes` (`None`: the server's default, updates + custom + messages).
    updates_only: bool,
    /// The body's `durability`.
    durability: Option<&'static str>,
}

impl Expect {
    fn of(args: &Args) -> Self {
        if args.scripted {
            // agent (answer + tool call), tools, agent (final answer).
            Expect {
                updates: 3,
                messages: 2 * args.words + 2,
                updates_only: false,
                durability: args.durability,
            }
        } else {
            Expect {
                updates: args.steps,
                messages: 0,
                updates_only: true,
                durability: args.durability,
            }
        }
    }
}

/// The agent graph of `--model scripted`: llm ⇄ tool_executor on the scripted model.
const AGENT_GRAPH: &str = "\
# Written by the load test: an agent loop on the scripted model (canned answers, no provider).
graph load {
  state {
    messages: messages
    usage: json = {} reduce usage_sum
  }

  model scripted_model = scripted { script: \"load.script.json\" }
  prompt system = \"You are the load test's scripted agent.\"
  tools toolbox = [calculator]

  node agent: llm {
    model: scripted_model
    system: [system]
    messages: messages
    tools: toolbox
    usage: usage
  }
  node tools: tool_executor {
    tools: toolbox
    messages: messages
  }

  START -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> agent
}
";

/// The script of `--model scripted`: `words` words and a calculator call, then `words` words.
fn script(words: usize) -> String {
    let text = |lead: &str| {
        let mut t = String::from(lead);
        for i in 0..words.saturating_sub(1) {
            t.push_str(&format!(" word{i}"));
        }
        t
    };
    json!({"responses": [
        {"node": "agent", "text": text("Computing"),
         "tool_calls": [{"name": "calculator", "args": {"expression": "17 * 23 + 4"},
                         "id": "call_1"}],
         "usage": {"input_tokens": 40, "output_tokens": words}},
        {"node": "agent", "text": text("Answer"),
         "usage": {"input_tokens": 60, "output_tokens": words}},
    ]})
    .to_string()
}

fn graph_source(steps: usize) -> String {
    format!(
        "# Written by the load test: {steps} deterministic steps, no model.\n\
         graph load {{\n  state {{\n    count: int = 0\n    limit: int = {steps}\n  }}\n  \
         config {{ recursion_limit: 1000000 }}\n\n  node bump {{\n    set {{ count: count + 1 }}\n  }}\n\n  \
         START -> bump\n  bump -> route {{\n    count < limit => bump\n    else          => END\n  }}\n}}\n"
    )
}

/// One run on `thread`: SSE first, then the POST, then events until the run ends.
async fn one_run(
    http: &reqwest::Client,
    base: &str,
    thread: &str,
    expect: Expect,
) -> Result<RunResult, String> {
    let limit = Duration::from_secs(60);
    let deadline = tokio::time::Instant::now() + limit;
    let resp = tokio::time::timeout_at(
        deadline,
        http.get(format!("{base}/threads/{thread}/events?lastEventId=0"))
            .send(),
    )
    .await
    .map_err(|_| format!("{thread}: no SSE response within 60 s"))?
    .map_err(|e| format!("{thread}: sse: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("{thread}: sse status {}", resp.status()));
    }
    let mut stream = resp.bytes_stream().eventsource();
    let t0 = Instant::now();
    let r = tokio::time::timeout_at(
        deadline,
        http.post(format!("{base}/threads/{thread}/runs"))
            .json(&{
                let mut body = if expect.updates_only {
                    json!({"graph": "load", "input": {}, "stream_modes": ["updates"]})
                } else {
                    json!({"graph": "load",
                           "input": {"messages": [{"type": "human", "content": "What is 17 * 23 + 4?"}]}})
                };
                if let Some(d) = expect.durability {
                    body["durability"] = json!(d);
                }
                body
            })
            .send(),
    )
    .await
    .map_err(|_| format!("{thread}: no POST response within 60 s"))?
    .map_err(|e| format!("{thread}: post: {e}"))?;
    if r.status().as_u16() != 202 {
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        return Err(format!("{thread}: post status {status}: {body}"));
    }
    let mut times = Vec::new();
    let mut updates = 0usize;
    let mut messages = 0usize;
    let mut first_token = None;
    let mut expected_id = 1u64;
    loop {
        let ev = tokio::time::timeout_at(deadline, stream.next())
            .await
            .map_err(|_| format!("{thread}: no run-end event within 60 s"))?
            .ok_or_else(|| format!("{thread}: stream closed before the run ended"))?
            .map_err(|e| format!("{thread}: bad SSE: {e}"))?;
        let now = Instant::now();
        if ev.event == "gap" {
            return Err(format!("{thread}: gap event {}", ev.data));
        }
        let id: u64 = ev
            .id
            .parse()
            .map_err(|_| format!("{thread}: non-numeric id {:?}", ev.id))?;
        if id != expected_id {
            return Err(format!(
                "{thread}: event id {id} where {expected_id} was expected (lost, duplicated or out of order)"
            ));
        }
        expected_id += 1;
        let data: Value =
            serde_json::from_str(&ev.data).map_err(|e| format!("{thread}: bad JSON: {e}"))?;
        if data["seq"] != json!(id) {
            return Err(format!("{thread}: seq {} != id {id}", data["seq"]));
        }
        times.push(now);
        let mode = data["mode"].as_str().unwrap_or("");
        let status = data["data"]["status"].as_str().unwrap_or("");
        if id == 1 && !(mode == "run" && status == "started") {
            return Err(format!("{thread}: first event is not run started: {data}"));
        }
        if mode == "updates" {
            updates += 1;
        }
        if mode == "messages" {
            messages += 1;
            first_token.get_or_insert(now - t0);
        }
        if mode == "run" && status != "started" {
            if status != "done" {
                return Err(format!("{thread}: run ended {status}: {data}"));
            }
            if updates != expect.updates {
                return Err(format!(
                    "{thread}: {updates} updates events, expected {}",
                    expect.updates
                ));
            }
            if messages != expect.messages {
                return Err(format!(
                    "{thread}: {messages} messages events, expected {}",
                    expect.messages
                ));
            }
            break;
        }
    }
    let wall = times[times.len() - 1] - t0;
    Ok(RunResult {
        events: times.len(),
        messages,
        first_event: times[0] - t0,
        first_token,
        wall,
        gaps: times.windows(2).map(|w| w[1] - w[0]).collect(),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

fn stats(mut v: Vec<Duration>) -> Value {
    v.sort();
    json!({
        "p50_ms": round3(percentile(&v, 50.0)),
        "p99_ms": round3(percentile(&v, 99.0)),
        "max_ms": round3(v.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)),
        "samples": v.len(),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("loadtest: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let work: PathBuf =
        std::env::temp_dir().join(format!("agentgraph-loadtest-{}", std::process::id()));
    let graphs = work.join("graphs");
    let written = std::fs::create_dir_all(&graphs).and_then(|_| {
        if args.scripted {
            std::fs::write(graphs.join("load.script.json"), script(args.words))?;
            std::fs::write(graphs.join("load.ag"), AGENT_GRAPH)
        } else {
            std::fs::write(graphs.join("load.ag"), graph_source(args.steps))
        }
    });
    if let Err(e) = written {
        eprintln!("loadtest: cannot write the graph: {e}");
        return ExitCode::FAILURE;
    }
    let code = if args.compare > 0 {
        compare(&args, &work, &graphs).await
    } else {
        match run(&args, &work.join("db"), &graphs, args.sled, "").await {
            Ok(report) => {
                print_report(&args, &report);
                report_code(&report)
            }
            Err(e) => {
                eprintln!("loadtest: {e}");
                ExitCode::FAILURE
            }
        }
    };
    let _ = std::fs::remove_dir_all(&work);
    code
}

fn report_code(report: &Value) -> ExitCode {
    if report["runs_failed"].as_u64() == Some(0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--compare R`: memory and sled side by side, round by round.
async fn compare(args: &Args, work: &std::path::Path, graphs: &std::path::Path) -> ExitCode {
    let mut rounds = Vec::new();
    let mut failed = false;
    for round in 0..args.compare {
        let mut pair = [Value::Null, Value::Null];
        // Alternate the order so a drift of the machine's speed does not favour one side.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for sled in order {
            let db = work.join(format!(
                "db-{round}-{}",
                if sled { "sled" } else { "memory" }
            ));
            // Thread ids unique in the process: the scripted model keeps a cursor per thread.
            let prefix = format!("r{round}{}-", if sled { "s" } else { "m" });
            match run(args, &db, graphs, sled, &prefix).await {
                Ok(report) => {
                    failed |= report["runs_failed"].as_u64() != Some(0);
                    pair[usize::from(sled)] = report;
                }
                Err(e) => {
                    eprintln!("loadtest: round {}: {e}", round + 1);
                    return ExitCode::FAILURE;
                }
            }
            let _ = std::fs::remove_dir_all(&db);
        }
        let [memory, sled] = pair;
        let m = memory["runs_per_sec"].as_f64().unwrap_or(0.0);
        let s = sled["runs_per_sec"].as_f64().unwrap_or(0.0);
        let ratio = if m > 0.0 { s / m } else { 0.0 };
        if !args.json {
            println!(
                "round {:>2}: memory {:>7.1} runs/s ({:.3} ms CPU/run, {:.1} sleeps/run), sled {:>7.1} runs/s ({:.3} ms CPU/run, {:.1} sleeps/run, {} KB on disk): {:.1} %",
                round + 1,
                m,
                memory["cpu_ms_per_run"].as_f64().unwrap_or(0.0),
                memory["sleeps_per_run"].as_f64().unwrap_or(0.0),
                s,
                sled["cpu_ms_per_run"].as_f64().unwrap_or(0.0),
                sled["sleeps_per_run"].as_f64().unwrap_or(0.0),
                sled["disk_bytes"].as_u64().unwrap_or(0) / 1024,
                ratio * 100.0
            );
        }
        rounds.push(json!({ "memory": memory, "sled": sled, "ratio": round3(ratio) }));
    }
    let median = |key: &str, side: Option<&str>| {
        let mut v: Vec<f64> = rounds
            .iter()
            .filter_map(|r| match side {
                Some(side) => r[side][key].as_f64(),
                None => r[key].as_f64(),
            })
            .collect();
        v.sort_by(f64::total_cmp);
        round3(median_of(&v))
    };
    let summary = json!({
        "rounds": args.compare,
        "runs_per_round": args.runs,
        "concurrency": args.concurrency,
        "median_ratio": median("ratio", None),
        "median_memory_runs_per_sec": median("runs_per_sec", Some("memory")),
        "median_sled_runs_per_sec": median("runs_per_sec", Some("sled")),
        "median_memory_cpu_ms_per_run": median("cpu_ms_per_run", Some("memory")),
        "median_sled_cpu_ms_per_run": median("cpu_ms_per_run", Some("sled")),
        "median_memory_sleeps_per_run": median("sleeps_per_run", Some("memory")),
        "median_sled_sleeps_per_run": median("sleeps_per_run", Some("sled")),
        "median_sled_disk_bytes": median("disk_bytes", Some("sled")),
    });
    if args.json {
        println!("{}", json!({ "summary": summary, "rounds": rounds }));
    } else {
        println!(
            "median of {} rounds: sled ÷ memory {:.1} % (memory {:.1} runs/s, {:.3} ms CPU/run, {:.1} sleeps/run; sled {:.1} runs/s, {:.3} ms CPU/run, {:.1} sleeps/run)",
            args.compare,
            summary["median_ratio"].as_f64().unwrap_or(0.0) * 100.0,
            summary["median_memory_runs_per_sec"].as_f64().unwrap_or(0.0),
            summary["median_memory_cpu_ms_per_run"].as_f64().unwrap_or(0.0),
            summary["median_memory_sleeps_per_run"].as_f64().unwrap_or(0.0),
            summary["median_sled_runs_per_sec"].as_f64().unwrap_or(0.0),
            summary["median_sled_cpu_ms_per_run"].as_f64().unwrap_or(0.0),
            summary["median_sled_sleeps_per_run"].as_f64().unwrap_or(0.0),
        );
    }
    if failed {
        eprintln!("loadtest: some runs failed (see the JSON report's `failures`)");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The median of sorted values (the mean of the middle two for an even count; 0 when empty).
fn median_of(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// What this process has used so far: CPU time (user + system) and voluntary context
/// switches (a thread went to sleep: a worker parking with nothing to run, a wait on a lock or
/// on the disk). Zero when `getrusage` fails.
fn usage() -> (Duration, u64) {
    // SAFETY: `getrusage` only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return (Duration::ZERO, 0);
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_nvcsw.max(0) as u64,
    )
}

/// Bytes the files under `dir` take on disk (allocated blocks: a sparse file counts what it
/// holds, not its length; 0 when the folder does not exist).
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// One measured load: starts a server on `db` (memory or sled), runs the runs, closes the
/// server and returns the report.
async fn run(
    args: &Args,
    db: &std::path::Path,
    graphs: &std::path::Path,
    sled: bool,
    prefix: &str,
) -> Result<Value, String> {
    let storage = if sled {
        Storage::Sled(db.to_path_buf())
    } else {
        Storage::Memory
    };
    let config = ServerConfig {
        // One log per run, each far under the bound.
        events_per_thread: 500,
        ..ServerConfig::new(graphs.to_path_buf(), db.to_path_buf())
            .storage(storage)
            .registry(N8n::new(CatalogueSource::Builtin).registry_factory())
    };
    let state = ServerState::new(&config).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let base = format!(
        "http://{}",
        listener
            .local_addr()
            .expect("a bound listener has an address")
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        let _ = stop_rx.await;
    };
    let server = if args.nodelay {
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = agentgraph_server::router(state.clone());
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await?;
            state.shutdown().await
        })
    } else {
        tokio::spawn(serve_on(listener, state, stop))
    };

    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency * 2)
        .build()
        .expect("an HTTP client");
    // Warm up: compile the graph once so the first measured run does not pay for it.
    let expect = Expect::of(args);
    if let Err(e) = one_run(&http, &base, &format!("{prefix}warmup"), expect).await {
        let _ = stop_tx.send(());
        return Err(format!("warm-up run failed: {e}"));
    }

    let next = Arc::new(AtomicUsize::new(0));
    let collected = Arc::new(Mutex::new(Collected::default()));
    let started = Instant::now();
    let (cpu_before, sleeps_before) = usage();
    let deadline = started + Duration::from_secs(args.seconds);
    let mut clients = Vec::new();
    for _ in 0..args.concurrency {
        let (http, base, next, collected, prefix) = (
            http.clone(),
            base.clone(),
            next.clone(),
            collected.clone(),
            prefix.to_string(),
        );
        let runs = args.runs;
        clients.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= runs || Instant::now() >= deadline {
                    break;
                }
                let r = one_run(&http, &base, &format!("{prefix}lt-{i}"), expect).await;
                let mut c = collected.lock().unwrap_or_else(|p| p.into_inner());
                match r {
                    Ok(r) => c.ok.push(r),
                    Err(e) => c.failures.push(e),
                }
            }
        }));
    }
    for c in clients {
        let _ = c.await;
    }
    let elapsed = started.elapsed();
    let (cpu_after, sleeps_after) = usage();
    let cpu = cpu_after.saturating_sub(cpu_before);
    let sleeps = sleeps_after.saturating_sub(sleeps_before);
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), server).await;
    // Once the server closed the store (a clean close merges the log into sled).
    let disk = if sled { disk_bytes(db) } else { 0 };

    let c = std::mem::take(&mut *collected.lock().unwrap_or_else(|p| p.into_inner()));
    let completed = c.ok.len();
    let events: usize = c.ok.iter().map(|r| r.events).sum();
    let first = stats(c.ok.iter().map(|r| r.first_event).collect());
    let first_token = stats(c.ok.iter().filter_map(|r| r.first_token).collect());
    let messages: usize = c.ok.iter().map(|r| r.messages).sum();
    let gaps = stats(c.ok.iter().flat_map(|r| r.gaps.iter().copied()).collect());
    let wall = stats(c.ok.iter().map(|r| r.wall).collect());
    let secs = elapsed.as_secs_f64();
    let report = json!({
        "runs_requested": args.runs,
        "runs_completed": completed,
        "runs_failed": c.failures.len(),
        "failures": c.failures.iter().take(10).collect::<Vec<_>>(),
        "concurrency": args.concurrency,
        "model": if args.scripted { "scripted" } else { "none" },
        "words": if args.scripted { json!(args.words) } else { Value::Null },
        "steps": if args.scripted { Value::Null } else { json!(args.steps) },
        "storage": if sled { "sled" } else { "memory" },
        "durability": args.durability.unwrap_or("sync (the default)"),
        "server": if args.nodelay { "axum::serve + TCP_NODELAY" } else { "serve_on" },
        "events": events,
        "events_per_run": events.checked_div(completed).unwrap_or(0),
        "messages_events_per_run": messages.checked_div(completed).unwrap_or(0),
        "seconds": round3(secs),
        "runs_per_sec": round3(completed as f64 / secs),
        "events_per_sec": round3(events as f64 / secs),
        "cpu_ms_per_run": round3(cpu.as_secs_f64() * 1000.0 / completed.max(1) as f64),
        "sleeps_per_run": round3(sleeps as f64 / completed.max(1) as f64),
        "disk_bytes": disk,
        "post_to_first_event": first,
        "post_to_first_token": first_token,
        "between_events": gaps,
        "run_wall": wall,
        "latency_note": "client-side: the envelope has no timestamp",
    });
    Ok(report)
}

fn print_report(args: &Args, report: &Value) {
    if args.json {
        println!("{report}");
    } else {
        let what = if args.scripted {
            format!("the scripted agent ({} words per answer)", args.words)
        } else {
            format!("{} steps", args.steps)
        };
        println!(
            "{} runs of {what} ({} storage, {}), concurrency {}: {}/{} done, {} failed, {:.2} s",
            args.runs,
            report["storage"].as_str().unwrap_or(""),
            report["server"].as_str().unwrap_or(""),
            args.concurrency,
            report["runs_completed"],
            args.runs,
            report["runs_failed"],
            report["seconds"].as_f64().unwrap_or(0.0)
        );
        println!(
            "runs/s {:.1}, events/s {:.0}, {} events per run\n",
            report["runs_per_sec"].as_f64().unwrap_or(0.0),
            report["events_per_sec"].as_f64().unwrap_or(0.0),
            report["events_per_run"]
        );
        println!("| latency (ms)          |    p50 |    p99 |    max |");
        println!("|-----------------------|-------:|-------:|-------:|");
        for (name, key) in [
            ("POST → first event", "post_to_first_event"),
            ("POST → first token", "post_to_first_token"),
            ("between events", "between_events"),
            ("run wall (POST → end)", "run_wall"),
        ] {
            let s = &report[key];
            println!(
                "| {name:<21} | {:>6.2} | {:>6.2} | {:>6.2} |",
                s["p50_ms"].as_f64().unwrap_or(0.0),
                s["p99_ms"].as_f64().unwrap_or(0.0),
                s["max_ms"].as_f64().unwrap_or(0.0)
            );
        }
        println!(
            "\nCPU per run {:.3} ms (the process, client included), {:.1} sleeps per run{}",
            report["cpu_ms_per_run"].as_f64().unwrap_or(0.0),
            report["sleeps_per_run"].as_f64().unwrap_or(0.0),
            match report["disk_bytes"].as_u64() {
                Some(b) if b > 0 => format!("; the store on disk: {} KB", b / 1024),
                _ => String::new(),
            }
        );
        if let Some(failures) = report["failures"].as_array() {
            for f in failures {
                eprintln!("failure: {}", f.as_str().unwrap_or_default());
            }
        }
    }
}
