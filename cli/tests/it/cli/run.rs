//! `run`, `stream`, interrupts and resume, breakpoints, `update` and forks.

use super::*;

#[test]
fn run_prints_the_final_state_and_exits_0() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("counter.ag"),
            "--input",
            r#"{"limit": 5}"#,
            "--json",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        last_json(&o.stdout),
        json!({"count": 5, "trace": ["bump", "bump", "bump", "bump", "bump"], "limit": 5})
    );
    // The human view shows progress per node on stderr and the state on stdout.
    let o = ag(db.path(), &["run", &g("counter.ag"), "--thread", "h"]);
    assert_eq!(o.code, 0);
    assert!(o.stderr.contains("✓ step 1 bump"), "{}", o.stderr);
    assert!(o.stdout.contains("\"count\": 3"), "{}", o.stdout);
}

#[test]
fn a_graph_without_builder_tools_never_loads_the_n8n_catalogue() {
    // A catalogue directory that does not exist is only noticed (with a warning) when a
    // builder tool or `apply_operations` needs the catalogue: never for the counter.
    let db = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .args([
            "run",
            &g("counter.ag"),
            "--input",
            r#"{"limit": 2}"#,
            "--json",
        ])
        .env(
            "AGENTGRAPH_N8N_CATALOGUE",
            db.path().join("no-such-catalogue"),
        )
        .output()
        .expect("the agentgraph binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("catalogue"), "{stderr}");
}

#[test]
fn stream_prints_event_envelopes_then_the_state() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("research.ag"),
            "--json",
            "--stream",
            "updates,values",
            "--input",
            r#"{"question": "q"}"#,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (events, fin) = lines.split_at(lines.len() - 1);
    assert!(events
        .iter()
        .all(|e| e["seq"].is_u64() && e["mode"].is_string() && e["ns"].is_array()));
    assert!(events.iter().any(|e| e["ns"][0]
        .as_str()
        .is_some_and(|n| n.starts_with("research:"))));
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(fin[0]["answer"], json!("A 1-character question: Q"));
    let bad = ag(db.path(), &["run", &g("research.ag"), "--stream", "valuez"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("unknown stream mode"));
}

#[test]
fn interrupt_exits_3_then_resume_finishes() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("approval.ag"),
            "--thread",
            "t",
            "--input",
            r#"{"draft": "Hi"}"#,
            "--json",
        ],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    let v = last_json(&o.stdout);
    assert_eq!(
        v["__interrupt__"][0]["value"]["question"],
        json!("Publish this draft?")
    );
    let s = ag(
        db.path(),
        &["state", &g("approval.ag"), "--thread", "t", "--json"],
    );
    assert_eq!(s.code, 0);
    let st = last_json(&s.stdout);
    assert_eq!(st["next"], json!(["review"]));
    assert_eq!(st["interrupts"].as_array().unwrap().len(), 1);
    let r = ag(
        db.path(),
        &[
            "resume",
            &g("approval.ag"),
            "--thread",
            "t",
            "--value",
            "\"yes\"",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        last_json(&r.stdout),
        json!({"draft": "Hi", "decision": "yes", "published": true})
    );
    // History: newest first, one JSON object per line.
    let h = ag(
        db.path(),
        &["history", &g("approval.ag"), "--thread", "t", "--json"],
    );
    let rows: Vec<Value> = h
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<i64> = rows.iter().map(|r| r["step"].as_i64().unwrap()).collect();
    assert_eq!(steps, vec![2, 1, 0, -1]);
    assert!(rows[0]["checkpoint_id"].is_string() && rows[0]["source"] == json!("loop"));
    let t = ag(db.path(), &["threads", "--json"]);
    let rows = last_json(&t.stdout);
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(
        (&rows[0]["thread_id"], &rows[0]["status"]),
        (&json!("t"), &json!("done"))
    );
}

#[test]
fn static_breakpoint_from_the_command_line() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("counter.ag"),
            "--thread",
            "b",
            "--interrupt-after",
            "bump",
            "--json",
        ],
    );
    assert_eq!(o.code, 3);
    assert_eq!(last_json(&o.stdout)["count"], json!(1));
    let r = ag(
        db.path(),
        &["resume", &g("counter.ag"), "--thread", "b", "--json"],
    );
    assert_eq!(r.code, 0);
    assert_eq!(last_json(&r.stdout)["count"], json!(3));
}

#[test]
fn update_and_fork_branch_history() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &["run", &g("counter.ag"), "--thread", "f", "--json"],
    );
    assert_eq!(o.code, 0);
    let h = ag(
        db.path(),
        &["history", &g("counter.ag"), "--thread", "f", "--json"],
    );
    let rows: Vec<Value> = h
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let step1 = rows.iter().find(|r| r["step"] == json!(1)).unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Fork from step 1 with a changed limit: the loop continues to the new limit on a branch.
    let f = ag(
        db.path(),
        &[
            "fork",
            &g("counter.ag"),
            "--thread",
            "f",
            "--checkpoint",
            &step1,
            "--values",
            r#"{"limit": 6}"#,
            "--json",
        ],
    );
    assert_eq!(f.code, 0, "{}", f.stderr);
    assert_eq!(last_json(&f.stdout)["count"], json!(6));
    // Update as a node, then state shows it.
    let u = ag(
        db.path(),
        &[
            "update",
            &g("counter.ag"),
            "--thread",
            "f",
            "--values",
            r#"{"count": 100}"#,
            "--as-node",
            "bump",
        ],
    );
    assert_eq!(u.code, 0, "{}", u.stderr);
    assert_eq!(u.stdout.trim().len(), 32);
    let s = ag(
        db.path(),
        &["state", &g("counter.ag"), "--thread", "f", "--json"],
    );
    assert_eq!(last_json(&s.stdout)["values"]["count"], json!(100));
    // A bad checkpoint id is a usage error.
    let bad = ag(
        db.path(),
        &[
            "fork",
            &g("counter.ag"),
            "--thread",
            "f",
            "--checkpoint",
            "nope",
        ],
    );
    assert_eq!(bad.code, 2);
    // Prune keeps the newest N.
    let p = ag(
        db.path(),
        &["prune", "--thread", "f", "--keep", "2", "--json"],
    );
    assert_eq!(p.code, 0);
    assert!(last_json(&p.stdout)["checkpoints"].as_u64().unwrap() > 0);
    let h = ag(
        db.path(),
        &["history", &g("counter.ag"), "--thread", "f", "--json"],
    );
    assert_eq!(h.stdout.lines().count(), 2);
    // Keeping none would delete the thread's state: refused.
    let z = ag(db.path(), &["prune", "--keep", "0"]);
    assert_eq!(z.code, 2, "{}", z.stderr);
    assert!(z.stderr.contains("--keep"), "{}", z.stderr);
    let h = ag(
        db.path(),
        &["history", &g("counter.ag"), "--thread", "f", "--json"],
    );
    assert_eq!(h.stdout.lines().count(), 2);
}
