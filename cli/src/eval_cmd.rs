//! `agentgraph eval`: runs builder graphs over a prompt set and scores every workflow
//! (`agentgraph-eval`); `eval compare A B` puts two result files side by side; `eval report`
//! summarizes one. See docs/eval.md.

use crate::exit;
use crate::graph::{fail, Ctx};
use agentgraph_eval::cases::{self, Case, DEFAULT_SET};
use agentgraph_eval::compare::{compare, DEFAULT_WATCHED};
use agentgraph_eval::row::read_rows;
use agentgraph_eval::summary::{markdown, seconds, summarize, Metric};
use agentgraph_eval::{evaluate_pairs, html, model_label, BuilderGraph, EvalOptions, Limits, Row};
use agentgraph_n8n::client::{N8nClient, URL_ENV};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `agentgraph eval`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    cmd: Option<EvalCmd>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Subcommand)]
enum EvalCmd {
    /// Compare two result files: per metric and graph, per case; exit 1 when B regresses on a
    /// watched metric.
    Compare {
        /// The reference results.
        a: PathBuf,
        /// The results to check.
        b: PathBuf,
        /// The metrics whose drop is a regression: done, non_empty, structure_valid,
        /// configuration_valid, checklist, checklist_pass, n8n_accepts, executes.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "non_empty,structure_valid"
        )]
        metric: Vec<String>,
    },
    /// Summarize a result file (and draw it with --html).
    Report {
        /// The results.
        file: PathBuf,
        /// Write an HTML page with the table and each workflow drawn.
        #[arg(long)]
        html: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// A shipped prompt set: quick (default), scenarios, n8n-default, n8n-basic,
    /// n8n-synthetic, control-flow, instance (for --graph instance-ai).
    #[arg(long, conflicts_with = "cases")]
    set: Option<String>,
    /// A cases file (JSON Lines, the format of eval/prompts/*.jsonl).
    #[arg(long)]
    cases: Option<PathBuf>,
    /// `single`, `multi`, `instance-ai` or a graph file; repeat to run several.
    #[arg(long = "graph", default_value = "single")]
    graphs: Vec<String>,
    /// Cases running at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    concurrency: u64,
    /// Seconds a case may run before it is cancelled (and recorded as timed out).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    case_timeout: u64,
    /// Tokens (prompt and completion) a case may use before it is cancelled.
    #[arg(long)]
    max_tokens_per_case: Option<u64>,
    /// Where the result rows go (default: eval-<set>-<unix time>.jsonl).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the evaluation whose rows --out holds: run only the (case, graph) pairs it
    /// lacks, append their rows, and summarize them all. The file's rows must come from the
    /// same set and model.
    #[arg(long, requires = "out")]
    resume: bool,
    /// Also write an HTML page with the table and each workflow drawn.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Run only the first N cases.
    #[arg(long)]
    limit: Option<usize>,
    /// Run only these case ids.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Do not ask n8n even when $N8N_API_URL is set.
    #[arg(long)]
    no_n8n: bool,
    /// List the sets (or the cases of --set / --cases) and stop.
    #[arg(long)]
    list: bool,
    /// Show each tool call while cases run.
    #[arg(long)]
    verbose: bool,
}

/// `agentgraph eval …`.
pub async fn eval(ctx: &Ctx, args: EvalArgs) -> u8 {
    match args.cmd {
        Some(EvalCmd::Compare { a, b, metric }) => compare_files(ctx, &a, &b, &metric),
        Some(EvalCmd::Report { file, html }) => match read_rows(&file) {
            Ok(rows) => {
                print_summary(ctx, &rows);
                write_html(html.as_deref(), &file.display().to_string(), &rows)
            }
            Err(e) => fail(e, exit::USAGE),
        },
        None => run(ctx, args.run).await,
    }
}

