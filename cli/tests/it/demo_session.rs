//! The offline demo of `docs/builder.md` ("A session") through `agentgraph chat`, with the
//! shipped demo scripts (`graphs/workflow-builder/scripts/demo/`) and the built-in catalogue, as
//! a newcomer gets it: the documented transcript word for word, then the workflow after every
//! turn for each order of the two graphs (single first then multi, multi from the start…),
//! `/undo`, `/compact` and `/clear`.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PROMPT: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";
const CHANGE: &str = "Make it run on Tuesday instead";
const MULTI: &str = "graphs/workflow-builder/multi-agent.ag";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`); without it the part of a test that
/// needs it is skipped (recorded, and a failure under `CI=true`).
fn real_catalogue() -> Option<PathBuf> {
    agentgraph_test_support::n8n_catalogue()
}

/// `agentgraph --db DB ARGS` from the repository root with the scripted demo as shipped: no
/// script folder override, the built-in catalogue unless `catalogue` is given.
fn command(db: &Path, args: &[&str], catalogue: Option<&Path>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    c.current_dir(root())
        .arg("--db")
        .arg(db)
        .args(args)
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .env("NO_COLOR", "1")
        .env_remove("AGENTGRAPH_SCRIPT_DIR")
        .env_remove("AGENTGRAPH_SCRIPT_STATE")
        .env_remove("AGENTGRAPH_N8N_CATALOGUE")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR);
    if let Some(dir) = catalogue {
        c.env("AGENTGRAPH_N8N_CATALOGUE", dir);
    }
    c
}

/// A `chat` session with `input` on stdin; every turn must succeed. Returns stdout.
fn chat(db: &Path, args: &[&str], input: &str, catalogue: Option<&Path>) -> String {
    let mut full = vec!["chat"];
    full.extend_from_slice(args);
    let mut child = command(db, &full, catalogue)
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
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    // Nothing on stderr but the line saying which catalogue is used.
    let catalogue_line = match catalogue {
        Some(dir) => format!(
            "catalogue: n8n node types from {} ($AGENTGRAPH_N8N_CATALOGUE)",
            dir.display()
        ),
        None => "catalogue: built-in compact catalogue (".to_string(),
    };
    assert!(
        o.status.success()
            && stderr.starts_with(&catalogue_line)
            && stderr.trim().lines().count() == 1
            && !stdout.contains("the turn failed"),
        "input:\n{input}\nexit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status.code()
    );
    stdout
}

/// The thread's state values (`agentgraph state --json`).
fn state(db: &Path, thread: &str) -> Value {
    let o = command(
        db,
        &[
            "--json",
            "state",
            "graphs/workflow-builder/single-agent.ag",
            "--thread",
            thread,
        ],
        None,
    )
    .output()
    .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "state is not JSON ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    v["values"].clone()
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The node types of a workflow, sorted.
fn node_types(wf: &Value) -> Vec<String> {
    let mut types: Vec<String> = wf["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["type"].as_str().unwrap_or("?").to_string())
        .collect();
    types.sort();
    types
}

fn expected_types() -> Vec<String> {
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
    types
}

/// The days the schedule trigger runs on.
fn trigger_days(wf: &Value) -> Value {
    let trigger = wf["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "n8n-nodes-base.scheduleTrigger")
        .expect("a schedule trigger");
    trigger["parameters"]["rule"]["interval"][0]["triggerAtDay"].clone()
}

/// The documented transcript: the command line, the typed lines (`> …`) and the printed ones.
fn documented_session() -> (String, Vec<String>, String) {
    let doc = std::fs::read_to_string(root().join("docs/builder.md")).unwrap();
    let section = doc
        .split("## A session")
        .nth(1)
        .expect("docs/builder.md has `## A session`");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a ```text block in `A session`");
    let mut lines = block.lines();
    let command = lines.next().unwrap_or_default().to_string();
    let (mut typed, mut printed) = (Vec::new(), String::new());
    for line in lines {
        match line.strip_prefix("> ") {
            Some(t) => typed.push(t.to_string()),
            None => {
                printed.push_str(line);
                printed.push('\n');
            }
        }
    }
    (command, typed, printed)
}

