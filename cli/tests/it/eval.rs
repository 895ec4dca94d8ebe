//! `agentgraph eval`: a scripted run through the binary writes rows, a summary and a page;
//! `eval compare` exits 1 on a regression; bad usage exits 2. The scripted model proves the
//! wiring, not the builder's quality.

use crate::scenario::{root, PROVIDER_VARS};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `agentgraph` from the repository root (where `--graph single` resolves), with the
/// scripts of the weekly email scenario and no n8n.
fn ag(db: &Path, args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(root()).arg("--db").arg(db).args(args);
    for v in PROVIDER_VARS.iter().chain(&["N8N_API_URL", "N8N_API_KEY"]) {
        cmd.env_remove(v);
    }
    cmd.env("AGENTGRAPH_PROVIDER", "scripted").env(
        "AGENTGRAPH_SCRIPT_DIR",
        root().join("tests/scenarios/weekly-email-summary"),
    );
    let o = cmd.output().expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn a_scripted_eval_writes_rows_a_summary_and_a_page_and_compare_flags_regressions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let a = dir.path().join("a.jsonl");
    let page = dir.path().join("page.html");
    let (a_s, page_s) = (a.to_str().unwrap(), page.to_str().unwrap());
    let out = ag(
        &db,
        &[
            "eval",
            "--set",
            "scenarios",
            "--only",
            "weekly-email-summary",
            "--graph",
            "single",
            "--graph",
            "multi",
            "--out",
            a_s,
            "--html",
            page_s,
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let rows: Vec<Value> = std::fs::read_to_string(&a)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["case"], "weekly-email-summary");
        assert_eq!(r["status"], "done");
        assert_eq!(r["scores"]["non_empty"], true);
    }
    assert!(out.stdout.contains("| single | 1 |"), "{}", out.stdout);
    assert!(out.stdout.contains("| multi | 1 |"), "{}", out.stdout);
    assert!(
        out.stderr.contains("[2/2] weekly-email-summary"),
        "{}",
        out.stderr
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<svg") && html.contains("Send Summary"),
        "{html}"
    );

    // B: the single-agent workflow came out empty.
    let b = dir.path().join("b.jsonl");
    let mut worse = rows.clone();
    worse[0]["scores"]["non_empty"] = Value::Bool(false);
    let text: String = worse.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&b, text).unwrap();
    let b_s = b.to_str().unwrap();
    let same = ag(&db, &["eval", "compare", a_s, a_s]);
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    let regressed = ag(&db, &["eval", "compare", a_s, b_s]);
    assert_eq!(
        regressed.code, 1,
        "{}\n{}",
        regressed.stdout, regressed.stderr
    );
    assert!(
        regressed.stdout.contains("**regression**"),
        "{}",
        regressed.stdout
    );
    // Not watched: no regression.
    let unwatched = ag(&db, &["eval", "compare", a_s, b_s, "--metric", "done"]);
    assert_eq!(unwatched.code, 0, "{}", unwatched.stdout);
    let report = ag(&db, &["--json", "eval", "report", a_s]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let summary: Value = serde_json::from_str(report.stdout.trim()).unwrap();
    assert_eq!(summary[0]["rates"]["non_empty"], 1.0);
}

#[test]
fn unknown_sets_cases_and_metrics_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let set = ag(&db, &["eval", "--set", "nope"]);
    assert_eq!(set.code, 2);
    assert!(
        set.stderr.contains("no prompt set named `nope`"),
        "{}",
        set.stderr
    );
    let case = ag(&db, &["eval", "--set", "control-flow", "--only", "nope"]);
    assert_eq!(case.code, 2);
    assert!(case.stderr.contains("no case `nope`"), "{}", case.stderr);
    let missing = dir.path().join("missing.jsonl");
    let m = missing.to_str().unwrap();
    let metric = ag(&db, &["eval", "compare", m, m, "--metric", "speed"]);
    assert_eq!(metric.code, 2);
    assert!(
        metric.stderr.contains("no metric `speed`"),
        "{}",
        metric.stderr
    );
    let list = ag(&db, &["eval", "--list"]);
    assert_eq!(list.code, 0);
    assert!(list.stdout.contains("quick") && list.stdout.contains("control-flow"));
}