fn compare_files(ctx: &Ctx, a: &Path, b: &Path, metrics: &[String]) -> u8 {
    let watched: Result<Vec<Metric>, String> = metrics.iter().map(|m| Metric::parse(m)).collect();
    let watched = match watched {
        Ok(w) if !w.is_empty() => w,
        Ok(_) => DEFAULT_WATCHED.to_vec(),
        Err(e) => return fail(e, exit::USAGE),
    };
    let (rows_a, rows_b) = match (read_rows(a), read_rows(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return fail(e, exit::USAGE),
    };
    let c = compare(&rows_a, &rows_b, &watched);
    if ctx.json {
        let regressions: Vec<serde_json::Value> = c
            .metrics
            .iter()
            .filter(|m| m.regressed)
            .map(|m| serde_json::json!({"graph": m.graph, "metric": m.metric.name(), "a": m.a, "b": m.b}))
            .collect();
        let cases: Vec<serde_json::Value> = c
            .cases
            .iter()
            .map(|d| serde_json::json!({"case": d.case, "graph": d.graph, "regressed": d.regressed,
                "changes": d.changes.iter().map(|(m, x, y)| serde_json::json!({"metric": m.name(), "a": x, "b": y})).collect::<Vec<_>>()}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"common": c.common, "regressed": c.regressed(), "regressions": regressions, "cases": cases})
        );
    } else {
        print!("{}", c.markdown());
        if c.regressed() {
            println!("\nB regresses on a watched metric.");
        }
    }
    if c.regressed() {
        exit::FAILED
    } else {
        exit::DONE
    }
}

/// The cases to run and the name rows carry for their set.
fn load_cases(args: &RunArgs) -> Result<(Vec<Case>, String), agentgraph_eval::EvalError> {
    let (all, set) = match &args.cases {
        Some(file) => {
            let name = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "cases".into());
            (cases::cases_file(file)?, name)
        }
        None => {
            let name = args.set.clone().unwrap_or_else(|| DEFAULT_SET.into());
            (cases::shipped_set(&name)?, name)
        }
    };
    Ok((cases::select(all, &set, &args.only, args.limit)?, set))
}

fn list(args: &RunArgs) -> u8 {
    if args.set.is_none() && args.cases.is_none() {
        for name in cases::set_names() {
            let n = cases::shipped_set(name).map(|c| c.len()).unwrap_or(0);
            println!("{name:14} {n:3} cases");
        }
        return exit::DONE;
    }
    match load_cases(args) {
        Ok((cases, _)) => {
            for c in cases {
                let offline = if c.instance.is_some() {
                    " [instance]"
                } else if c.offline.is_some() {
                    " [offline]"
                } else {
                    ""
                };
                let short: String = c.prompt.chars().take(90).collect();
                println!(
                    "{:26} {:>3} items{offline}  {short}",
                    c.id,
                    c.checklist.len()
                );
            }
            exit::DONE
        }
        Err(e) => fail(e, exit::USAGE),
    }
}

