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
