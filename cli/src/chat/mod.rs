//! `agentgraph chat`: an interactive session with the workflow builder on one thread.
//!
//! Each line read is one turn: the graph runs with it as a human message, tool progress and
//! the assistant's text (root-level `agent` or `responder` nodes only: internal subgraph agents
//! are not shown) are shown as they come, then the workflow and what the turn changed in it
//! (also written to `--out`). On a terminal the line editor keeps a history, a spinner and one
//! line per agent show progress, the answer's markdown is rendered; piped, every line is plain
//! text ([`progress`], [`input`]). Commands: `/graph single|multi|PATH` switches the graph for
//! the next turns (both builder graphs share one state schema; the choice is recorded with the
//! thread, so `--thread` restores it), `/undo` goes back to the state before the last turn,
//! `/show` prints the workflow, `/quit` (or Ctrl-D) ends; `/compact` and `/clear` are ordinary
//! messages the graphs handle. Ctrl-C cancels a running turn (its steps so far are
//! checkpointed); at the prompt it prints the thread and the command that resumes it, and a
//! second Ctrl-C ends. Started with `--thread` on a thread whose last turn was cut short (a
//! crash), the turn is finished first. With `--n8n` the workflow is deployed to n8n after each
//! turn that changes it ([`deploy`]). The shipped graphs are found in `./graphs`, the
//! configured graphs folder, else the copy built into the binary ([`crate::graph::shipped`]).
//! `--graph instance-ai` runs Instance AI instead: its questions are answered at the prompt,
//! its plan and background tasks shown after each turn ([`instance`]).

mod banner;
mod deploy;
mod diff;
mod input;
mod instance;
/// How `--graph` names Instance AI, and its file under `graphs/`.
pub(crate) use instance::{FILE as INSTANCE_FILE, NAME as INSTANCE_NAME};
mod markdown;
mod progress;
mod session;

use crate::exit;
use crate::graph::shipped;
use crate::graph::Ctx;
use agentgraph_n8n::{workflow_of, BUILDER_GRAPHS};
use agentgraph_runtime::{CheckpointId, CompiledGraph, SledCheckpointer};
use agentgraph_server::Opening;
use deploy::{Link, When};
use input::{ChatPrompt, Input, Read};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The store `--db` names when not given (the resume command leaves it out).
pub const DEFAULT_DB: &str = "./.agentgraph";

/// Options of `agentgraph chat`.
#[derive(clap::Args)]
pub struct ChatOpts {
    /// `single` (the default), `multi` (graphs/workflow-builder/{single,multi}-agent.ag: in
    /// ./graphs, else the configured graphs folder, else the copy built into agentgraph),
    /// `instance-ai` (graphs/instance-ai/orchestrator.ag, found the same way) or a graph file.
    /// With --thread, the default is the graph the thread last used.
    #[arg(long)]
    graph: Option<String>,
    /// The thread (default: a new one); an existing thread continues where it stopped.
    #[arg(long, value_parser = crate::graph::thread_id)]
    thread: Option<String>,
    /// Write the workflow (pretty JSON) here after every turn.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Deploy the workflow to n8n after each turn that changes it: the n8n instance at
    /// $N8N_API_URL with the API key $N8N_API_KEY. With `--graph instance-ai`: the instance
    /// its tools work on (checked at the start; nothing is deployed).
    #[arg(long)]
    n8n: bool,
    /// The n8n instance's address (instead of $N8N_API_URL); implies --n8n.
    #[arg(long, value_name = "URL")]
    n8n_url: Option<String>,
    #[command(flatten)]
    pub catalogue: crate::catalogue::CatalogueOpt,
}

/// How output is drawn.
#[derive(Clone, Copy)]
pub(crate) struct Look {
    /// stdout (and stdin) are a terminal: line editor, spinners, rendered markdown.
    pub terminal: bool,
    /// ANSI colours (a terminal without `NO_COLOR`).
    pub color: bool,
}

impl Look {
    fn detect(json: bool) -> Self {
        let terminal = !json && std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Look {
            terminal,
            color: terminal && !no_color,
        }
    }
}

/// A graph found for a name or path.
pub(crate) struct Found {
    /// The file loaded.
    pub path: PathBuf,
    /// What is recorded with the thread and shown: `graphs/workflow-builder/…` for a shipped
    /// graph wherever it was found, else the path as given.
    pub record: PathBuf,
    /// Whether it is the copy built into the binary.
    pub built_in: bool,
}

