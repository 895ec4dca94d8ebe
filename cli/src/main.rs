//! `agentgraph`: run, resume and inspect `.ag` graphs on a sled store, check, format and draw
//! them, validate n8n workflow files, fetch the n8n node-type catalogue. Exit codes: 0 done, 1
//! run failed, 2 bad usage or a DSL error, 3 stopped at an interrupt.

mod catalogue;
mod chat;
mod completions;
mod eval_cmd;
mod fmt_cmd;
mod graph;
mod help;
mod inspect;
mod keys_cmd;
mod live;
mod lsp_cmd;
mod mcp_cmd;
mod n8n_cmd;
mod new_cmd;
mod run;
mod serve_auth;
mod serve_n8n;
mod serve_postgres;
mod settings;
mod store_cmd;
mod threads_cmd;
mod validate;

use clap::{FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes of interfaces.md.
pub mod exit {
    /// The run finished.
    pub const DONE: u8 = 0;
    /// The run failed (the error is printed; the state up to the last checkpoint is kept).
    pub const FAILED: u8 = 1;
    /// Bad usage or a DSL error.
    pub const USAGE: u8 = 2;
    /// The run stopped at an interrupt and waits for `resume`.
    pub const INTERRUPTED: u8 = 3;
}

#[derive(Parser)]
#[command(
    name = "agentgraph",
    version,
    about = "Run, inspect, check and draw agentgraph .ag graphs"
)]
struct Cli {
    /// The sled folder holding checkpoints.
    #[arg(long, global = true, default_value = "./.agentgraph")]
    db: PathBuf,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a run on a thread (a new thread id if none is given).
    Run {
        /// The graph file.
        graph: PathBuf,
        /// The input, a JSON object.
        #[arg(long, conflicts_with = "input_file")]
        input: Option<String>,
        /// Read the input from a file.
        #[arg(long)]
        input_file: Option<PathBuf>,
        #[command(flatten)]
        opts: run::RunOpts,
    },
    /// Continue an interrupted or crashed thread from its latest checkpoint.
    Resume {
        /// The graph file.
        graph: PathBuf,
        /// The answer to the pending interrupt (JSON); with several pending, an object
        /// `{"<interrupt id>": value, ...}` together with --by-id.
        #[arg(long)]
        value: Option<String>,
        /// `--value` is a map from interrupt id to answer.
        #[arg(long, requires = "value")]
        by_id: bool,
        #[command(flatten)]
        opts: run::RunOpts,
    },
    /// Continue from an older checkpoint: history branches there.
    Fork {
        /// The graph file.
        graph: PathBuf,
        /// The checkpoint to continue from.
        #[arg(long)]
        checkpoint: String,
        /// Values to write first (as the node that wrote that checkpoint).
        #[arg(long)]
        values: Option<String>,
        #[command(flatten)]
        opts: run::RunOpts,
    },
    /// The state at the latest (or a given) checkpoint.
    State {
        /// The graph file.
        graph: PathBuf,
        /// The thread.
        #[arg(long, value_parser = graph::thread_id)]
        thread: String,
        /// A checkpoint id (default: the latest).
        #[arg(long)]
        checkpoint: Option<String>,
    },
    /// Checkpoints of a thread, newest first, a page at a time (the command for the next page
    /// goes to stderr).
    History {
        /// The graph file.
        graph: PathBuf,
        /// The thread.
        #[arg(long, value_parser = graph::thread_id)]
        thread: String,
        /// At most this many (one page).
        #[arg(long, default_value_t = inspect::HISTORY_PAGE, conflicts_with = "all")]
        limit: usize,
        /// Only checkpoints older than this one (the next page).
        #[arg(long)]
        before: Option<String>,
        /// Every checkpoint, no paging.
        #[arg(long)]
        all: bool,
    },
    /// Write to the state as if a node had (a new checkpoint, source `update`).
    Update {
        /// The graph file.
        graph: PathBuf,
        /// The thread.
        #[arg(long, value_parser = graph::thread_id)]
        thread: String,
        /// The values, a JSON object.
        #[arg(long)]
        values: String,
        /// The node the update acts as (default: the node that wrote the latest checkpoint).
        #[arg(long)]
        as_node: Option<String>,
    },
    /// List the threads of the store: graph, status (done, interrupted, failed, pending), step
    /// and time of the latest checkpoint.
    Threads,
    /// Drop all but the newest N checkpoints of a thread (or of every thread).
    Prune {
        /// Only this thread.
        #[arg(long, value_parser = graph::thread_id)]
        thread: Option<String>,
        /// How many checkpoints to keep per thread and namespace (at least 1: the newest
        /// checkpoint is the thread's state).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        keep: u64,
    },
    /// Parse and check a graph; exit 0 when there is no error.
    Check {
        /// The graph file.
        graph: PathBuf,
    },
    /// Format .ag files canonically: files, or folders searched recursively.
    Fmt {
        /// Graph files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Change nothing; list the files that are not formatted (exit 1 if any).
        #[arg(long, conflicts_with = "diff")]
        check: bool,
        /// Change nothing; print a unified diff of what would change (exit 1 if anything).
        #[arg(long)]
        diff: bool,
    },
    /// Create a project folder: a graph, its model script and a test input with the expected
    /// output. Refuses an existing folder.
    New(new_cmd::NewArgs),
    /// Print a shell completion script.
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// The effective settings (agentgraph.toml, environment, flags) and where each came from.
    Config,
    /// Validate an n8n workflow file: every structure and configuration rule, printed as
    /// `file: node "X" [CODE] severity: message`; exit 1 when there are error findings, 2 for
    /// bad input. Uses the n8n catalogue in --catalogue, else $AGENTGRAPH_N8N_CATALOGUE (a
    /// directory laid out like n8n's packages), else the one `agentgraph catalogue fetch`
    /// stored, else the one `catalogue from-n8n` stored, else the built-in one. --json prints
    /// the report as JSON.
    Validate {
        /// The workflow JSON file.
        file: PathBuf,
        #[command(flatten)]
        catalogue: catalogue::CatalogueOpt,
    },
    /// The n8n node-type catalogue the builder, chat, serve and validate use: `fetch` it from
    /// npm, save a running n8n's (`from-n8n`), `show` which one is used and why.
    Catalogue {
        #[command(subcommand)]
        cmd: catalogue::CatalogueCmd,
    },
    /// An interactive session with the workflow builder: one line of stdin per turn, tool
    /// progress and the answer streamed live, the workflow shown after each turn; `/graph
    /// single|multi|PATH`, `/undo`, `/compact`, `/clear`, `/quit`; with `--n8n` the workflow
    /// is deployed to n8n after each turn that changes it (`/deploy`, `/activate`, `/open`).
    Chat {
        #[command(flatten)]
        opts: chat::ChatOpts,
    },
    /// Serve the graphs of a folder over HTTP with SSE events (see the README's "Serving over
    /// HTTP" section and docs/deploy.md): runs, replayable events, resume, cancel, state,
    /// history, threads. Logs go to stderr (default level `info`; `RUST_LOG` overrides).
    /// SIGTERM or Ctrl-C stops it gracefully: runs in flight are cancelled and checkpointed.
    Serve {
        /// The folder holding the graph files runs may name.
        #[arg(long, default_value = "graphs")]
        graphs: PathBuf,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080", value_parser = socket_addr)]
        addr: std::net::SocketAddr,
        #[command(flatten)]
        postgres: serve_postgres::PostgresOpts,
        /// Offer `POST /threads/{id}/n8n/deploy`, `POST /threads/{id}/n8n/activate` and `GET
        /// /threads/{id}/n8n` for the n8n instance at $N8N_API_URL (key $N8N_API_KEY).
        #[arg(long)]
        n8n: bool,
        /// The n8n instance's address (instead of $N8N_API_URL); implies --n8n.
        #[arg(long, value_name = "URL")]
        n8n_url: Option<String>,
        #[command(flatten)]
        catalogue: catalogue::CatalogueOpt,
        #[command(flatten)]
        auth: serve_auth::AuthOpts,
        /// When the checkpoints of a run that names no `durability` reach the disk: sync
        /// (before each next step), async (in the background; the run's end waits) or exit (one
        /// at the end of the run). See docs/deploy.md, "Side effects after a crash".
        #[arg(long, default_value = "sync", value_parser = |s: &str| s.parse::<agentgraph_runtime::Durability>())]
        durability: agentgraph_runtime::Durability,
    },
    /// The API keys `serve` accepts (`--db` folder): `keys create --name NAME [--scope admin]`
    /// prints a new key once, `keys list`, `keys revoke NAME|ID`. Once a key exists, requests
    /// need `Authorization: Bearer KEY` (see docs/deploy.md, "Security").
    Keys {
        #[command(subcommand)]
        cmd: keys_cmd::KeysCmd,
    },
    /// Care of the `--db` store: `store check` (which threads are readable), `store export
    /// [--out FILE] [--skip-damaged]` (every thread's checkpoints as JSON Lines), `store import
    /// FILE` (into a store that does not hold those threads).
    Store {
        #[command(subcommand)]
        cmd: store_cmd::StoreCmd,
    },
    /// Work with a running n8n (its address in $N8N_API_URL or --n8n-url, its API key in
    /// $N8N_API_KEY): `n8n run FILE|--thread ID` runs a workflow and prints each node's result
    /// (exit 0 it succeeded, 1 it failed, 2 n8n rejected it or bad usage).
    N8n {
        #[command(subcommand)]
        cmd: n8n_cmd::N8nCmd,
    },
    /// Run builder graphs over a prompt set and score every workflow (checklist,
    /// validators, and with $N8N_API_URL whether n8n accepts and runs it): `eval [--set
    /// NAME|--cases FILE] [--graph single|multi|PATH …]`; `eval compare A.jsonl B.jsonl` (exit
    /// 1 when B regresses), `eval report FILE`. See docs/eval.md.
    Eval(eval_cmd::EvalArgs),
    /// Serve the graphs of a folder as MCP tools (a call runs the graph on a new thread and
    /// returns its output channels; `resume` answers an interrupt), and with --builder-tools
    /// the workflow builder's tools over a workflow held per MCP session: over stdio, or
    /// streamable HTTP at http://ADDR/mcp with --http ADDR. See docs/mcp.md.
    Mcp(mcp_cmd::McpOpts),
    /// A language server for `.ag` files over stdio (diagnostics, hover, definitions,
    /// completion, formatting); see docs/editors.md.
    Lsp,
    /// Draw a graph as a diagram.
    Viz {
        /// The graph file.
        graph: PathBuf,
        /// `mermaid` or `dot`.
        #[arg(long, default_value = "mermaid")]
        format: String,
    },
}