/// An instance case through the binary against the real n8n: its workflow is created, the
/// scripted orchestrator lists it and asks the user a question, the eval answers with the
/// case's reply and the run goes on; the checks read the answer, the tools and the instance;
/// the workflow is gone afterwards.
#[test]
fn an_instance_case_is_set_up_in_n8n_its_question_answered_and_checked() {
    let Some(n8n) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let name = "eval harness probe";
    let hello = serde_json::json!({"name": name, "settings": {}, "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1,
         "position": [0, 0], "parameters": {}}], "connections": {}});
    let case = serde_json::json!({"id": "probe", "prompt": "Find my probe workflow.",
        "source": "cli/tests/it/eval.rs",
        "instance": {"setup": [hello], "reply": "the green one",
                     "answer": ["green one", ["not said", "eval harness probe"]],
                     "tools": ["list_workflows", "delete_workflow"],
                     "active": {(name): false}}});
    let cases = dir.path().join("cases.jsonl");
    std::fs::write(&cases, format!("{case}\n")).unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let script = serde_json::json!({"responses": [
        {"node": "agent", "tool_calls": [{"name": "load_tool", "args": {"names": ["list_workflows"]}}]},
        {"node": "agent", "tool_calls": [{"name": "list_workflows", "args": {"name": name}}]},
        {"node": "agent", "tool_calls": [{"name": "ask_user", "args": {"question": "Which colour?"}}]},
        {"node": "agent", "text": "You said: {{last_tool}}"}
    ]});
    std::fs::write(scripts.join("demo.json"), script.to_string()).unwrap();
    let rows = dir.path().join("rows.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(root())
        .arg("--db")
        .arg(dir.path().join("db"));
    for v in PROVIDER_VARS {
        cmd.env_remove(v);
    }
    let o = cmd
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .env("AGENTGRAPH_SCRIPT_DIR", &scripts)
        .env("N8N_API_URL", &n8n.url)
        .env("N8N_API_KEY", &n8n.api_key)
        .args(["eval", "--graph", "instance-ai", "--cases"])
        .arg(&cases)
        .arg("--out")
        .arg(&rows)
        .output()
        .expect("the agentgraph binary runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let row: Value = serde_json::from_str(std::fs::read_to_string(&rows).unwrap().trim()).unwrap();
    assert_eq!(row["status"], "done", "{row}");
    let checks = &row["scores"]["instance"];
    assert_eq!(checks["answered"], serde_json::json!(["question"]), "{row}");
    let items: Vec<(String, bool)> = checks["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["item"].as_str().unwrap().to_string(), i["pass"] == true))
        .collect();
    let want = |s: &str, pass: bool| (s.to_string(), pass);
    assert_eq!(
        items,
        [
            want("answer green one", true),
            // The answer quotes the user's reply, not the workflow's name.
            want("answer not said|eval harness probe", false),
            want("tool list_workflows", true),
            // Never called.
            want("tool delete_workflow", false),
            // The setup workflow exists, inactive, when the run ends.
            want("inactive eval harness probe", true),
        ],
        "{row}"
    );
    assert_eq!(
        (checks["passed"].as_u64(), checks["total"].as_u64()),
        (Some(3), Some(5))
    );
    assert!(stdout.contains("| checks | checks pass |"), "{stdout}");
    assert!(stdout.contains("| 60% | 0% |"), "{stdout}");
    // The case's workflow was removed afterwards.
    let left: Value = reqwest::blocking::Client::new()
        .get(format!("{}/api/v1/workflows", n8n.url))
        .query(&[("name", name)])
        .header("X-N8N-API-KEY", &n8n.api_key)
        .send()
        .and_then(|r| r.json())
        .expect("n8n lists workflows");
    assert_eq!(left["data"].as_array().map(Vec::len), Some(0), "{left}");
}

#[test]
fn resume_runs_only_the_pairs_the_results_file_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("rows.jsonl");
    let f = file.to_str().unwrap();
    let base = [
        "eval",
        "--set",
        "scenarios",
        "--only",
        "weekly-email-summary",
        "--out",
        f,
    ];
    let lines = || std::fs::read_to_string(&file).unwrap().lines().count();
    let first = ag(&db, &[&base[..], &["--graph", "single"]].concat());
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(lines(), 1);

    // The interrupted evaluation goes on: only the multi-agent row is new, and the summary
    // holds both.
    let both = ["--graph", "single", "--graph", "multi", "--resume"];
    let second = ag(&db, &[&base[..], &both].concat());
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains("= 1 run(s) (1 already in the file)"),
        "{}",
        second.stderr
    );
    assert!(
        second.stderr.contains("[1/1] weekly-email-summary"),
        "{}",
        second.stderr
    );
    assert_eq!(lines(), 2);
    let graphs: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["graph"].to_string())
        .collect();
    assert_eq!(graphs, ["\"single\"", "\"multi\""]);
    assert!(
        second.stdout.contains("| single | 1 |"),
        "{}",
        second.stdout
    );
    assert!(second.stdout.contains("| multi | 1 |"), "{}", second.stdout);

    // Nothing left to run: nothing is appended.
    let third = ag(&db, &[&base[..], &both].concat());
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(
        third.stderr.contains("= 0 run(s) (2 already in the file)"),
        "{}",
        third.stderr
    );
    assert_eq!(lines(), 2);

    // Rows of another set are not continued.
    let other = ag(
        &db,
        &[
            "eval",
            "--set",
            "control-flow",
            "--limit",
            "1",
            "--out",
            f,
            "--resume",
        ],
    );
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(other.stderr.contains("cannot resume"), "{}", other.stderr);
    assert_eq!(lines(), 2);
}
