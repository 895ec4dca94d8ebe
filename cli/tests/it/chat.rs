//! `agentgraph chat` end to end with the scripted model on the real n8n catalogue
//! (`AGENTGRAPH_N8N_CATALOGUE`; the tests skip without it, and fail under `CI=true`): a session that
//! hot-swaps from the single-agent to the multi-agent graph, `/undo`, and a crash mid-turn
//! followed by a restart that finishes the turn.
//!
//! The scripts are in `cli/tests/chat/weekly/`: `single.json` builds the weekly email summary
//! workflow; `multi.json` holds the multi-agent turns that change it (Tuesday, then
//! Wednesday). The scripted model keeps one cursor per thread and script file under
//! `<db>/scripted/`, so a later process on the same thread continues its script.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const PROMPT: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn catalogue_dir() -> Option<PathBuf> {
    agentgraph_test_support::n8n_catalogue()
}

fn scripts() -> PathBuf {
    root().join("cli/tests/chat/weekly")
}

/// `agentgraph --db DB chat ARGS`, run from the repository root (where `single`/`multi`
/// resolve), with the scripted model.
fn command(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    c.current_dir(root())
        .arg("--db")
        .arg(db)
        .arg("chat")
        .args(args)
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .env("AGENTGRAPH_SCRIPT_DIR", scripts())
        .env("AGENTGRAPH_N8N_CATALOGUE", catalogue_dir().unwrap())
        .env_remove("AGENTGRAPH_SCRIPT_STATE");
    c
}

/// Runs a chat session with `input` on stdin; returns its output (it must succeed).
fn session(db: &Path, args: &[&str], input: &str) -> Output {
    let mut child = command(db, args)
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
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The node types (sorted) and the typed connections by node type (sorted) of a workflow.
fn shape(wf: &Value) -> (Vec<String>, Vec<String>) {
    let nodes = wf["nodes"].as_array().expect("nodes");
    let type_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n["name"] == name)
            .and_then(|n| n["type"].as_str())
            .unwrap_or("?")
            .to_string()
    };
    let mut types: Vec<String> = nodes
        .iter()
        .map(|n| n["type"].as_str().unwrap_or("?").to_string())
        .collect();
    types.sort();
    let mut edges = Vec::new();
    for (source, kinds) in wf["connections"].as_object().expect("connections") {
        for (kind, outputs) in kinds.as_object().unwrap() {
            for output in outputs.as_array().into_iter().flatten() {
                for t in output.as_array().into_iter().flatten() {
                    edges.push(format!(
                        "{} -{kind}-> {}",
                        type_of(source),
                        type_of(t["node"].as_str().unwrap_or("?"))
                    ));
                }
            }
        }
    }
    edges.sort();
    (types, edges)
}

fn trigger_days(wf: &Value) -> Value {
    let trigger = wf["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "n8n-nodes-base.scheduleTrigger")
        .expect("a schedule trigger");
    trigger["parameters"]["rule"]["interval"][0]["triggerAtDay"].clone()
}

fn expected_shape() -> (Vec<String>, Vec<String>) {
    let mut types: Vec<String> = [
        "n8n-nodes-base.scheduleTrigger",
        "n8n-nodes-base.set",
        "n8n-nodes-base.gmail",
        "@n8n/n8n-nodes-langchain.chainLlm",
        "@n8n/n8n-nodes-langchain.lmChatOpenAi",
        "n8n-nodes-base.gmail",
    ]
    .map(String::from)
    .to_vec();
    types.sort();
    let mut edges: Vec<String> = [
        "n8n-nodes-base.scheduleTrigger -main-> n8n-nodes-base.set",
        "n8n-nodes-base.set -main-> n8n-nodes-base.gmail",
        "n8n-nodes-base.gmail -main-> @n8n/n8n-nodes-langchain.chainLlm",
        "@n8n/n8n-nodes-langchain.lmChatOpenAi -ai_languageModel-> @n8n/n8n-nodes-langchain.chainLlm",
        "@n8n/n8n-nodes-langchain.chainLlm -main-> n8n-nodes-base.gmail",
    ]
    .map(String::from)
    .to_vec();
    edges.sort();
    (types, edges)
}

macro_rules! need_catalogue {
    () => {
        if catalogue_dir().is_none() {
            return;
        }
    };
}

#[test]
fn a_session_builds_with_the_single_agent_then_changes_with_the_multi_agent_graph() {
    need_catalogue!();
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let o = session(
        db.path(),
        &["--thread", "swap", "--out", out.to_str().unwrap()],
        &format!("{PROMPT}\n/graph multi\nMake it run on Tuesday instead\n/quit\n"),
    );
    let text = stdout(&o);
    // Turn 1 (single agent): tool progress, the agent's answer, the workflow.
    assert!(text.contains("· Running search_nodes"), "{text}");
    assert!(text.contains("· Running connect_nodes"), "{text}");
    assert!(text.contains("I built **Weekly Email Summary**"), "{text}");
    assert!(
        text.contains("workflow: Weekly Email Summary (6 nodes)"),
        "{text}"
    );
    assert!(
        text.contains("Every Monday Morning → Workflow Configuration (main)"),
        "{text}"
    );
    assert!(
        text.contains("OpenAI Chat Model → Summarize Emails (ai_languageModel)"),
        "{text}"
    );
    // The switch, then turn 2 (multi-agent): the configurator's tool progress and the
    // responder's text are shown, the configurator's own messages are not.
    assert!(
        text.contains("graph: graphs/workflow-builder/multi-agent.ag"),
        "{text}"
    );
    let turn2 = text
        .split("graph: graphs/workflow-builder/multi-agent.ag")
        .nth(1)
        .unwrap();
    assert!(
        turn2.contains("· Running update_node_parameters"),
        "{turn2}"
    );
    assert!(
        turn2.contains("· Running validate_configuration"),
        "{turn2}"
    );
    assert!(turn2.contains("now runs every Tuesday at 8:00"), "{turn2}");
    assert!(!turn2.contains("INTERNAL configurator note"), "{turn2}");
    assert!(!turn2.contains("Moving the schedule to Tuesday"), "{turn2}");
    // --out holds the changed workflow: the same nodes, the trigger on Tuesday.
    let wf = read_json(&out);
    assert_eq!(shape(&wf), expected_shape());
    assert_eq!(wf["name"], "Weekly Email Summary");
    assert_eq!(trigger_days(&wf), serde_json::json!([2]));
}

#[test]
fn undo_restores_the_previous_turn_and_the_next_turn_forks_from_there() {
    need_catalogue!();
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let args = ["--thread", "undo", "--out", out.to_str().unwrap()];
    // Turn 1 in a first process.
    session(db.path(), &args, &format!("{PROMPT}\n"));
    let turn1 = read_json(&out);
    assert_eq!(trigger_days(&turn1), serde_json::json!([1]));
    // A later process on the same thread: turn 2 with the multi-agent graph, then /undo.
    let o = session(
        db.path(),
        &args,
        "/graph multi\nMake it run on Tuesday instead\n/undo\n",
    );
    let text = stdout(&o);
    assert!(!text.contains("resuming"), "{text}");
    assert!(text.contains("undone: back to checkpoint"), "{text}");
    assert_eq!(read_json(&out), turn1, "/undo restores turn 1's workflow");
    // The next turn starts from turn 1's state (the script's next turn moves the trigger to
    // Wednesday), and the undone turn is gone from the conversation.
    let o = session(
        db.path(),
        &args,
        "/graph multi\nMake it run on Wednesday instead\n",
    );
    let text = stdout(&o);
    assert!(text.contains("now runs every Wednesday"), "{text}");
    let wf = read_json(&out);
    assert_eq!(shape(&wf), expected_shape());
    assert_eq!(trigger_days(&wf), serde_json::json!([3]));
    let state = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .current_dir(root())
        .arg("--db")
        .arg(db.path())
        .args([
            "--json",
            "state",
            "graphs/workflow-builder/multi-agent.ag",
            "--thread",
            "undo",
        ])
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .env("AGENTGRAPH_SCRIPT_DIR", scripts())
        .env("AGENTGRAPH_N8N_CATALOGUE", catalogue_dir().unwrap())
        .output()
        .unwrap();
    let state: Value = serde_json::from_slice(&state.stdout).expect("state is JSON");
    let said: Vec<String> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"] == "human")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        said,
        [
            PROMPT.to_string(),
            "Make it run on Wednesday instead".to_string()
        ]
    );
}

