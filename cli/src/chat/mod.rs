//! `agentgraph chat`: an interactive session with the workflow builder on one thread.
//!
//! Each line read from stdin is one turn: the graph runs with it as a human message, tool
//! progress and the assistant's text (root-level `agent` or `responder` nodes only: internal
//! subgraph agents are not shown) stream live, and the workflow is printed after the turn (and
//! written to `--out`). Commands: `/graph single|multi|PATH` switches the graph for the next
//! turns (both builder graphs share one state schema), `/undo` goes back to the state before
//! the last turn (the next turn forks from there), `/quit` (or end of input) ends; `/compact`
//! and `/clear` are ordinary messages the graphs handle. Started with `--thread` on a thread
//! whose last turn was cut short (a crash), the turn is finished first. With `--n8n` the
//! workflow is deployed to n8n after each turn that changes it ([`deploy`]).

mod deploy;

use crate::exit;
use crate::graph::Ctx;
use agentgraph_n8n::deploy::{deployed_id, ID_CHANNEL};
use agentgraph_n8n::{builder_graph, workflow_of, workflow_summary};
use agentgraph_runtime::{
    CheckpointId, CompiledGraph, Event, EventKind, ListQuery, Mode, Modes, RunConfig,
    SledCheckpointer, Source,
};
use agentgraph_server::{open_run, Opening};
use deploy::{Link, When};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// Options of `agentgraph chat`.
#[derive(clap::Args)]
pub struct ChatOpts {
    /// `single`, `multi` (graphs/workflow-builder/{single,multi}-agent.ag under the current
    /// directory) or a graph file.
    #[arg(long, default_value = "single")]
    graph: String,
    /// The thread (default: a new one); an existing thread continues where it stopped.
    #[arg(long, value_parser = crate::graph::thread_id)]
    thread: Option<String>,
    /// Write the workflow (pretty JSON) here after every turn.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Deploy the workflow to n8n after each turn that changes it: the n8n instance at
    /// $N8N_API_URL with the API key $N8N_API_KEY.
    #[arg(long)]
    n8n: bool,
    /// The n8n instance's address (instead of $N8N_API_URL); implies --n8n.
    #[arg(long, value_name = "URL")]
    n8n_url: Option<String>,
    #[command(flatten)]
    pub catalogue: crate::catalogue::CatalogueOpt,
}

struct Session<'a> {
    ctx: &'a Ctx,
    graph: CompiledGraph,
    graph_name: PathBuf,
    store: Arc<SledCheckpointer>,
    thread: String,
    out: Option<PathBuf>,
    /// Where the next turn forks from (set by `/undo`).
    fork_at: Option<CheckpointId>,
    /// The n8n instance the workflow is deployed to (`--n8n`).
    n8n: Option<Link>,
}