/// Logs on stderr (stdout stays for results). `agentgraph serve` logs at `info` by default;
/// other commands log only when `RUST_LOG` is set. `RUST_LOG` (e.g. `warn`,
/// `agentgraph_server=debug`) overrides the default.
///
/// `serve` also times the runtime's spans for `GET /metrics`, whatever the log level, and any
/// command exports its spans over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the guard
/// returned sends what is buffered when `main` ends).
fn init_telemetry(serve: bool) -> Option<agentgraph_server::telemetry::otlp::OtlpGuard> {
    use agentgraph_server::telemetry::{otlp, MetricsLayer};
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => Some(tracing_subscriber::EnvFilter::new(v)),
        _ if serve => Some(tracing_subscriber::EnvFilter::new("info")),
        _ => None,
    };
    let (otlp, guard) = match otlp::layer() {
        Ok(Some((layer, guard))) => (Some(layer), Some(guard)),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("warning: traces are not exported: {e}");
            (None, None)
        }
    };
    if filter.is_none() && !serve && otlp.is_none() {
        return None;
    }
    let logs = filter.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
    });
    let metrics = serve.then(|| MetricsLayer.with_filter(MetricsLayer::filter()));
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(metrics)
        .with(otlp)
        .try_init();
    guard
}

fn main() -> ExitCode {
    let matches = help::command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Err(e) = settings::apply(&matches, &mut cli) {
        return ExitCode::from(graph::fail(e, exit::USAGE));
    }
    let _traces = init_telemetry(matches!(cli.cmd, Cmd::Serve { .. }));
    if prints_and_ends(&cli.cmd) {
        quiet_broken_pipe();
    }
    // Scripted models keep their per-thread cursors next to the checkpoints, so a thread
    // resumed by a later process continues its script (set before any thread starts).
    if std::env::var_os(agentgraph_dsl::agents::model::SCRIPT_STATE_VAR).is_none() {
        std::env::set_var(
            agentgraph_dsl::agents::model::SCRIPT_STATE_VAR,
            cli.db.join("scripted"),
        );
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::FAILED);
        }
    };
    let code = rt.block_on(dispatch(cli));
    // MCP servers the graphs started (child processes, HTTP sessions) end with the command.
    rt.block_on(agentgraph_mcp::Pool::global().shutdown());
    ExitCode::from(code)
}