/// The graph `arg` designates: `single`, `multi`, or a path; a missing `graphs/…` path that
/// agentgraph ships is found the way `single` and `multi` are.
pub(crate) fn find_graph(arg: &str) -> Result<Found, String> {
    let folder = crate::settings::graphs_folder();
    let shipped_rel = if BUILDER_GRAPHS.contains(&arg) {
        Some(PathBuf::from(format!("workflow-builder/{arg}-agent.ag")))
    } else if arg == instance::NAME {
        Some(PathBuf::from(instance::FILE))
    } else {
        let p = Path::new(arg);
        if p.is_file() {
            return Ok(Found {
                path: p.to_path_buf(),
                record: p.to_path_buf(),
                built_in: false,
            });
        }
        p.strip_prefix("graphs")
            .ok()
            .filter(|rel| shipped::contains(rel))
            .map(Path::to_path_buf)
    };
    let Some(rel) = shipped_rel else {
        return Err(format!("graph file {arg} not found"));
    };
    let (path, origin) = shipped::find(&rel, folder.as_deref())?;
    Ok(Found {
        path,
        record: Path::new("graphs").join(rel),
        built_in: origin == shipped::Origin::BuiltIn,
    })
}

/// The graph a chat starts with: `--graph`, else the one `--thread` last used, else `single`.
fn starting_graph(ctx: &Ctx, opts: &ChatOpts) -> Result<Found, String> {
    if let Some(g) = &opts.graph {
        return find_graph(g);
    }
    let recorded = opts
        .thread
        .as_deref()
        .and_then(|t| crate::threads_cmd::recorded_graph(&ctx.db, t));
    if let Some(r) = recorded {
        match find_graph(r.trim()) {
            Ok(found) => return Ok(found),
            Err(e) => eprintln!("warning: the thread's graph: {e}; using single"),
        }
    }
    find_graph("single")
}

pub(crate) struct Session<'a> {
    ctx: &'a Ctx,
    look: Look,
    graph: CompiledGraph,
    graph_name: PathBuf,
    /// The file loaded (the built-in copy's unpacked file for a built-in graph).
    file: PathBuf,
    /// Whether the graph is the built-in copy.
    built_in: bool,
    store: Arc<SledCheckpointer>,
    thread: String,
    out: Option<PathBuf>,
    /// Where the next turn forks from (set by `/undo`).
    fork_at: Option<CheckpointId>,
    /// The n8n instance the workflow is deployed to (`--n8n`).
    n8n: Option<Link>,
    /// Flags the resume command repeats (`--out`, `--n8n-url`).
    resume_flags: Vec<String>,
    /// Questions the thread waits for (Instance AI's confirmations, plan reviews, …).
    pending: Vec<agentgraph_runtime::Interrupt>,
}