#[test]
fn a_crashed_turn_is_finished_by_the_next_chat_on_the_thread() {
    need_catalogue!();
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let args = ["--thread", "crash", "--out", out.to_str().unwrap()];
    let mut child = command(db.path(), &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{PROMPT}").unwrap();
    // Kill the process as soon as the connect phase shows its first tool progress.
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut killed = false;
    for line in reader.lines() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("· Running connect_nodes") {
            child.kill().unwrap();
            killed = true;
            break;
        }
    }
    let _ = child.wait();
    drop(stdin);
    assert!(killed, "no connect progress before the end:\n{seen}");
    assert!(!out.exists(), "the turn ended before the kill:\n{seen}");
    // A new process on the thread, with nothing to say: it finishes the turn.
    let o = session(db.path(), &args, "");
    let text = stdout(&o);
    assert!(text.contains("resuming the interrupted turn…"), "{text}");
    assert!(text.contains("I built **Weekly Email Summary**"), "{text}");
    let wf = read_json(&out);
    assert_eq!(shape(&wf), expected_shape());
    assert_eq!(wf["name"], "Weekly Email Summary");
    // The same as a run that was never interrupted.
    let fresh = tempfile::tempdir().unwrap();
    let fresh_out = fresh.path().join("workflow.json");
    session(
        fresh.path(),
        &["--out", fresh_out.to_str().unwrap()],
        &format!("{PROMPT}\n"),
    );
    assert_eq!(shape(&read_json(&fresh_out)), shape(&wf));
}

#[test]
fn a_mistyped_command_is_not_sent_to_the_model() {
    need_catalogue!();
    let db = tempfile::tempdir().unwrap();
    // The script's first answer is for a build request: a typo sent as a message would
    // consume it (or fail the turn).
    let o = session(db.path(), &["--thread", "typo"], "/compcat\n/help\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown command /compcat"), "{err}");
    assert!(
        err.contains("/compact (summarize the conversation)"),
        "{err}"
    );
    assert!(!stdout(&o).contains("(scripted"), "{}", stdout(&o));
    // Nothing ran on the thread.
    let threads = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .arg("threads")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&threads.stdout);
    assert!(!listed.contains("typo"), "{listed}");
}

/// `/undo` after the first turn goes back to an empty conversation on a new thread (there is
/// no checkpoint before the first turn); the old thread keeps its turn.
#[test]
fn undo_of_the_first_turn_starts_an_empty_thread() {
    need_catalogue!();
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let args = ["--thread", "first", "--out", out.to_str().unwrap()];
    let o = session(db.path(), &args, &format!("{PROMPT}\n/undo\n"));
    let text = stdout(&o);
    assert!(
        text.contains("undone: back to an empty conversation on new thread"),
        "{text}"
    );
    assert!(!text.contains("nothing to undo"), "{text}");
    assert_eq!(read_json(&out)["nodes"], serde_json::json!([]));
}