/// Commands that print a report and end: piped into `head`, they end when the reader does.
fn prints_and_ends(cmd: &Cmd) -> bool {
    matches!(
        cmd,
        Cmd::State { .. }
            | Cmd::History { .. }
            | Cmd::Threads
            | Cmd::Check { .. }
            | Cmd::Fmt { .. }
            | Cmd::Viz { .. }
    )
}

/// Restores the default action of SIGPIPE (Rust ignores it, so `println!` panics on a closed
/// pipe): the process then ends quietly, as other command-line tools do, when its reader is gone.
fn quiet_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: called before any thread starts; SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The n8n workflow builder: its tools over the node-type catalogue of `source`, loaded only
/// when a graph uses them.
fn n8n_builder(source: agentgraph_n8n::CatalogueSource) -> std::sync::Arc<agentgraph_n8n::N8n> {
    let warn: agentgraph_n8n::FallbackHook = std::sync::Arc::new(|e| {
        eprintln!("warning: {e}; using the built-in node-type catalogue");
    });
    agentgraph_n8n::N8n::with_fallback_hook(source, Some(warn))
}

/// The builder's registry, for every command and `serve`.
fn registry(source: agentgraph_n8n::CatalogueSource) -> agentgraph_server::RegistryFactory {
    n8n_builder(source).registry_factory()
}