/// Ctrl-C (SIGINT) heard from the moment it is made: made before a turn shows its spinner (or a
/// plain read starts), so a Ctrl-C that comes before the first poll, or between two polls while
/// events are handled, is kept for [`CtrlC::pressed`] instead of killing the process (the
/// handler is installed at once) or being lost. Dropped with its turn: a Ctrl-C of one turn
/// never cancels the next.
pub(crate) struct CtrlC {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl CtrlC {
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            let kind = tokio::signal::unix::SignalKind::interrupt();
            CtrlC {
                signal: tokio::signal::unix::signal(kind).ok(),
            }
        }
        #[cfg(not(unix))]
        CtrlC {}
    }

    /// Completes on the next Ctrl-C; never if its handler could not be installed.
    pub(crate) async fn pressed(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = self.signal.as_mut() {
            if signal.recv().await.is_some() {
                return;
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_ok() {
            return;
        }
        std::future::pending::<()>().await
    }
}

/// `agentgraph chat`.
pub async fn chat(ctx: &Ctx, opts: ChatOpts) -> u8 {
    let look = Look::detect(ctx.json);
    let catalogue = opts.catalogue.source().resolve().start_line();
    if !look.terminal {
        eprintln!("{catalogue}");
    }
    let found = match starting_graph(ctx, &opts) {
        Ok(f) => f,
        Err(e) => return crate::graph::fail(e, exit::USAGE),
    };
    let instance = instance::is_instance(&found.record);
    let n8n = if opts.n8n || opts.n8n_url.is_some() {
        match Link::from_env(opts.n8n_url.as_deref()) {
            // Instance AI's tools read the instance from the environment at each call; it
            // has no workflow to deploy.
            Ok(_) if instance => {
                if let Some(url) = &opts.n8n_url {
                    std::env::set_var("N8N_API_URL", url);
                }
                None
            }
            Ok(link) => {
                if let Some(hint) = link.catalogue_hint(&opts.catalogue.source().resolve().origin) {
                    eprintln!("{hint}");
                }
                Some(link)
            }
            Err(e) => return crate::graph::fail(e, exit::USAGE),
        }
    } else {
        None
    };
    // One store for the session: every graph it switches to shares it (sled locks its folder).
    let store = match crate::graph::store(ctx) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let graph = match crate::graph::load(ctx, &found.path)
        .and_then(|g| crate::graph::attach_storage(g, &store))
    {
        Ok(g) => g,
        Err(c) => return c,
    };
    let thread = opts.thread.clone().unwrap_or_else(session::new_thread_id);
    let mut resume_flags = Vec::new();
    if let Some(out) = &opts.out {
        resume_flags.extend(["--out".to_string(), out.display().to_string()]);
    }
    match &opts.n8n_url {
        Some(url) => resume_flags.extend(["--n8n-url".to_string(), url.clone()]),
        None if opts.n8n => resume_flags.push("--n8n".to_string()),
        None => {}
    }
    let mut s = Session {
        ctx,
        look,
        graph,
        graph_name: found.record,
        file: found.path.clone(),
        built_in: found.built_in,
        store,
        thread,
        out: opts.out,
        fork_at: None,
        n8n,
        resume_flags,
        pending: Vec::new(),
    };
    s.banner(&found.path, &catalogue);
    if opts.thread.is_some() {
        match s.graph.get_state(&s.thread, None).await {
            Ok(Some(state)) => {
                s.adopt_id(&state.values);
                if s.is_instance() && !state.interrupts.is_empty() {
                    // Instance AI waits for answers: asked at the prompt below.
                    s.pending = state.interrupts.clone();
                } else if !state.next.is_empty() {
                    s.say(json!({"event": "resuming"}), || {
                        "resuming the interrupted turn…".to_string()
                    });
                    if s.turn(Opening::Continue).await {
                        s.deploy(When::Changed).await;
                    }
                } else {
                    s.show_workflow(workflow_of(&state.values), None);
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("error: {e}"),
        }
    }
    let mut input = Input::open(look.terminal, look.color);
    if !s.pending.is_empty() {
        s.answer_questions(&mut input).await;
    }
    let mut interrupts = 0;
    loop {
        let prompt = ChatPrompt {
            graph: s.short_name(),
            color: look.color,
        };
        let line = match input.read(&prompt).await {
            Read::Line(l) => l,
            Read::Eof => break,
            Read::Interrupt => {
                interrupts += 1;
                s.resume_hint();
                // Piped input has no prompt to come back to; on a terminal a second one ends.
                if interrupts >= 2 || !look.terminal {
                    return exit::DONE;
                }
                println!("(Ctrl-C again or Ctrl-D to quit)");
                continue;
            }
        };
        interrupts = 0;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line {
            "/quit" | "/exit" => break,
            "/undo" => s.undo().await,
            "/show" => s.show_all().await,
            "/tasks" => println!("{}", instance::live_tasks(&s.thread)),
            "/deploy" => {
                s.deploy(When::Now).await;
            }
            "/activate" => s.activate().await,
            "/open" => s.open(),
            _ if line.starts_with("/graph") => {
                let arg = line["/graph".len()..].trim();
                s.switch(if arg.is_empty() { "single" } else { arg });
            }
            "/help" => eprintln!("{COMMANDS}"),
            // `/compact` and `/clear` are handled by the graph's start router; any other
            // slash word is most likely a typo, which the model should not get as a request.
            _ if line.starts_with('/')
                && !matches!(line.split_whitespace().next(), Some("/compact" | "/clear")) =>
            {
                let word = line.split_whitespace().next().unwrap_or(line);
                eprintln!("unknown command {word}\n{COMMANDS}");
            }
            _ => {
                // A rejection by n8n goes to the agent with the next request (not with the
                // `/compact` and `/clear` commands, which must stay the whole message).
                let content = match s.n8n.as_mut() {
                    Some(link) if !matches!(line, "/compact" | "/clear") => {
                        link.carry_finding(line)
                    }
                    _ => line.to_string(),
                };
                if s.demo_refuses(line).await {
                    continue;
                }
                let message = json!({"messages": [{"type": "human", "content": content}]});
                if s.turn(Opening::Input(message)).await && s.answer_questions(&mut input).await {
                    s.deploy(When::Changed).await;
                }
            }
        }
    }
    if look.terminal {
        s.resume_hint();
    }
    exit::DONE
}

/// What `/help` prints.
const COMMANDS: &str = "commands: /compact (summarize the conversation), /clear (forget it), \
/graph single|multi|FILE (switch architecture), /undo (back to before the last turn), \
/show (the whole workflow), /deploy (send the workflow to n8n now), /activate (deploy and activate it in n8n), \
/open (the n8n editor URL), /tasks (Instance AI's background tasks now), /help, /quit; \
/deploy, /activate and /open need --n8n";
