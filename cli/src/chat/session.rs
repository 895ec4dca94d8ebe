//! The session's work on its thread: switching graphs, running a turn (progress, answers, the
//! workflow and what the turn changed in it), `/undo`.

use super::banner;
use super::deploy::When;
use super::diff::WorkflowDiff;
use super::markdown;
use super::progress::{agent_of, Progress};
use super::{CtrlC, Session};
use agentgraph_n8n::deploy::{deployed_id, ID_CHANNEL};
use agentgraph_n8n::{workflow_of, workflow_summary};
use agentgraph_runtime::{
    CancellationToken, CheckpointId, Event, EventKind, ListQuery, Mode, Modes, RunConfig,
    RunStatus, Source,
};
use agentgraph_server::{open_run, Opening};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::Write;

impl Session<'_> {
    /// Prints one line: JSON with `--json`, else the text.
    pub(super) fn say(&self, v: Value, text: impl FnOnce() -> String) {
        if self.ctx.json {
            println!("{v}");
        } else {
            println!("{}", text());
        }
    }

    /// The banner: JSON `thread` event, plain lines, or the terminal's.
    pub(super) fn banner(&self, file: &std::path::Path, catalogue: &str) {
        if self.ctx.json {
            println!(
                "{}",
                json!({"event": "thread", "thread": self.thread, "graph": self.graph_name})
            );
            return;
        }
        let b = banner::Banner {
            thread: &self.thread,
            graph: file,
            label: &self.graph_name,
            built_in: self.built_in,
            catalogue,
        };
        if self.look.terminal {
            print!("{}", b.styled(self.look.color));
        } else {
            print!("{}", b.plain());
        }
        self.record_graph();
    }

    /// The graph's short name for the prompt (`single-agent`).
    pub(super) fn short_name(&self) -> String {
        self.graph_name
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "chat".to_string())
    }

    /// Records the graph with the thread, so `--thread` restores it.
    fn record_graph(&self) {
        crate::threads_cmd::record_graph(&self.ctx.db, &self.thread, &self.graph_name);
    }

    /// The thread and the command that continues it.
    pub(super) fn resume_hint(&self) {
        let cmd = banner::resume_command(&self.thread, &self.ctx.db, &self.resume_flags);
        if self.ctx.json {
            println!(
                "{}",
                json!({"event": "resume", "thread": self.thread, "command": cmd})
            );
            return;
        }
        let bold = nu_ansi_term::Style::new().bold();
        println!(
            "thread {} · resume with: {}",
            super::progress::paint(&self.thread, bold, self.look.color),
            super::progress::paint(&cmd, bold, self.look.color)
        );
    }

    pub(super) fn switch(&mut self, arg: &str) {
        let found = match super::find_graph(arg) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: {e}");
                return;
            }
        };
        match crate::graph::load(self.ctx, &found.path)
            .and_then(|g| crate::graph::attach_storage(g, &self.store))
        {
            Ok(g) => {
                if g.schema().version() != self.graph.schema().version() {
                    eprintln!(
                        "warning: {} has another state schema than {}; the thread may not fit it",
                        found.record.display(),
                        self.graph_name.display()
                    );
                }
                self.graph = g;
                self.graph_name = found.record;
                self.file = found.path;
                self.built_in = found.built_in;
                self.record_graph();
                self.say(json!({"event": "graph", "graph": self.graph_name}), || {
                    format!("graph: {}", self.graph_name.display())
                });
            }
            Err(_) => eprintln!(
                "error: cannot load {}; keeping the current graph",
                found.path.display()
            ),
        }
    }

    /// The state the next turn starts from (the fork point after `/undo`, else the latest).
    async fn starting_state(&self) -> Option<(CheckpointId, Value)> {
        let state = self
            .graph
            .get_state(&self.thread, self.fork_at)
            .await
            .ok()??;
        Some((state.checkpoint_id, state.values))
    }

    /// Runs one turn, showing progress and the assistant's text; `true` when it finished.
    pub(super) async fn turn(&mut self, opening: Opening) -> bool {
        let before = self.starting_state().await;
        let cancel = CancellationToken::new();
        let mut config = RunConfig::thread(self.thread.clone())
            .modes(Modes::of(&[Mode::Custom, Mode::Messages]))
            .cancel_with(cancel.clone());
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
        self.record_graph();
        // Listening before the spinner shows: a Ctrl-C as soon as it does cancels the turn.
        let mut ctrl_c = CtrlC::listen();
        let live = !self.ctx.json && self.look.terminal;
        let mut progress = if self.ctx.json {
            Progress::Plain
        } else {
            Progress::start(live, self.look.color)
        };
        let mut stream = self.graph.stream(run.input, run.config);
        let mut mid_line = false;
        // Message ids already started, so each answer begins on its own line.
        let mut started: HashSet<String> = HashSet::new();
        // Message ids streamed to the user (the rest of this turn's answers is printed after).
        let mut seen: HashSet<String> = HashSet::new();
        // On a terminal the answers are rendered once complete: their text by message id.
        let mut answers: Vec<(String, String)> = Vec::new();
        let mut cancelled = false;
        loop {
            let ev = tokio::select! {
                ev = stream.next() => ev,
                _ = ctrl_c.pressed(), if !cancelled => {
                    cancelled = true;
                    cancel.cancel();
                    if !self.ctx.json {
                        progress.cancelling();
                    }
                    continue;
                }
            };
            let Some(ev) = ev else { break };
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
                    progress.tool(&agent_of(&ev.ns, ev.node.as_deref()), data);
                }
                EventKind::Messages(chunk) if shown(&ev) => {
                    let Some(t) = chunk.get("delta").and_then(Value::as_str) else {
                        continue;
                    };
                    let id = chunk.get("id").and_then(Value::as_str).unwrap_or_default();
                    if live {
                        match answers.last_mut() {
                            Some((last, text)) if last == id => text.push_str(t),
                            _ => answers.push((id.to_string(), t.to_string())),
                        }
                        if let Some((_, text)) = answers.last() {
                            progress.writing(text);
                        }
                        continue;
                    }
                    if started.insert(id.to_string()) && std::mem::take(&mut mid_line) {
                        println!();
                    }
                    print!("{t}");
                    let _ = std::io::stdout().flush();
                    mid_line = true;
                }
                _ => {}
            }
        }
        if mid_line {
            println!();
        }
        let result = stream.finish().await;
        progress.finish(result.is_ok());
        for (_, text) in &answers {
            self.answer(text);
        }
        match result {
            Ok(out) => {
                // Answers a graph wrote without a model (a set node saying that nothing was
                // built, say) were not streamed: shown now.
                for text in unstreamed_answers(&out.values, &seen) {
                    if self.ctx.json {
                        println!("{}", json!({"event": "answer", "content": text}));
                    } else {
                        self.answer(text);
                    }
                }
                if self.ctx.json {
                    println!("{}", json!({"event": "turn_end", "status": out.status}));
                }
                if self.is_instance() {
                    // Instance AI: its questions are answered next; its plan and background
                    // tasks are what it has instead of a workflow.
                    if let RunStatus::Interrupted { interrupts, .. } = &out.status {
                        self.pending = interrupts.clone();
                    }
                    self.show_instance(&out.values);
                    return true;
                }
                let old = before.as_ref().map(|(_, v)| workflow_of(v).clone());
                self.show_workflow(workflow_of(&out.values), Some(old.as_ref()));
                true
            }
            Err(_) if cancelled => {
                self.say(json!({"event": "cancelled"}), || {
                    "turn cancelled: its steps so far are checkpointed; your next message starts a new turn".to_string()
                });
                false
            }
            Err(e) if banner::is_demo(&self.file) && e.to_string().contains("script `") => {
                // The demo's script has no answer for this request: said plainly, and the
                // thread goes back to where the turn started.
                if let Some((at, _)) = before {
                    if self
                        .graph
                        .update_state(&self.thread, Some(at), Value::Null, Some("END"))
                        .await
                        .is_err()
                    {
                        self.fork_at = Some(at);
                    }
                }
                self.say(
                    json!({"event": "demo_over", "message": banner::DEMO_OVER}),
                    || self.wrapped(banner::DEMO_OVER),
                );
                false
            }
            Err(e) => {
                self.turn_failed(&e);
                false
            }
        }
    }

    /// For the offline demo, a request its script has no answer for is not run: the user is
    /// told what the demo does instead (`true`).
    pub(super) async fn demo_refuses(&self, line: &str) -> bool {
        if !banner::is_demo(&self.file) {
            return false;
        }
        let nodes = self.starting_state().await.map_or(0, |(_, v)| {
            workflow_of(&v)["nodes"].as_array().map_or(0, Vec::len)
        });
        if banner::demo_answers(line, nodes) {
            return false;
        }
        self.say(
            json!({"event": "demo_over", "message": banner::DEMO_OVER}),
            || self.wrapped(banner::DEMO_OVER),
        );
        true
    }

    /// `text` wrapped to the terminal (as is when not a terminal).
    fn wrapped(&self, text: &str) -> String {
        if self.look.terminal {
            markdown::wrap(text, markdown::terminal_width())
        } else {
            text.to_string()
        }
    }

    /// Prints one of the assistant's answers: rendered on a terminal, as written otherwise.
    fn answer(&self, text: &str) {
        if self.look.terminal {
            let text = markdown::render(text, self.look.color);
            print!("\n{}", markdown::wrap(&text, markdown::terminal_width()));
        } else {
            println!("{text}");
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

    /// Prints the workflow (on a terminal: one line; `/show` prints it whole), what changed
    /// since `before` (when given: `Some(None)` is a thread that had none), and writes `--out`.
    pub(super) fn show_workflow(&self, wf: &Value, before: Option<Option<&Value>>) {
        let diff = before.map(|b| {
            let empty = json!({"nodes": [], "connections": {}});
            WorkflowDiff::between(b.unwrap_or(&empty), wf)
        });
        if self.ctx.json {
            println!("{}", json!({"event": "workflow", "workflow": wf}));
        } else if self.look.terminal {
            if let Some(d) = &diff {
                print!("\n{}", d.render(self.look.color));
            }
            let name = wf["name"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or("(unnamed)");
            let nodes = wf["nodes"].as_array().map_or(0, Vec::len);
            let links = super::diff::connections(wf).len();
            let line =
                format!("workflow: {name} · {nodes} nodes · {links} connections (/show prints it)");
            println!(
                "{}",
                super::progress::paint(&line, nu_ansi_term::Style::new().dimmed(), self.look.color)
            );
        } else {
            print!("{}", workflow_summary(wf));
            if let Some(d) = diff.filter(|d| !d.is_empty()) {
                print!("{}", d.render(false));
            }
        }
        if let Some(out) = &self.out {
            let text = serde_json::to_string_pretty(wf).unwrap_or_default();
            if let Err(e) = std::fs::write(out, text + "\n") {
                eprintln!("error: cannot write {}: {e}", out.display());
            }
        }
    }

    /// `/show`: the whole workflow.
    pub(super) async fn show_all(&self) {
        match self.starting_state().await {
            Some((_, values)) => print!("{}", workflow_summary(workflow_of(&values))),
            None => println!("no workflow yet"),
        }
    }

    /// `/undo`: the next turn forks from the checkpoint before the last turn's input.
    pub(super) async fn undo(&mut self) {
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
            self.show_workflow(&json!({"nodes": [], "connections": {}}), None);
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
                self.show_workflow(workflow_of(&state.values), None);
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

pub(super) fn new_thread_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("t-{}", &id[..12])
}
