//! Exit codes for usage and DSL errors, `fmt`, `check` and `viz`.

use super::*;

#[test]
fn usage_and_dsl_errors_exit_2_run_failures_exit_1() {
    let db = tempfile::tempdir().unwrap();
    assert_eq!(
        ag(
            db.path(),
            &["run", &g("counter.ag"), "--input", "{not json"]
        )
        .code,
        2
    );
    assert_eq!(
        ag(db.path(), &["resume", &g("counter.ag"), "--thread", "none"]).code,
        2
    );
    assert_eq!(
        ag(
            db.path(),
            &["run", &g("counter.ag"), "--input", r#"{"nope": 1}"#]
        )
        .code,
        2
    );
    assert_eq!(ag(db.path(), &["frobnicate"]).code, 2);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ag");
    std::fs::write(&bad, "graph g {\n  state { n: int = 0 }\n  node a { set { m: n + 1 } }\n  START -> a -> END\n}\n").unwrap();
    let c = ag(db.path(), &["check", bad.to_str().unwrap()]);
    assert_eq!(c.code, 2);
    assert!(
        c.stderr.contains("channel `m` is not declared"),
        "{}",
        c.stderr
    );
    let cj = ag(db.path(), &["check", bad.to_str().unwrap(), "--json"]);
    let diags = last_json(&cj.stdout);
    assert_eq!(diags[0]["code"], json!("E0205"));
    assert_eq!(diags[0]["span"]["line"], json!(3));
    assert_eq!(ag(db.path(), &["run", bad.to_str().unwrap()]).code, 2);
    let ok = ag(db.path(), &["check", &g("counter.ag")]);
    assert_eq!(ok.code, 0);
    // A failure at run time: exit 1, error printed, state kept up to the last checkpoint.
    let fails = dir.path().join("fails.ag");
    std::fs::write(&fails, "graph g {\n  state { s: string = \"abc\"\n    n: int = 0 }\n  node a { set { n: int(s) } }\n  START -> a -> END\n}\n").unwrap();
    let f = ag(
        db.path(),
        &["run", fails.to_str().unwrap(), "--thread", "x"],
    );
    assert_eq!(f.code, 1, "{}", f.stderr);
    assert!(f.stderr.contains("node `a` failed"), "{}", f.stderr);
    let s = ag(
        db.path(),
        &["state", fails.to_str().unwrap(), "--thread", "x", "--json"],
    );
    assert_eq!(last_json(&s.stdout)["next"], json!(["a"]));
}

#[test]
fn fmt_rewrites_and_check_reports() {
    let db = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("g.ag");
    std::fs::write(&f, "graph g {\n state { n: int = 0 }   # the counter\n node a { set { n: n+1 } }\n START -> a -> END\n}\n").unwrap();
    let path = f.to_str().unwrap();
    assert_eq!(ag(db.path(), &["fmt", path, "--check"]).code, 1);
    assert_eq!(ag(db.path(), &["fmt", path]).code, 0);
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.contains("n: n + 1") && text.contains("# the counter"),
        "{text}"
    );
    assert_eq!(ag(db.path(), &["fmt", path, "--check"]).code, 0);
    std::fs::write(&f, "graph g { node a { set { n: } }").unwrap();
    let bad = ag(db.path(), &["fmt", path]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "graph g { node a { set { n: } }",
        "a broken file is left alone"
    );
}

#[test]
fn viz_draws_mermaid_and_dot() {
    let db = tempfile::tempdir().unwrap();
    let m = ag(db.path(), &["viz", &g("research.ag")]);
    assert_eq!(m.code, 0);
    assert!(
        m.stdout.contains("flowchart") && m.stdout.contains("subgraph research"),
        "{}",
        m.stdout
    );
    let d = ag(db.path(), &["viz", &g("approval.ag"), "--format", "dot"]);
    assert_eq!(d.code, 0);
    assert!(
        d.stdout.starts_with("digraph") && d.stdout.contains("decision == \\\"yes\\\""),
        "{}",
        d.stdout
    );
    assert_eq!(
        ag(db.path(), &["viz", &g("approval.ag"), "--format", "png"]).code,
        2
    );
}

#[test]
fn every_shipped_graph_is_formatted() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let mut dirs = vec![root.join("graphs"), root.join("examples/graphs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "ag") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 10, "found {files:?}");
    let db = tempfile::tempdir().unwrap();
    let unformatted: Vec<String> = files
        .iter()
        .filter(|f| ag(db.path(), &["fmt", "--check", f.to_str().unwrap()]).code != 0)
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        unformatted.is_empty(),
        "run `agentgraph fmt` on: {unformatted:?}"
    );
}