async fn run(ctx: &Ctx, args: RunArgs) -> u8 {
    if args.list {
        return list(&args);
    }
    let (cases, set) = match load_cases(&args) {
        Ok(x) => x,
        Err(e) => return fail(e, exit::USAGE),
    };
    let n8n = if args.no_n8n || std::env::var(URL_ENV).map_or(true, |v| v.trim().is_empty()) {
        None
    } else {
        match N8nClient::from_env_or(None, None) {
            Ok(c) => Some(c),
            Err(e) => return fail(e, exit::USAGE),
        }
    };
    // The catalogue order of `chat` (--catalogue, $AGENTGRAPH_N8N_CATALOGUE, fetched,
    // instance, built-in), said on start.
    let source = agentgraph_n8n::CatalogueSource::Auto;
    eprintln!("{}", source.resolve().start_line());
    let builder = crate::n8n_builder(source);
    let registry = builder.registry();
    let mut graphs = Vec::new();
    for arg in &args.graphs {
        let path = match graph_file(arg) {
            Ok(p) => p,
            Err(e) => return fail(e, exit::USAGE),
        };
        match BuilderGraph::compile(arg, &path, &registry) {
            Ok(g) => graphs.push(g),
            Err(e) => return fail(e, exit::USAGE),
        }
    }
    let catalogue = match tokio::task::spawn_blocking(move || builder.catalogue()).await {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot load the catalogue: {e}"), exit::FAILED),
    };
    let out_path = args.out.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        PathBuf::from(format!("eval-{set}-{secs}.jsonl"))
    });
    let model = model_label();
    let earlier = match earlier_rows(&args, &out_path, &set, &model) {
        Ok(rows) => rows,
        Err(e) => return fail(e, exit::USAGE),
    };
    let opened = if args.resume {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&out_path)
    } else {
        std::fs::File::create(&out_path)
    };
    let mut out = match opened {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            return fail(
                format!("cannot write {}: {e}", out_path.display()),
                exit::USAGE,
            )
        }
    };
    let opts = EvalOptions {
        set: set.clone(),
        model,
        concurrency: usize::try_from(args.concurrency).unwrap_or(1),
        limits: Limits {
            case_timeout: Duration::from_secs(args.case_timeout),
            max_tokens: args.max_tokens_per_case,
            ..Limits::default()
        },
        n8n,
        verbose: args.verbose.then(|| {
            std::sync::Arc::new(|case: &str, graph: &str, title: &str| {
                eprintln!("  [{case} · {graph}] {title}");
            }) as agentgraph_eval::runner::Verbose
        }),
    };
    // Case by case, each graph in turn; with --resume, the pairs the file holds are left out.
    let pairs: Vec<(&Case, &BuilderGraph)> = cases
        .iter()
        .flat_map(|case| graphs.iter().map(move |graph| (case, graph)))
        .filter(|(case, graph)| {
            !earlier
                .iter()
                .any(|r| r.case == case.id && r.graph == graph.label)
        })
        .collect();
    let total = pairs.len();
    let resumed = if args.resume {
        format!(
            " ({} already in the file)",
            cases.len() * graphs.len() - total
        )
    } else {
        String::new()
    };
    eprintln!(
        "eval: {} case(s) of {set} × {} graph(s) = {total} run(s){resumed}; model {}; catalogue of {} node types; n8n {}; rows → {}",
        cases.len(),
        graphs.len(),
        opts.model,
        catalogue.len(),
        opts.n8n.as_ref().map_or("not asked".to_string(), |c| c.base_url().to_string()),
        out_path.display()
    );
    let mut finished = 0;
    let mut write_failed = false;
    let new_rows = evaluate_pairs(&pairs, catalogue, &opts, |row| {
        finished += 1;
        eprintln!("[{finished}/{total}] {}", progress_line(row));
        let written = writeln!(out, "{}", row.to_line()).and_then(|_| out.flush());
        if let Err(e) = written {
            if !std::mem::replace(&mut write_failed, true) {
                eprintln!("error: cannot write {}: {e}", out_path.display());
            }
        }
    })
    .await;
    drop(out);
    let rows = in_case_order(&cases, &graphs, earlier, new_rows);
    print_summary(ctx, &rows);
    if write_failed {
        return exit::FAILED;
    }
    write_html(
        args.html.as_deref(),
        &format!("agentgraph eval: {set}"),
        &rows,
    )
}

/// With `--resume`, the rows `out` already holds (none when it does not exist yet), refused
/// when they come from another set or model: one file summarizes one evaluation.
fn earlier_rows(args: &RunArgs, out: &Path, set: &str, model: &str) -> Result<Vec<Row>, String> {
    if !args.resume || !out.exists() {
        return Ok(Vec::new());
    }
    let rows = read_rows(out).map_err(|e| e.to_string())?;
    if let Some(r) = rows.iter().find(|r| r.set != set || r.model != model) {
        return Err(format!(
            "cannot resume {}: its row for {} · {} comes from set {} and model {}, this run is set \
             {set} and model {model}; write to another file",
            out.display(),
            r.case,
            r.graph,
            r.set,
            r.model
        ));
    }
    Ok(rows)
}