async fn dispatch(cli: Cli) -> u8 {
    // `chat` and `serve` take `--catalogue` and say on start which catalogue they use.
    let (source, announce) = match &cli.cmd {
        // `chat` names its catalogue in its banner.
        Cmd::Chat { opts } => (opts.catalogue.source(), false),
        Cmd::Serve { catalogue, .. } => (catalogue.source(), true),
        Cmd::Mcp(opts) => (opts.catalogue.source(), opts.builder_tools),
        _ => (agentgraph_n8n::CatalogueSource::Auto, false),
    };
    if announce {
        eprintln!("{}", source.resolve().start_line());
    }
    let ctx = graph::Ctx {
        db: cli.db,
        json: cli.json,
        registry: registry(source),
    };
    // Conversation memories live with the rest of the data, never in the current folder.
    agentgraph_dsl::agents::set_memory_dir(Some(ctx.db.join("memory")));
    match cli.cmd {
        Cmd::Run {
            graph,
            input,
            input_file,
            opts,
        } => run::run(&ctx, &graph, input, input_file, opts).await,
        Cmd::Resume {
            graph,
            value,
            by_id,
            opts,
        } => run::resume(&ctx, &graph, value, by_id, opts).await,
        Cmd::Fork {
            graph,
            checkpoint,
            values,
            opts,
        } => run::fork(&ctx, &graph, &checkpoint, values, opts).await,
        Cmd::State {
            graph,
            thread,
            checkpoint,
        } => inspect::state(&ctx, &graph, &thread, checkpoint).await,
        Cmd::History {
            graph,
            thread,
            limit,
            before,
            all,
        } => {
            let page = inspect::Page {
                limit: (!all).then_some(limit),
                before,
            };
            inspect::history(&ctx, &graph, &thread, page).await
        }
        Cmd::Update {
            graph,
            thread,
            values,
            as_node,
        } => inspect::update(&ctx, &graph, &thread, &values, as_node).await,
        Cmd::Threads => threads_cmd::threads(&ctx).await,
        Cmd::Prune { thread, keep } => {
            inspect::prune(&ctx, thread, usize::try_from(keep).unwrap_or(usize::MAX)).await
        }
        Cmd::Check { graph } => graph::check(&ctx, &graph),
        Cmd::Fmt { paths, check, diff } => fmt_cmd::fmt(&paths, fmt_cmd::Mode::of(check, diff)),
        Cmd::New(args) => new_cmd::new(&args),
        Cmd::Completions { shell } => completions::completions(shell),
        Cmd::Config => settings::show(ctx.json),
        Cmd::Chat { opts } => chat::chat(&ctx, opts).await,
        Cmd::N8n { cmd } => n8n_cmd::n8n(&ctx, cmd).await,
        Cmd::Eval(args) => eval_cmd::eval(&ctx, args).await,
        Cmd::Mcp(opts) => mcp_cmd::mcp(&ctx, opts).await,
        Cmd::Viz { graph, format } => graph::viz(&ctx, &graph, &format),
        Cmd::Lsp => lsp_cmd::lsp(&ctx).await,
        Cmd::Serve {
            graphs,
            addr,
            postgres,
            n8n,
            n8n_url,
            auth,
            durability,
            ..
        } => {
            let n8n = (n8n || n8n_url.is_some()).then_some(n8n_url);
            let serving = Serving {
                graphs,
                addr,
                postgres,
                n8n,
                auth,
                durability,
            };
            serve(&ctx, serving).await
        }
        Cmd::Keys { cmd } => keys_cmd::keys(&ctx.db, cmd, ctx.json),
        Cmd::Store { cmd } => store_cmd::store(&ctx, cmd).await,
        Cmd::Validate { file, catalogue } => {
            validate::validate(&file, catalogue.source(), ctx.json)
        }
        Cmd::Catalogue { cmd } => catalogue::run(cmd, ctx.json).await,
    }
}

