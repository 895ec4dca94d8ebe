//! `agentgraph chat` as people use it in a terminal (a tmux pane, read back as the screen shows
//! it), from a folder that has no `graphs/` (the graphs built into the binary), with the offline
//! demo (the shipped scripts, the built-in catalogue). tmux is needed: the tests skip without it
//! (and fail under `CI=true`; .ci/run installs it). The piped runs are in `chat_piped.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub(crate) const PROMPT: &str =
    "Every Monday, summarize my unread Gmail with AI and email me the summary";
pub(crate) const CHANGE: &str = "Make it run on Tuesday instead";
/// How long a screen may take to show what is waited for (a debug build on a busy machine).
const PATIENCE: Duration = Duration::from_secs(90);

/// The six nodes of the demo's workflow, with their types.
pub(crate) const DEMO_NODES: [&str; 6] = [
    "Every Monday Morning [n8n-nodes-base.scheduleTrigger]",
    "Workflow Configuration [n8n-nodes-base.set]",
    "Get Unread Emails [n8n-nodes-base.gmail]",
    "Summarize Emails [@n8n/n8n-nodes-langchain.chainLlm]",
    "OpenAI Chat Model [@n8n/n8n-nodes-langchain.lmChatOpenAi]",
    "Send Summary [n8n-nodes-base.gmail]",
];

/// A folder to run in (no `graphs/`), its store and its data folder.
pub(crate) struct Place {
    pub(crate) dir: tempfile::TempDir,
}

impl Place {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("cwd")).unwrap();
        Place { dir }
    }
    pub(crate) fn cwd(&self) -> PathBuf {
        self.dir.path().join("cwd")
    }
    pub(crate) fn db(&self) -> PathBuf {
        self.dir.path().join("db")
    }
    pub(crate) fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
    /// The environment of a demo run: scripted provider, shipped scripts, built-in catalogue.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AGENTGRAPH_PROVIDER".into(), "scripted".into()),
            (
                "AGENTGRAPH_DATA_DIR".into(),
                self.data().display().to_string(),
            ),
            ("HOME".into(), self.dir.path().display().to_string()),
            (
                "PATH".into(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("TERM".into(), "xterm-256color".into()),
        ]
    }
    /// `agentgraph ARGS` piped, from the folder without graphs, with `input` on stdin.
    pub(crate) fn piped(&self, args: &[&str], input: &str) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
        c.current_dir(self.cwd()).env_clear().args(args);
        for (k, v) in self.env() {
            c.env(k, v);
        }
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the agentgraph binary runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

/// A tmux server of its own with one 120×40 pane running a command; killed when dropped.
struct Pane {
    tmux: PathBuf,
    socket: String,
}

static PANES: AtomicUsize = AtomicUsize::new(0);

