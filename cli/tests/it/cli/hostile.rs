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

#[test]
fn history_limit_0_is_a_usage_error() {
    let db = tempfile::tempdir().unwrap();
    let graph = super::g("counter.ag");
    assert_eq!(ag(db.path(), &["run", &graph, "--thread", "t"]).code, 0);
    let o = ag(
        db.path(),
        &["history", &graph, "--thread", "t", "--limit", "0"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--limit"), "{}", o.stderr);
    assert!(!o.stderr.contains("no checkpoint"), "{}", o.stderr);
    let o = ag(
        db.path(),
        &["history", &graph, "--thread", "t", "--limit", "1"],
    );
    assert_eq!((o.code, o.stdout.lines().count()), (0, 1), "{}", o.stderr);
}

#[test]
fn printing_commands_end_quietly_on_a_broken_pipe() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let db = tempfile::tempdir().unwrap();
    let graph = super::g("counter.ag");
    assert_eq!(
        ag(
            db.path(),
            &[
                "run",
                &graph,
                "--thread",
                "t",
                "--input",
                r#"{"limit": 200}"#
            ]
        )
        .code,
        0
    );
    for args in [
        vec!["history", graph.as_str(), "--thread", "t"],
        vec!["state", graph.as_str(), "--thread", "t"],
        vec!["threads"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
            .arg("--db")
            .arg(db.path())
            .args(&args)
            .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the command prints.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        let quiet = o.status.code() == Some(0) || o.status.signal() == Some(libc::SIGPIPE);
        assert!(quiet, "{args:?}: {:?} {stderr}", o.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn input_file_with_invalid_json_shows_a_short_excerpt() {
    let db = tempfile::tempdir().unwrap();
    let input = db.path().join("big.json");
    // A megabyte of valid JSON, then a mistake on line 3.
    let big = format!(
        "{{\"limit\": 3,\n\"pad\": \"{}\",\n\"x\": nope}}\n",
        "a".repeat(1 << 20)
    );
    std::fs::write(&input, big).unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &super::g("counter.ag"),
            "--input-file",
            input.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.len() < 1000, "{} bytes of stderr", o.stderr.len());
    assert!(o.stderr.contains("line 3 column 7"), "{}", o.stderr);
    assert!(o.stderr.contains("nope"), "{}", o.stderr);
}

#[test]
fn history_pages_by_default() {
    let db = tempfile::tempdir().unwrap();
    let graph = super::g("counter.ag");
    let o = ag(
        db.path(),
        &[
            "run",
            &graph,
            "--thread",
            "t",
            "--input",
            r#"{"limit": 70}"#,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let all = ag(db.path(), &["history", &graph, "--thread", "t", "--all"]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert!(!all.stderr.contains("--before"), "{}", all.stderr);
    let all: Vec<String> = all.stdout.lines().map(str::to_string).collect();
    // 70 bumps, the input checkpoint and the first one: more than a page of 50.
    assert!(all.len() >= 72, "{}", all.len());

    // Page after page, following the command printed on stderr, gives the same list.
    let mut shown: Vec<String> = Vec::new();
    let mut args: Vec<String> = ["history", graph.as_str(), "--thread", "t"]
        .map(String::from)
        .to_vec();
    loop {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = ag(db.path(), &refs);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let lines: Vec<&str> = o.stdout.lines().collect();
        assert!(
            lines.len() <= 50,
            "a page holds at most 50: {}",
            lines.len()
        );
        shown.extend(lines.iter().map(|l| l.to_string()));
        let Some(next) = o.stderr.split("--before ").nth(1) else {
            break;
        };
        let id = next.split_whitespace().next().unwrap().to_string();
        assert!(lines.last().unwrap().starts_with(&id), "{id}: {lines:?}");
        args = ["history", graph.as_str(), "--thread", "t", "--before", &id]
            .map(String::from)
            .to_vec();
    }
    assert_eq!(shown, all);
    let o = ag(
        db.path(),
        &["history", &graph, "--thread", "t", "--before", "nonsense"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// A sled memory without `path` lived in the current folder, so a running `serve` made every
/// run started in that folder fail on the lock. It now lives under `--db`, opens at the first
/// message (a `check` creates nothing), and a relative `path` is read from the graph's folder.
#[test]
fn sled_memory_lives_under_db_never_in_the_current_folder() {
    let root = tempfile::tempdir().unwrap();
    let (cwd, graphs) = (root.path().join("cwd"), root.path().join("graphs"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&graphs).unwrap();
    let script = super::graphs().join("scripts/chat.json");
    let graph = |name: &str, memory: &str| {
        let text = format!(
            "graph {name} {{\n  state {{ messages: messages }}\n  model main = scripted {{ script: \"{}\" }}\n  node agent: llm {{ model: main, messages: messages, memory: {memory} }}\n  START -> agent -> END\n}}\n",
            script.display()
        );
        let path = graphs.join(format!("{name}.ag"));
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let default = graph("by_default", r#"{ store: "sled" }"#);
    let relative = graph("relative", r#"{ store: "sled", path: "mem" }"#);
    let run = |db: &std::path::Path, args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_agentgraph"))
            .current_dir(&cwd)
            .arg("--db")
            .arg(db)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("AGENTGRAPH_PROVIDER")
            .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let input = r#"{"messages": [{"type": "human", "content": "hi"}]}"#;
    let (db1, db2) = (root.path().join("db1"), root.path().join("db2"));
    run(&db1, &["check", &default]);
    assert!(!db1.join("memory").exists(), "check opened the memory");
    // Two stores used from one folder, one after the other and side by side.
    run(&db1, &["run", &default, "--thread", "a", "--input", input]);
    std::thread::scope(|s| {
        s.spawn(|| run(&db1, &["run", &default, "--thread", "b", "--input", input]));
        s.spawn(|| run(&db2, &["run", &default, "--thread", "c", "--input", input]));
    });
    assert!(db1.join("memory").is_dir() && db2.join("memory").is_dir());
    run(&db1, &["run", &relative, "--thread", "d", "--input", input]);
    assert!(
        graphs.join("mem").is_dir(),
        "a relative path is the graph's folder's"
    );
    let left: Vec<_> = std::fs::read_dir(&cwd).unwrap().collect();
    assert!(left.is_empty(), "the current folder got {left:?}");
}
