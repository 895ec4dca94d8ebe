//! `agentgraph chat --graph instance-ai`, piped, on a scripted model: a background task
//! started and its status shown after the turn, a question the orchestrator asks answered at
//! the prompt (the turn resumes with the answer), and `/tasks`.

use crate::chat_tty::Place;
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

/// The orchestrator's script: one `match` group, since the task's own thread starts the
/// script from its first answer too (most specific matches first).
pub(crate) fn script() -> serde_json::Value {
    json!({"responses": [
        {"node": "task", "match": "summarise notes", "text": "Summary ready."},
        {"node": "agent", "match": "\"blue\"", "text": "You said blue."},
        {"node": "agent", "match": "zq-ask", "tool_calls": [{"name": "ask_user",
            "args": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        {"node": "agent", "match": "runs in the background; its status", "text": "Started it."},
        {"node": "agent", "match": "zq-start", "tool_calls": [{"name": "start_background_task",
            "args": {"id": "notes", "role": "summariser", "instructions": "Summarise.",
                     "task": "summarise notes", "tools": ["search_nodes"]}}]}
    ]})
}

/// `agentgraph chat --graph instance-ai ARGS` in `place` on the script, `input` piped.
fn chat(place: &Place, args: &[&str], input: &str) -> std::process::Output {
    let scripts = place.dir.path().join("scripts");
    if !scripts.exists() {
        std::fs::create_dir(&scripts).expect("scripts");
        std::fs::write(scripts.join("demo.json"), script().to_string()).expect("script");
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    c.current_dir(place.cwd())
        .env_clear()
        .args(["--db", &place.db().display().to_string()])
        .args(["chat", "--graph", "instance-ai"])
        .args(args);
    for (k, v) in place.env() {
        c.env(k, v);
    }
    c.env("AGENTGRAPH_SCRIPT_DIR", &scripts);
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentgraph binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("input");
    child.wait_with_output().expect("output")
}

#[test]
fn instance_ai_chat_shows_background_tasks_and_takes_answers_at_the_prompt() {
    let place = Place::new();
    let o = chat(
        &place,
        &[],
        "zq-start a task\nzq-ask me\nblue\n/tasks\n/quit\n",
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("(graph graphs/instance-ai/orchestrator.ag, built in)"),
        "{stdout}"
    );
    // The turn that started the task ends with the task's line of the status block.
    let started = stdout.find("Started it.").expect("the first answer");
    let block = &stdout[started..];
    assert!(
        block.contains("Background tasks of this thread (by id):\n- notes [")
            && block.contains("] summariser: summarise notes"),
        "{stdout}"
    );
    // The question is asked at the prompt; the answer resumes the turn.
    let asked = stdout
        .find("Which colour? (red / blue)")
        .expect("the question");
    let answered = stdout.find("You said blue.").expect("the answer");
    assert!(asked < answered, "{stdout}");
    assert!(stdout.contains("background tasks:\n  notes ["), "{stdout}");
    assert!(!stderr.contains("error"), "{stderr}");
}

/// A question left unanswered when the input ended is asked again by the next chat on the
/// thread, and the turn then finishes with the answer.
#[test]
fn an_unanswered_question_is_asked_again_by_the_next_chat_on_the_thread() {
    let place = Place::new();
    let first = chat(&place, &["--thread", "t-asked"], "zq-ask me\n");
    let out = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(first.status.success(), "{out}");
    assert!(out.contains("Which colour? (red / blue)"), "{out}");
    assert!(!out.contains("You said blue."), "{out}");
    let second = chat(&place, &["--thread", "t-asked"], "blue\n/quit\n");
    let out = String::from_utf8_lossy(&second.stdout).into_owned();
    let err = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(second.status.success(), "{out}\n{err}");
    let asked = out.find("Which colour? (red / blue)").expect("asked again");
    let answered = out.find("You said blue.").expect("the answer");
    assert!(asked < answered, "{out}");
}