impl Pane {
    /// Runs `agentgraph ARGS` in the pane from `place`'s folder; after it ends the pane says
    /// `CHAT-EXITED <code>`.
    fn start(tmux: PathBuf, place: &Place, args: &[String], extra: &[(&str, &str)]) -> Self {
        let socket = format!(
            "agentgraph-it-{}-{}",
            std::process::id(),
            PANES.fetch_add(1, Ordering::SeqCst)
        );
        let env: Vec<String> = place
            .env()
            .into_iter()
            .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
            .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let words: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let cmd = format!(
            "env -i {} '{}' {}; echo CHAT-EXITED $?; sleep 600",
            env.join(" "),
            env!("CARGO_BIN_EXE_agentgraph"),
            words.join(" ")
        );
        let ok = Command::new(&tmux)
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "120", "-y", "40", "-c"])
            .arg(place.cwd())
            .arg(cmd)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Pane { tmux, socket }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }

    /// Types `keys` (tmux key names, or text sent literally with `literal`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }

    fn text(&self, text: &str) {
        assert!(self
            .tmux(&["send-keys", "-t", "0", "-l", text])
            .status
            .success());
    }

    /// The screen as shown (with `escapes`, its colour codes too), the scrollback included.
    /// A pane that is gone (its shell ended, and with it tmux) reads as what tmux said.
    fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "0", "-S", "-200"];
        if escapes {
            args.push("-e");
        }
        let o = self.tmux(&args);
        if o.status.success() {
            String::from_utf8_lossy(&o.stdout).into_owned()
        } else {
            format!(
                "(no screen: tmux capture-pane failed: {})",
                String::from_utf8_lossy(&o.stderr).trim()
            )
        }
    }

    /// Waits until the screen satisfies `done`; returns it (panics with it after PATIENCE).
    fn wait(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen(false);
            if done(&s) {
                return s;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the screen never showed {what}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

fn tmux() -> Option<PathBuf> {
    agentgraph_test_support::require_program(
        &["tmux"],
        &[],
        "tmux (apt-get install tmux), to drive chat in a terminal",
    )
}

/// The last line that is not blank.
fn last_line(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

#[test]
fn a_terminal_session_edits_lines_collapses_progress_and_resumes_with_its_graph() {
    let Some(tmux) = tmux() else { return };
    let place = Place::new();
    let args: Vec<String> = ["--db", &place.db().display().to_string(), "chat"]
        .map(String::from)
        .to_vec();
    let pane = Pane::start(tmux, &place, &args, &[]);

    // The banner: thread, graph (built in: this folder has no graphs/), the demo's limits.
    let screen = pane.wait("the prompt", |s| last_line(s).starts_with("single-agent ›"));
    assert!(screen.contains("single-agent (built in)"), "{screen}");
    assert!(
        screen.contains("scripted (offline demo, no model)"),
        "{screen}"
    );
    assert!(screen.contains("fixed script, not a model"), "{screen}");
    assert!(screen.contains("builds one example workflow"), "{screen}");
    let thread = screen
        .lines()
        .find_map(|l| l.trim().strip_prefix("thread"))
        .map(|t| t.trim().to_string())
        .expect("the banner names the thread");
    assert!(thread.starts_with("t-"), "{screen}");

    // Turn 1: one summary line for the one agent, no per-call lines; the diff lists the nodes.
    pane.text(PROMPT);
    pane.keys(&["Enter"]);
    let screen = pane.wait("the end of turn 1", |s| {
        s.contains("workflow: Weekly Email Summary · 6 nodes · 5 connections")
    });
    let summaries: Vec<&str> = screen.lines().filter(|l| l.starts_with("✓ ")).collect();
    assert_eq!(summaries.len(), 1, "{screen}");
    assert!(
        summaries[0].starts_with("✓ agent 1 search_nodes · 6 add_nodes · 5 connect_nodes"),
        "{screen}"
    );
    assert!(!screen.contains("Running add_nodes"), "{screen}");
    assert!(!screen.contains("add_nodes completed"), "{screen}");
    assert!(
        screen.contains("changes: +6 nodes, +5 connections"),
        "{screen}"
    );
    for node in DEMO_NODES {
        assert!(screen.contains(&format!("  + {node}")), "{node}:\n{screen}");
    }
    // The answer's markdown is rendered: no `**` left.
    assert!(
        screen.contains("I built Weekly Email Summary: every Monday"),
        "{screen}"
    );
    assert!(!screen.contains("**"), "{screen}");

    // `/graph multi`, then ↑ brings it back on the prompt line.
    pane.text("/graph multi");
    pane.keys(&["Enter"]);
    pane.wait("the multi-agent prompt", |s| {
        last_line(s).starts_with("multi-agent ›")
    });
    pane.keys(&["Up"]);
    pane.wait("the recalled line", |s| {
        last_line(s).trim_end() == "multi-agent › /graph multi"
    });
    pane.keys(&["C-u"]);
    pane.text(CHANGE);
    pane.keys(&["Enter"]);
    let screen = pane.wait("the end of turn 2", |s| s.contains("changes: ~1 node"));
    let turn2 = screen.split(CHANGE).last().unwrap();
    let summaries: Vec<&str> = turn2.lines().filter(|l| l.starts_with("✓ ")).collect();
    assert_eq!(
        summaries.len(),
        1,
        "one line for the configurator:\n{turn2}"
    );
    assert!(
        summaries[0]
            .starts_with("✓ configurator 1 update_node_parameters · 1 validate_configuration"),
        "{turn2}"
    );
    assert!(
        turn2.contains("~ Every Monday Morning: parameters.rule.interval[0].triggerAtDay[0]"),
        "{turn2}"
    );

    // Ctrl-C at the prompt: the thread and the command that resumes it; a second one ends.
    pane.keys(&["C-c"]);
    let screen = pane.wait("the resume command", |s| s.contains("resume with: "));
    let command = screen
        .lines()
        .find_map(|l| l.split("resume with: ").nth(1))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(
        command,
        format!(
            "agentgraph --db {} chat --thread {thread}",
            place.db().display()
        ),
        "{screen}"
    );
    assert!(screen.contains(&format!("thread {thread} ·")), "{screen}");
    pane.keys(&["C-c"]);
    pane.wait("the end of chat", |s| s.contains("CHAT-EXITED 0"));

    // The line history is kept in the data folder.
    let history = std::fs::read_to_string(place.data().join("chat-history")).unwrap();
    assert!(
        history.contains(PROMPT) && history.contains("/graph multi"),
        "{history}"
    );

    // The printed command continues the thread with the multi-agent graph: its banner says
    // so, it shows the Tuesday workflow, and the next turn runs the multi-agent graph.
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let o = place.piped(&words, "/compact\n");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.starts_with(&format!(
            "thread: {thread} (graph graphs/workflow-builder/multi-agent.ag, built in)\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("workflow: Weekly Email Summary (6 nodes)"),
        "{out}"
    );
    let listed = place.piped(&["--db", &place.db().display().to_string(), "threads"], "");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&thread) && l.contains("graphs/workflow-builder/multi-agent.ag")),
        "{listed}"
    );
}

/// A model server that takes requests and never answers (the model "thinks" for ever).
fn silent_model_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    format!("http://{addr}/v1")
}