/// What `agentgraph serve` was asked for. `n8n`: the deploy routes, with the instance's
/// address when given (else `$N8N_API_URL`).
struct Serving {
    graphs: PathBuf,
    addr: std::net::SocketAddr,
    postgres: serve_postgres::PostgresOpts,
    n8n: Option<Option<String>>,
    auth: serve_auth::AuthOpts,
    durability: agentgraph_runtime::Durability,
}

/// `agentgraph serve`: until SIGTERM or Ctrl-C, then a graceful shutdown (running runs are
/// cancelled and checkpoint; exit 0).
async fn serve(ctx: &graph::Ctx, serving: Serving) -> u8 {
    let addr = serving.addr;
    // The studio at `/`, the builder's chat page at `/chat`.
    let mut config = agentgraph_server::ServerConfig::new(serving.graphs, ctx.db.clone())
        .addr(addr)
        .durability(serving.durability)
        .registry(ctx.registry.clone())
        .studio()
        .page(agentgraph_server::Page::html(
            "/chat",
            agentgraph_n8n::CHAT_PAGE,
        ));
    if let Some(url) = serving.n8n {
        match agentgraph_n8n::client::N8nClient::from_env_or(url.as_deref(), None) {
            Ok(client) => {
                eprintln!("n8n deploy routes for {}", client.base_url());
                config = config.api_routes(serve_n8n::routes(client));
            }
            Err(e) => return graph::fail(e, exit::USAGE),
        }
    }
    config = match serving.auth.apply(config) {
        Ok(c) => c,
        Err(e) => return graph::fail(e, exit::USAGE),
    };
    config = match serve_postgres::configure(&serving.postgres, config, &ctx.db).await {
        Ok(c) => c,
        Err(e) => return graph::fail(e, exit::USAGE),
    };
    eprintln!("{}", serve_auth::describe(&config));
    let state = match agentgraph_server::ServerState::new(&config) {
        Ok(state) => state,
        Err(e) => return graph::fail(e, exit::FAILED),
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => return graph::fail(format!("cannot listen on {addr}: {e}"), exit::USAGE),
    };
    // The bound address, so `--addr 127.0.0.1:0` tells the caller which port it got.
    match listener.local_addr() {
        Ok(bound) => eprintln!("serving on http://{bound} (Ctrl-C or SIGTERM stops)"),
        Err(_) => eprintln!("serving on http://{addr} (Ctrl-C or SIGTERM stops)"),
    }
    let shutdown = async {
        stop_signal().await;
        tracing::info!("stopping: cancelling runs in flight so they checkpoint");
    };
    match agentgraph_server::serve_on(listener, state, shutdown).await {
        Ok(()) => exit::DONE,
        Err(e) => graph::fail(e, exit::FAILED),
    }
}

/// Completes on Ctrl-C (SIGINT) or, on unix, SIGTERM (what Docker, systemd and Kubernetes
/// send). If a handler cannot be installed, only the other signal stops the server.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM ({e}); only Ctrl-C stops the server");
                ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    ctrl_c().await;
}

/// Ctrl-C; never completes if its handler cannot be installed.
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Parses `--addr`: `IP:PORT` or `HOST:PORT` (`localhost:8080`), resolved now; an IPv4
/// address is preferred when the name has several.
fn socket_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| format!("`{s}` is not HOST:PORT or IP:PORT ({e})"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("`{s}` resolves to no address"))
}