/// `agentgraph chat`.
pub async fn chat(ctx: &Ctx, opts: ChatOpts) -> u8 {
    let path = match builder_graph(&opts.graph) {
        Ok(p) => p,
        Err(e) => return crate::graph::fail(e, exit::USAGE),
    };
    let n8n = if opts.n8n || opts.n8n_url.is_some() {
        match Link::from_env(opts.n8n_url.as_deref()) {
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
    let graph = match crate::graph::load(ctx, &path)
        .and_then(|g| crate::graph::attach_storage(g, &store))
    {
        Ok(g) => g,
        Err(c) => return c,
    };
    let thread = opts.thread.clone().unwrap_or_else(new_thread_id);
    let mut s = Session {
        ctx,
        graph,
        graph_name: path,
        store,
        thread,
        out: opts.out,
        fork_at: None,
        n8n,
    };
    s.say(
        json!({"event": "thread", "thread": s.thread, "graph": s.graph_name}),
        || format!("thread: {} (graph {})", s.thread, s.graph_name.display()),
    );
    if opts.thread.is_some() {
        match s.graph.get_state(&s.thread, None).await {
            Ok(Some(state)) => {
                s.adopt_id(&state.values);
                if !state.next.is_empty() {
                    s.say(json!({"event": "resuming"}), || {
                        "resuming the interrupted turn…".to_string()
                    });
                    if s.turn(Opening::Continue).await {
                        s.deploy(When::Changed).await;
                    }
                } else {
                    s.show_workflow(workflow_of(&state.values));
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("error: {e}"),
        }
    }
    let tty = std::io::stdin().is_terminal();
    loop {
        if tty {
            print!("> ");
            let _ = std::io::stdout().flush();
        }
        let line = match tokio::task::spawn_blocking(|| {
            let mut buf = String::new();
            std::io::stdin().read_line(&mut buf).map(|n| (n, buf))
        })
        .await
        {
            Ok(Ok((0, _))) => break,
            Ok(Ok((_, buf))) => buf,
            Ok(Err(e)) => {
                eprintln!("error: cannot read stdin: {e}");
                break;
            }
            Err(_) => break,
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line {
            "/quit" | "/exit" => break,
            "/undo" => s.undo().await,
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
                let input = json!({"messages": [{"type": "human", "content": content}]});
                if s.turn(Opening::Input(input)).await {
                    s.deploy(When::Changed).await;
                }
            }
        }
    }
    exit::DONE
}

/// What `/help` prints.
const COMMANDS: &str = "commands: /compact (summarize the conversation), /clear (forget it), \
/graph single|multi|FILE (switch architecture), /undo (back to before the last turn), \
/deploy (send the workflow to n8n now), /activate (deploy and activate it in n8n), \
/open (the n8n editor URL), /help, /quit; /deploy, /activate and /open need --n8n";

impl Session<'_> {
    /// Prints one line: JSON with `--json`, else the text.
    fn say(&self, v: Value, text: impl FnOnce() -> String) {
        if self.ctx.json {
            println!("{v}");
        } else {
            println!("{}", text());
        }
    }

    fn switch(&mut self, arg: &str) {
        let path = match builder_graph(arg) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return;
            }
        };
        match crate::graph::load(self.ctx, &path)
            .and_then(|g| crate::graph::attach_storage(g, &self.store))
        {
            Ok(g) => {
                if g.schema().version() != self.graph.schema().version() {
                    eprintln!(
                        "warning: {} has another state schema than {}; the thread may not fit it",
                        path.display(),
                        self.graph_name.display()
                    );
                }
                self.graph = g;
                self.graph_name = path;
                self.say(json!({"event": "graph", "graph": self.graph_name}), || {
                    format!("graph: {}", self.graph_name.display())
                });
            }
            Err(_) => eprintln!(
                "error: cannot load {}; keeping the current graph",
                path.display()
            ),
        }
    }

    /// Runs one turn, streaming progress and the assistant's text; `true` when it finished.
    async fn turn(&mut self, opening: Opening) -> bool {
        let mut config = RunConfig::thread(self.thread.clone())
            .modes(Modes::of(&[Mode::Custom, Mode::Messages]));
        if let Some(at) = self.fork_at.take() {
            config = config.at(at);
        }
        let run = match open_run(&self.graph, opening, config).await {
            Ok(run) => run,
            Err(e) => {
                self.turn_failed(&e);
                return false;
            }
        };
        let mut stream = self.graph.stream(run.input, run.config);
        let mut mid_line = false;
        // Message ids already started, so each answer begins on its own line.
        let mut started: HashSet<String> = HashSet::new();
        // Message ids streamed to the user (the rest of this turn's answers is printed after).
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(ev) = stream.next().await {
            if let (EventKind::Messages(chunk), true) = (&ev.kind, shown(&ev)) {
                if let Some(id) = chunk.get("id").and_then(Value::as_str) {
                    seen.insert(id.to_string());
                }
            }
            if self.ctx.json {
                if shown(&ev) {
                    println!("{}", serde_json::to_string(&ev).unwrap_or_default());
                }
                continue;
            }
            match &ev.kind {
                EventKind::Custom(data) => {
                    if std::mem::take(&mut mid_line) {
                        println!();
                    }
                    let text = data
                        .get("title")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| data.to_string());
                    println!("  · {text}");
                }
                EventKind::Messages(chunk) if shown(&ev) => {
                    if let Some(t) = chunk.get("delta").and_then(Value::as_str) {
                        let id = chunk.get("id").and_then(Value::as_str).unwrap_or_default();
                        if started.insert(id.to_string()) && std::mem::take(&mut mid_line) {
                            println!();
                        }
                        print!("{t}");
                        let _ = std::io::stdout().flush();
                        mid_line = true;
                    }
                }
                _ => {}
            }
        }
        if mid_line {
            println!();
        }
        match stream.finish().await {
            Ok(out) => {
                // Answers a graph wrote without a model (a set node saying that nothing was
                // built, say) were not streamed: shown now.
                for text in unstreamed_answers(&out.values, &seen) {
                    if self.ctx.json {
                        println!("{}", json!({"event": "answer", "content": text}));
                    } else {
                        println!("{text}");
                    }
                }
                if self.ctx.json {
                    println!("{}", json!({"event": "turn_end", "status": out.status}));
                }
                self.show_workflow(workflow_of(&out.values));
                true
            }
            Err(e) => {
                self.turn_failed(&e);
                false
            }
        }
    }

    /// Says a turn failed (the thread keeps its last checkpoint).
    fn turn_failed(&self, e: &dyn std::fmt::Display) {
        if self.ctx.json {
            println!("{}", json!({"event": "error", "error": e.to_string()}));
        } else {
            eprintln!("error: {e}");
            println!("(the turn failed; the thread keeps its last checkpoint)");
        }
    }

    /// Prints the workflow and writes `--out`.
    fn show_workflow(&self, wf: &Value) {
        if self.ctx.json {
            println!("{}", json!({"event": "workflow", "workflow": wf}));
        } else {
            print!("{}", workflow_summary(wf));
        }
        if let Some(out) = &self.out {
            let text = serde_json::to_string_pretty(wf).unwrap_or_default();
            if let Err(e) = std::fs::write(out, text + "\n") {
                eprintln!("error: cannot write {}: {e}", out.display());
            }
        }
    }

    /// `/undo`: the next turn forks from the checkpoint before the last turn's input.
    async fn undo(&mut self) {
        let history = match self.graph.history(&self.thread, ListQuery::default()).await {
            Ok(h) => h,
            Err(e) => {
                eprintln!("error: {e}");
                return;
            }
        };
        let by_id: HashMap<CheckpointId, &agentgraph_runtime::HistoryEntry> =
            history.iter().map(|h| (h.checkpoint_id, h)).collect();
        // Walk back from where the next turn would start to the last turn's input.
        let mut cur = self
            .fork_at
            .or_else(|| history.first().map(|h| h.checkpoint_id));
        let mut target = None;
        let mut first_turn = false;
        while let Some(id) = cur {
            let Some(h) = by_id.get(&id) else { break };
            if h.source == Source::Input {
                target = h.parent_id;
                first_turn = target.is_none();
                break;
            }
            cur = h.parent_id;
        }
        if first_turn {
            // Before the first turn there is no checkpoint to go back to: the conversation
            // goes on from nothing on a new thread (the old one keeps its turn).
            let old = std::mem::replace(&mut self.thread, new_thread_id());
            self.fork_at = None;
            let thread = self.thread.clone();
            self.say(
                json!({"event": "undo", "ok": true, "thread": thread, "previous_thread": old}),
                || format!("undone: back to an empty conversation on new thread {thread} ({old} keeps the turn)"),
            );
            self.show_workflow(&json!({"nodes": [], "connections": {}}));
            if let Some(id) = self.n8n.as_mut().and_then(|link| {
                let id = link.id.take();
                link.reset();
                id
            }) {
                self.say(
                    json!({"event": "n8n", "action": "unlinked", "workflow_id": id, "previous_thread": old}),
                    || format!("n8n: workflow {id} stays with thread {old}; this thread gets its own at its first deploy"),
                );
            }
            return;
        }
        let Some(target) = target else {
            self.say(json!({"event": "undo", "ok": false}), || {
                "nothing to undo".to_string()
            });
            return;
        };
        match self.graph.get_state(&self.thread, Some(target)).await {
            Ok(Some(state)) => {
                // Branch the thread there now, so the undo also holds for a later session
                // (an update that plans nothing); if that fails, the next turn forks. The n8n
                // workflow id is not history: a deploy the undone turn made carries over.
                let carried = self.current_n8n_id().await.filter(|id| {
                    deployed_id(&state.values) != Some(id.as_str())
                        && self.graph.schema().channel(ID_CHANNEL).is_some()
                });
                let values = carried.map_or(Value::Null, |id| json!({ ID_CHANNEL: id }));
                match self
                    .graph
                    .update_state(&self.thread, Some(target), values, Some("END"))
                    .await
                {
                    Ok(_) => self.fork_at = None,
                    Err(_) => self.fork_at = Some(target),
                }
                self.say(
                    json!({"event": "undo", "ok": true, "checkpoint_id": target}),
                    || format!("undone: back to checkpoint {target}"),
                );
                self.show_workflow(workflow_of(&state.values));
                self.deploy(When::Changed).await;
            }
            Ok(None) => eprintln!("error: checkpoint {target} not found"),
            Err(e) => eprintln!("error: {e}"),
        }
    }
}