#[test]
fn ctrl_c_cancels_a_running_turn_and_the_thread_keeps_its_message() {
    let Some(tmux) = tmux() else { return };
    let place = Place::new();
    let url = silent_model_server();
    let db = place.db().display().to_string();
    let args: Vec<String> = ["--db", &db, "chat", "--thread", "slow"]
        .map(String::from)
        .to_vec();
    let pane = Pane::start(
        tmux,
        &place,
        &args,
        &[
            ("AGENTGRAPH_PROVIDER", "openai"),
            ("OPENAI_BASE_URL", &url),
            ("OPENAI_API_KEY", "test-key"),
        ],
    );
    pane.wait("the prompt", |s| last_line(s).starts_with("single-agent ›"));
    pane.text("Post new RSS items to Slack");
    pane.keys(&["Enter"]);
    pane.wait("the spinner", |s| last_line(s).contains("thinking…"));
    pane.keys(&["C-c"]);
    let screen = pane.wait("the cancelled turn", |s| {
        s.contains("turn cancelled") && last_line(s).starts_with("single-agent ›")
    });
    // The spinner is gone, nothing else ended the session.
    assert!(!screen.contains("thinking…"), "{screen}");
    assert!(!screen.contains("CHAT-EXITED"), "{screen}");
    // Still at the prompt: a first Ctrl-C prints the resume command, the second one ends.
    pane.keys(&["C-c"]);
    pane.wait("the resume command", |s| {
        s.contains(&format!(
            "resume with: agentgraph --db {db} chat --thread slow"
        ))
    });
    pane.keys(&["C-c"]);
    pane.wait("the end of chat", |s| s.contains("CHAT-EXITED 0"));
    // The turn's input was checkpointed on the thread.
    let graph =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/workflow-builder/single-agent.ag");
    let o = place.piped(
        &[
            "--db",
            &db,
            "--json",
            "state",
            &graph.display().to_string(),
            "--thread",
            "slow",
        ],
        "",
    );
    let state: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let said: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(said, ["Post new RSS items to Slack"]);
}

