//! Hostile inputs end with a diagnostic, never with a crash: nesting a thousand or a hundred
//! thousand levels deep is E0003 for every command that reads the file.

use super::ag;

fn deep_graph(open: &str, close: &str, n: usize) -> String {
    format!(
        "graph g {{\n  state {{ x: json = null }}\n  node a {{ set {{ x: {}1{} }} }}\n  START -> a\n}}\n",
        open.repeat(n),
        close.repeat(n)
    )
}

#[test]
fn deep_nesting_is_e0003_for_check_fmt_viz_and_run() {
    let db = tempfile::tempdir().unwrap();
    let shapes = [
        ("(", ")"),
        ("[", "]"),
        ("{ k: ", " }"),
        ("not ", ""),
        ("- ", ""),
    ];
    for n in [1_000, 100_000] {
        for (open, close) in shapes {
            let path = db.path().join("deep.ag");
            std::fs::write(&path, deep_graph(open, close, n)).unwrap();
            let p = path.to_str().unwrap();
            for args in [
                vec!["check", p],
                vec!["fmt", p, "--check"],
                vec!["viz", p],
                vec!["run", p],
            ] {
                let o = ag(db.path(), &args);
                let what = format!("{} on `{open}` × {n}", args[0]);
                assert_ne!(o.code, 134, "{what} aborted");
                assert_ne!(o.code, 0, "{what} succeeded");
                assert!(o.stderr.contains("E0003"), "{what}: {}", o.stderr);
            }
        }
    }
}