impl Session<'_> {
    /// The thread's n8n workflow: the session's, else the one its latest state records.
    async fn current_n8n_id(&self) -> Option<String> {
        if let Some(id) = self.n8n.as_ref().and_then(|l| l.id.clone()) {
            return Some(id);
        }
        let state = self.graph.get_state(&self.thread, None).await.ok()??;
        deployed_id(&state.values).map(str::to_string)
    }
}

/// Whether an event is shown to the user: tool progress from anywhere, the text of the root
/// graph's `agent` or `responder`.
fn shown(ev: &Event) -> bool {
    match ev.kind {
        EventKind::Custom(_) => true,
        EventKind::Messages(_) => {
            ev.ns.is_empty() && matches!(ev.node.as_deref(), Some("agent" | "responder"))
        }
        _ => false,
    }
}

/// The text of the AI messages after the last human message whose ids are not in `streamed`.
fn unstreamed_answers<'a>(values: &'a Value, streamed: &HashSet<String>) -> Vec<&'a str> {
    let messages = values
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let kind = |m: &Value| m.get("type").and_then(Value::as_str) == Some("human");
    let Some(last_human) = messages.iter().rposition(kind) else {
        return Vec::new();
    };
    messages[last_human + 1..]
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("ai"))
        .filter(|m| {
            m.get("id")
                .and_then(Value::as_str)
                .is_none_or(|id| !streamed.contains(id))
        })
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .collect()
}

fn new_thread_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("t-{}", &id[..12])
}
