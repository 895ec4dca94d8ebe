//! Snapshots (insta) of what the `agentgraph` command prints: the diagnostics of `check` on a
//! file with five mistakes, a `viz` diagram, `run --json` results (done, and stopped at an
//! interrupt), the `threads` listing, a `validate --json` report, and the workflow the builder
//! demo writes after its first turn. Volatile parts (temporary paths, ids) are redacted.
//! Review changes with `cargo insta review`; under `CI=true` a mismatch fails.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `agentgraph --db DB ARGS` run in `cwd`, with no model provider or catalogue from outside.
fn ag(cwd: &Path, db: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(cwd).arg("--db").arg(db).args(args);
    for var in [
        "AGENTGRAPH_PROVIDER",
        "AGENTGRAPH_SCRIPT_DIR",
        "AGENTGRAPH_SCRIPT_STATE",
        "AGENTGRAPH_N8N_CATALOGUE",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    let o = cmd
        .env("NO_COLOR", "1")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .env("COLUMNS", "100")
        .output()
        .expect("the agentgraph binary runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Exit code, stdout and stderr as one text.
fn transcript((code, stdout, stderr): (i32, String, String)) -> String {
    format!("exit code: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[test]
fn check_reports_every_mistake_of_a_bad_file() {
    let db = tempfile::tempdir().unwrap();
    let fixtures = root().join("dsl/tests/fixtures/err");
    let out = ag(&fixtures, db.path(), &["check", "five_mistakes.ag"]);
    insta::assert_snapshot!("check_five_mistakes", transcript(out));
}

#[test]
fn viz_draws_the_research_example_as_mermaid() {
    let db = tempfile::tempdir().unwrap();
    let out = ag(&root(), db.path(), &["viz", "graphs/examples/research.ag"]);
    insta::assert_snapshot!("viz_research_mermaid", transcript(out));
}

#[test]
fn run_json_prints_the_final_state() {
    let db = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ag(
        &root(),
        db.path(),
        &[
            "run",
            "graphs/examples/map_reduce.ag",
            "--input",
            r#"{"items": [1, 2, 3, 4]}"#,
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    insta::assert_json_snapshot!("run_map_reduce_json", json(&stdout));
}

#[test]
fn run_json_at_an_interrupt_prints_the_question() {
    let db = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = ag(
        &root(),
        db.path(),
        &[
            "run",
            "graphs/examples/approval.ag",
            "--thread",
            "demo",
            "--input",
            r#"{"draft": "Hello"}"#,
            "--json",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    insta::assert_json_snapshot!("run_approval_interrupted_json", json(&stdout), {
        ".__interrupt__[].id" => "[interrupt id]",
    });
}

#[test]
fn threads_lists_every_thread_of_the_store() {
    let db = tempfile::tempdir().unwrap();
    for (graph, thread, input) in [
        (
            "graphs/examples/counter.ag",
            "count-to-two",
            r#"{"limit": 2}"#,
        ),
        (
            "graphs/examples/approval.ag",
            "needs-review",
            r#"{"draft": "Hi"}"#,
        ),
    ] {
        let (code, _, stderr) = ag(
            &root(),
            db.path(),
            &["run", graph, "--thread", thread, "--input", input, "--json"],
        );
        assert!(code == 0 || code == 3, "{graph}: exit {code}: {stderr}");
    }
    let out = ag(&root(), db.path(), &["threads"]);
    insta::with_settings!({filters => vec![(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[time]")]}, {
        insta::assert_snapshot!("threads_listing", transcript(out));
    });
}

#[test]
fn validate_json_reports_located_findings() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = serde_json::json!({
        "nodes": [
            {"id": "1", "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi",
             "typeVersion": 1.2, "position": [0, 0], "parameters": {}},
            {"id": "2", "name": "Fetch", "type": "n8n-nodes-base.httpRequest",
             "typeVersion": 4.2, "position": [200, 0], "parameters": {}}
        ],
        "connections": {}
    });
    std::fs::write(
        dir.path().join("broken.json"),
        serde_json::to_string_pretty(&workflow).unwrap(),
    )
    .unwrap();
    let (code, stdout, stderr) = ag(
        dir.path(),
        &dir.path().join("db"),
        &["validate", "broken.json", "--json"],
    );
    assert_eq!(code, 1, "{stdout}{stderr}");
    insta::assert_json_snapshot!("validate_broken_workflow_json", json(&stdout));
}

/// The builder demo (scripted model, built-in catalogue) after its first turn: the workflow it
/// writes with `--out`.
#[test]
fn the_builder_demo_writes_the_weekly_summary_workflow() {
    let db = tempfile::tempdir().unwrap();
    let out = db.path().join("workflow.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .current_dir(root())
        .arg("--db")
        .arg(db.path())
        .args(["chat", "--out", out.to_str().unwrap()])
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .env("NO_COLOR", "1")
        .env_remove("AGENTGRAPH_SCRIPT_DIR")
        .env_remove("AGENTGRAPH_SCRIPT_STATE")
        .env_remove("AGENTGRAPH_N8N_CATALOGUE")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentgraph binary runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"Every Monday, summarize my unread Gmail with AI and email me the summary\n/quit\n",
        )
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&out).expect("the workflow was written");
    let workflow: Value = serde_json::from_str(&text).expect("workflow JSON");
    insta::assert_json_snapshot!("builder_demo_first_turn_workflow", workflow, {
        ".nodes[].id" => "[node id]",
    });
}