/// Replaces the random thread and checkpoint ids.
fn without_ids(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if let Some(rest) = l.strip_prefix("thread: ") {
                let graph = rest.split_once(' ').map(|(_, g)| g).unwrap_or_default();
                format!("thread: <id> {graph}")
            } else if l.starts_with("undone: back to checkpoint ") {
                "undone: back to checkpoint <id>".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    progress_as_sets(lines).join("\n")
}

/// Sorts each run of progress lines (`  · …`). The tool calls of one answer run concurrently,
/// and where one call's lines fall among another's depends on when each yields to the
/// runtime (tokio's per-task budget, the stream's buffer), not on the chat: each line must
/// be there as often as the documented session shows it, in any order within its run.
fn progress_as_sets(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    let mut run: Vec<String> = Vec::new();
    for line in lines {
        if line.starts_with("  · ") {
            run.push(line);
            continue;
        }
        run.sort();
        out.append(&mut run);
        out.push(line);
    }
    run.sort();
    out.append(&mut run);
    out
}

#[test]
fn the_documented_session_prints_what_docs_builder_md_shows() {
    let (command_line, typed, printed) = documented_session();
    assert_eq!(
        command_line,
        "$ AGENTGRAPH_PROVIDER=scripted agentgraph chat --out workflow.json"
    );
    assert_eq!(
        typed,
        [
            PROMPT,
            "/graph multi",
            CHANGE,
            "/undo",
            "/compact",
            "/clear",
            "/quit"
        ]
    );
    let input: String = typed.iter().map(|t| format!("{t}\n")).collect();
    // The built-in catalogue (the README's first command), and the real one when present.
    let mut catalogues = vec![None];
    if let Some(dir) = real_catalogue() {
        catalogues.push(Some(dir));
    }
    for catalogue in catalogues {
        let db = tempfile::tempdir().unwrap();
        let out = db.path().join("workflow.json");
        let stdout = chat(
            db.path(),
            &["--out", out.to_str().unwrap()],
            &input,
            catalogue.as_deref(),
        );
        assert_eq!(
            without_ids(&stdout),
            without_ids(&printed),
            "catalogue {catalogue:?}: chat printed\n{stdout}"
        );
        // After /undo the workflow is turn 1's again, and /compact and /clear kept it.
        let wf = read_json(&out);
        assert_eq!(node_types(&wf), expected_types());
        assert_eq!(trigger_days(&wf), json!([1]));
    }
}

/// The documented turns, one `chat` process each on one thread: the first turn with `first`,
/// the change with `second` (`single` or `multi`), then `/undo`, `/compact` and `/clear`.
fn play(first: &str, second: &str) {
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let out_s = out.to_str().unwrap().to_string();
    let graph = if first == "multi" {
        MULTI
    } else {
        "graphs/workflow-builder/single-agent.ag"
    };
    let args = ["--graph", graph, "--thread", "demo", "--out", &out_s];
    let path = db.path();

    // Turn 1: the workflow is built, named and configured for Mondays.
    let text = chat(path, &args, &format!("{PROMPT}\n"), None);
    assert!(text.contains("I built **Weekly Email Summary**"), "{text}");
    assert!(text.contains("· Running add_nodes"), "{text}");
    assert!(text.contains("· Running connect_nodes"), "{text}");
    assert_eq!(
        text.contains("· Running validate_configuration"),
        first == "multi",
        "{text}"
    );
    let turn1 = read_json(&out);
    assert_eq!(turn1["name"], "Weekly Email Summary");
    assert_eq!(node_types(&turn1), expected_types());
    assert_eq!(trigger_days(&turn1), json!([1]));

    // Turn 2, after a swap to `second`: only the schedule trigger changes, to Tuesday.
    let text = chat(path, &args, &format!("/graph {second}\n{CHANGE}\n"), None);
    assert!(
        text.contains(&format!("graph: graphs/workflow-builder/{second}-agent.ag")),
        "{text}"
    );
    assert!(text.contains("· Running update_node_parameters"), "{text}");
    assert!(!text.contains("· Running add_nodes"), "{text}");
    assert_eq!(
        text.contains("· Running validate_configuration"),
        second == "multi",
        "{text}"
    );
    assert!(text.contains("**📝 What's changed**"), "{text}");
    let turn2 = read_json(&out);
    assert_eq!(node_types(&turn2), expected_types());
    assert_eq!(trigger_days(&turn2), json!([2]));
    let unchanged = |wf: &Value| {
        let mut wf = wf.clone();
        for n in wf["nodes"].as_array_mut().unwrap() {
            if n["type"] == "n8n-nodes-base.scheduleTrigger" {
                n["parameters"] = Value::Null;
            }
        }
        wf
    };
    assert_eq!(
        unchanged(&turn2),
        unchanged(&turn1),
        "only the trigger changed"
    );

    // /undo: Monday again.
    let text = chat(path, &args, &format!("/graph {second}\n/undo\n"), None);
    assert!(text.contains("undone: back to checkpoint"), "{text}");
    assert_eq!(read_json(&out), turn1);

    // /compact: the model summarizes the conversation, which is replaced by the summary.
    chat(path, &args, &format!("/graph {second}\n/compact\n"), None);
    let s = state(path, "demo");
    let summary = s["summary"].as_str().unwrap_or_default();
    assert!(summary.starts_with("(scripted demo summary)"), "{s}");
    let messages = s["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{s}");
    assert_eq!(messages[0]["id"], "conversation_summary", "{s}");
    assert!(
        messages[0]["content"].as_str().unwrap().contains(summary),
        "{s}"
    );
    assert_eq!(s["workflow"], turn1);

    // /clear: the summary goes too; the workflow stays.
    chat(path, &args, &format!("/graph {second}\n/clear\n"), None);
    let s = state(path, "demo");
    assert_eq!(s["summary"], "", "{s}");
    assert_eq!(s["messages"], json!([]), "{s}");
    assert_eq!(s["workflow"], turn1);
    assert_eq!(read_json(&out), turn1);
}

#[test]
fn single_agent_first_then_the_multi_agent_graph() {
    play("single", "multi");
}

#[test]
fn multi_agent_graph_from_the_start_for_both_turns() {
    play("multi", "multi");
}

#[test]
fn multi_agent_first_then_the_single_agent() {
    play("multi", "single");
}

#[test]
fn single_agent_for_both_turns() {
    play("single", "single");
}