/// The earlier rows and the new ones, in case then graph order (rows of pairs this run does
/// not name last, as the file had them).
fn in_case_order(
    cases: &[Case],
    graphs: &[BuilderGraph],
    earlier: Vec<Row>,
    new: Vec<Row>,
) -> Vec<Row> {
    let rank = |r: &Row| {
        let case = cases
            .iter()
            .position(|c| c.id == r.case)
            .unwrap_or(usize::MAX);
        let graph = graphs
            .iter()
            .position(|g| g.label == r.graph)
            .unwrap_or(usize::MAX);
        (case, graph)
    };
    let mut rows: Vec<Row> = earlier.into_iter().chain(new).collect();
    rows.sort_by_key(rank);
    rows
}

/// The graph file `--graph` names: `single`, `multi`, `instance-ai` (Instance AI's
/// orchestrator) or a path.
fn graph_file(arg: &str) -> Result<PathBuf, String> {
    if arg == crate::chat::INSTANCE_NAME {
        let path = PathBuf::from("graphs").join(crate::chat::INSTANCE_FILE);
        return if path.exists() {
            Ok(path)
        } else {
            Err(format!(
                "{} not found: run eval from the repository root, or pass --graph PATH",
                path.display()
            ))
        };
    }
    agentgraph_n8n::builder_graph(arg)
}

/// One line per finished case, on stderr.
fn progress_line(row: &Row) -> String {
    let s = &row.scores.workflow;
    let tick = |b: bool| if b { "✓" } else { "✗" };
    if let Some(instance) = &row.scores.instance {
        let checks = &instance.checks;
        let failed: Vec<&str> = checks
            .items
            .iter()
            .filter(|i| !i.pass)
            .map(|i| i.item.as_str())
            .collect();
        let mut line = format!(
            "{} ({}): {}, checks {}/{}{}, {} question(s) answered, {}, {} requests, {} tokens, {} tool calls",
            row.case,
            row.graph,
            row.status.as_str(),
            checks.passed,
            checks.total,
            if failed.is_empty() { String::new() } else { format!(" (missed: {})", failed.join("; ")) },
            instance.answered.len(),
            seconds(row.wall_ms),
            row.model_requests,
            row.tokens(),
            row.tool_calls
        );
        for e in row.error.iter().chain(&instance.error) {
            let short: String = e.chars().take(200).collect();
            line.push_str(&format!("\n    {short}"));
        }
        return line;
    }
    let mut line = format!(
        "{} ({}): {}, {} nodes, structure {}, configuration {}, checklist {}/{}",
        row.case,
        row.graph,
        row.status.as_str(),
        s.nodes,
        tick(s.structure.valid),
        tick(s.configuration.valid),
        s.checklist.passed,
        s.checklist.total
    );
    if let Some(n) = &row.scores.n8n {
        if let Some(a) = n.accepts {
            line.push_str(&format!(", n8n accepts {}", tick(a)));
        }
        if let Some(x) = n.executes {
            line.push_str(&format!(", executes {}", tick(x)));
        }
    }
    line.push_str(&format!(
        ", {}, {} requests, {} tokens, {} tool calls",
        seconds(row.wall_ms),
        row.model_requests,
        row.tokens(),
        row.tool_calls
    ));
    if let Some(e) = &row.error {
        let short: String = e.chars().take(200).collect();
        line.push_str(&format!("\n    {short}"));
    }
    line
}

fn print_summary(ctx: &Ctx, rows: &[Row]) {
    let summaries = summarize(rows);
    if ctx.json {
        let v: Vec<serde_json::Value> = summaries.iter().map(|s| s.to_json()).collect();
        println!("{}", serde_json::Value::Array(v));
    } else {
        if let Some(model) = rows.first().map(|r| r.model.as_str()) {
            println!("model: {model}\n");
        }
        print!("{}", markdown(&summaries));
    }
}

fn write_html(path: Option<&Path>, title: &str, rows: &[Row]) -> u8 {
    let Some(path) = path else {
        return exit::DONE;
    };
    match std::fs::write(path, html::page(title, rows)) {
        Ok(()) => {
            eprintln!("page → {}", path.display());
            exit::DONE
        }
        Err(e) => fail(
            format!("cannot write {}: {e}", path.display()),
            exit::FAILED,
        ),
    }
}