/// A pasted block of several lines is one message (bracketed paste), not one turn per line.
#[test]
fn a_pasted_block_of_lines_is_one_message() {
    let Some(tmux) = tmux() else { return };
    let place = Place::new();
    let db = place.db().display().to_string();
    let args: Vec<String> = ["--db", &db, "chat", "--thread", "pasted"]
        .map(String::from)
        .to_vec();
    let pane = Pane::start(tmux, &place, &args, &[]);
    pane.wait("the prompt", |s| last_line(s).starts_with("single-agent ›"));
    let block = "Every Monday, summarize my unread Gmail\nwith AI and email me the summary";
    assert!(pane.tmux(&["set-buffer", block]).status.success());
    assert!(pane
        .tmux(&["paste-buffer", "-p", "-t", "0"])
        .status
        .success());
    pane.wait("the pasted block in the editor", |s| {
        s.contains("with AI and email me the summary")
    });
    pane.keys(&["Enter"]);
    pane.wait("the end of the turn", |s| {
        s.contains("workflow: Weekly Email Summary · 6 nodes")
    });
    pane.keys(&["C-d"]);
    pane.wait("the end of chat", |s| s.contains("CHAT-EXITED 0"));
    let graph =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/workflow-builder/single-agent.ag");
    let o = place.piped(
        &[
            "--db",
            &db,
            "--json",
            "state",
            &graph.display().to_string(),
            "--thread",
            "pasted",
        ],
        "",
    );
    let state: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let said: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(said, [block]);
}

/// Instance AI in a terminal: a background task's status after the turn, a question asked at
/// the prompt and answered there, `/tasks` until the task is done.
#[test]
fn instance_ai_in_a_terminal_shows_its_tasks_and_asks_at_the_prompt() {
    let Some(tmux) = tmux() else { return };
    let place = Place::new();
    let scripts = place.dir.path().join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    std::fs::write(
        scripts.join("demo.json"),
        crate::chat_instance::script().to_string(),
    )
    .unwrap();
    let args: Vec<String> = [
        "--db",
        &place.db().display().to_string(),
        "chat",
        "--graph",
        "instance-ai",
    ]
    .map(String::from)
    .to_vec();
    let dir = scripts.display().to_string();
    let pane = Pane::start(tmux, &place, &args, &[("AGENTGRAPH_SCRIPT_DIR", &dir)]);
    let prompt = |s: &str| last_line(s).starts_with("orchestrator ›");
    pane.wait("the prompt", prompt);

    pane.text("zq-start a task");
    pane.keys(&["Enter"]);
    let screen = pane.wait("the task's status", |s| {
        s.contains("Started it.") && s.contains("- notes [") && prompt(s)
    });
    assert!(
        screen.contains("Background tasks of this thread (by id):"),
        "{screen}"
    );

    pane.text("zq-ask me");
    pane.keys(&["Enter"]);
    pane.wait("the question", |s| {
        s.contains("Which colour? (red / blue)") && prompt(s)
    });
    pane.text("blue");
    pane.keys(&["Enter"]);
    pane.wait("the answer", |s| s.contains("You said blue.") && prompt(s));

    // The task ends on its own: /tasks shows it as it is now.
    let start = Instant::now();
    loop {
        pane.text("/tasks");
        pane.keys(&["Enter"]);
        std::thread::sleep(Duration::from_millis(200));
        if pane.screen(false).contains("notes [done] Summary ready.") {
            break;
        }
        assert!(start.elapsed() < PATIENCE, "{}", pane.screen(false));
    }
    pane.text("/quit");
    pane.keys(&["Enter"]);
    pane.wait("the end", |s| s.contains("CHAT-EXITED 0"));
}
