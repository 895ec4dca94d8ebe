//! `new`, `completions`, `fmt` over folders with `--check` and `--diff`, the `threads` table,
//! `agentgraph.toml` with `config`, and the examples in `--help`.

use super::*;

/// Runs the binary in `dir` without `--db`, with only the given variables of ours set.
fn ag_in(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("AGENTGRAPH_PROVIDER")
        .env_remove("AGENTGRAPH_SCRIPT_DIR")
        .env_remove("AGENTGRAPH_N8N_CATALOGUE")
        .env_remove("AGENTGRAPH_CONFIG")
        .env_remove("AGENTGRAPH_DB")
        .env_remove("AGENTGRAPH_GRAPHS")
        .env_remove("N8N_API_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        // No user config folder: only the project's file counts.
        .env("XDG_CONFIG_HOME", dir.join("no-user-config"))
        .env("HOME", dir.join("no-home"))
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn new_projects_check_run_and_give_their_expected_output() {
    let dir = tempfile::tempdir().unwrap();
    for (name, extra, expected) in [
        (
            "hello",
            None,
            json!({"answer": "Hello! This answer comes from the scripted model."}),
        ),
        ("my-loop", Some("--plain"), json!({"count": 5, "limit": 5})),
    ] {
        let mut args = vec!["new", name];
        args.extend(extra);
        let o = ag_in(dir.path(), &args, &[]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let project = dir.path().join(name);
        for f in [
            format!("{name}.ag"),
            "README.md".into(),
            "tests/input.json".into(),
            "tests/expected.json".into(),
        ] {
            assert!(project.join(&f).is_file(), "{name}: no {f}");
        }
        let ag_file = format!("{name}.ag");
        let c = ag_in(&project, &["check", &ag_file], &[]);
        assert_eq!(c.code, 0, "{}", c.stderr);
        assert_eq!(ag_in(&project, &["fmt", "--check", "."], &[]).code, 0);
        // What the README tells the user to run.
        let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
        assert!(
            readme.contains(&format!(
                "agentgraph run {ag_file} --input-file tests/input.json --json"
            )),
            "{readme}"
        );
        let r = ag_in(
            &project,
            &[
                "run",
                &ag_file,
                "--input-file",
                "tests/input.json",
                "--json",
            ],
            &[],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(last_json(&r.stdout), expected);
        let stored: Value = serde_json::from_str(
            &std::fs::read_to_string(project.join("tests/expected.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(stored, expected, "{name}: tests/expected.json");
    }
    // An existing folder is refused and left as it was.
    let readme = dir.path().join("hello/README.md");
    std::fs::write(&readme, "mine").unwrap();
    let again = ag_in(dir.path(), &["new", "hello", "--plain"], &[]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "mine");
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = ag_in(dir.path(), &["completions", shell], &[]);
        assert_eq!(o.code, 0, "{shell}: {}", o.stderr);
        for sub in [
            "run",
            "resume",
            "threads",
            "fmt",
            "new",
            "completions",
            "config",
        ] {
            assert!(o.stdout.contains(sub), "{shell}: no `{sub}`");
        }
    }
    assert_eq!(ag_in(dir.path(), &["completions", "tcsh"], &[]).code, 2);
}

const UNFORMATTED: &str =
    "graph g {\n state { n: int = 0 }\n node a { set { n: n+1 } }\n START -> a -> END\n}\n";
/// The formatter keeps the source's blank lines (none here) and indents blocks by two.
const FORMATTED: &str = "graph g {\n  state {\n    n: int = 0\n  }\n  node a {\n    set { n: n + 1 }\n  }\n  START -> a -> END\n}\n";

#[test]
fn fmt_walks_folders_and_check_and_diff_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("graphs");
    std::fs::create_dir_all(root.join("nested/deeper")).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    let messy = root.join("nested/deeper/messy.ag");
    let tidy = root.join("nested/tidy.ag");
    std::fs::write(&messy, UNFORMATTED).unwrap();
    std::fs::write(&tidy, FORMATTED).unwrap();
    std::fs::write(root.join("notes.txt"), UNFORMATTED).unwrap();
    std::fs::write(root.join(".hidden/skip.ag"), UNFORMATTED).unwrap();

    let check = ag_in(dir.path(), &["fmt", "--check", "graphs"], &[]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    let listed: Vec<&str> = check.stdout.lines().collect();
    assert_eq!(listed, vec!["graphs/nested/deeper/messy.ag"]);

    let diff = ag_in(dir.path(), &["fmt", "--diff", "graphs"], &[]);
    assert_eq!(diff.code, 1, "{}", diff.stderr);
    assert!(
        diff.stdout.starts_with(
            "--- a/graphs/nested/deeper/messy.ag\n+++ b/graphs/nested/deeper/messy.ag\n@@"
        ),
        "{}",
        diff.stdout
    );
    for line in [" state { n: int = 0 }", " node a { set { n: n+1 } }"] {
        assert!(
            diff.stdout.contains(&format!("\n-{line}\n")),
            "{}",
            diff.stdout
        );
    }
    for line in ["    set { n: n + 1 }", "  START -> a -> END"] {
        assert!(
            diff.stdout.contains(&format!("\n+{line}\n")),
            "{}",
            diff.stdout
        );
    }
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), UNFORMATTED);

    let write = ag_in(dir.path(), &["fmt", "graphs"], &[]);
    assert_eq!(write.code, 0, "{}", write.stderr);
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), FORMATTED);
    assert_eq!(std::fs::read_to_string(&tidy).unwrap(), FORMATTED);
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        UNFORMATTED
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".hidden/skip.ag")).unwrap(),
        UNFORMATTED
    );
    let clean = ag_in(
        dir.path(),
        &["fmt", "--check", "graphs", "graphs/nested/tidy.ag"],
        &[],
    );
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    assert_eq!(clean.stdout, "");
    let diff = ag_in(dir.path(), &["fmt", "--diff", "graphs"], &[]);
    assert_eq!((diff.code, diff.stdout.as_str()), (0, ""));
}

/// Today's UTC date by the system's `date`, to bound the times the listing shows.
fn utc_date() -> String {
    let o = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn threads_show_graph_status_step_and_time() {
    let db = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A graph whose model call fails: its script answers another node.
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"responses": [{"node": "elsewhere", "text": "no"}]}"#,
    )
    .unwrap();
    let failing = dir.path().join("failing.ag");
    std::fs::write(
        &failing,
        "graph failing {\n  state {\n    messages: messages\n  }\n\n  model m = scripted { script: \"s.json\" }\n\n  node agent: llm { model: m, messages: messages }\n\n  START -> agent -> END\n}\n",
    )
    .unwrap();
    let (counter, approval) = (g("counter.ag"), g("approval.ag"));
    let before = utc_date();
    let runs = [
        (
            vec![
                "run",
                &counter,
                "--thread",
                "a-done",
                "--input",
                r#"{"limit": 2}"#,
            ],
            0,
        ),
        (
            vec![
                "run",
                &approval,
                "--thread",
                "b-asks",
                "--input",
                r#"{"draft": "Hi"}"#,
            ],
            3,
        ),
        (
            vec![
                "run",
                failing.to_str().unwrap(),
                "--thread",
                "c-fails",
                "--input",
                r#"{"messages": [{"type": "human", "content": "Hi"}]}"#,
            ],
            1,
        ),
    ];
    for (args, code) in &runs {
        let o = ag(db.path(), args);
        assert_eq!(o.code, *code, "{args:?}: {}", o.stderr);
    }
    let after = utc_date();
    let o = ag(db.path(), &["threads", "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let rows: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    let rows = rows.as_array().unwrap();
    let got: Vec<(String, String, String, i64)> = rows
        .iter()
        .map(|r| {
            (
                r["thread_id"].as_str().unwrap().to_string(),
                r["graph"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["step"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("a-done".into(), g("counter.ag"), "done".into(), 2),
            ("b-asks".into(), g("approval.ag"), "interrupted".into(), 0),
            (
                "c-fails".into(),
                failing.display().to_string(),
                "failed".into(),
                0
            ),
        ]
    );
    for r in rows {
        let t = r["updated"].as_str().unwrap();
        assert!(
            (t.starts_with(&before) || t.starts_with(&after)) && t.len() == 20 && t.ends_with('Z'),
            "{t}"
        );
    }
    let table = ag(db.path(), &["threads"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", table.stdout);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, vec!["THREAD", "GRAPH", "STATUS", "STEP", "UPDATED"]);
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        row[..4],
        ["b-asks", g("approval.ag").as_str(), "interrupted", "0"]
    );
    // Answered, the interrupted thread is done.
    let r = ag(
        db.path(),
        &[
            "resume",
            &g("approval.ag"),
            "--thread",
            "b-asks",
            "--value",
            "\"yes\"",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let o = ag(db.path(), &["threads", "--json"]);
    let rows: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(rows[1]["status"], json!("done"));
    assert_eq!(rows[1]["step"], json!(2));
}

#[test]
fn the_project_config_fills_in_below_env_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    let sub = project.join("graphs/sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        project.join("agentgraph.toml"),
        "provider = \"scripted\"\ndb = \"store\"\ngraphs = \"graphs\"\n\n[n8n]\nurl = \"http://localhost:5678\"\n",
    )
    .unwrap();
    let file = project.join("agentgraph.toml").display().to_string();
    let setting = |v: &Value, key: &str| -> (Value, Value) {
        let s = v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == json!(key))
            .unwrap_or_else(|| panic!("no {key} in {v}"))
            .clone();
        (s["value"].clone(), s["source"].clone())
    };
    let c = ag_in(&sub, &["config", "--json"], &[]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let v = last_json(&c.stdout);
    assert_eq!(v["file"], json!(file));
    let from_file = json!({"kind": "file", "name": file});
    assert_eq!(
        setting(&v, "provider"),
        (json!("scripted"), from_file.clone())
    );
    let store = project.join("store").display().to_string();
    assert_eq!(setting(&v, "db"), (json!(store), from_file.clone()));
    assert_eq!(
        setting(&v, "n8n.url"),
        (json!("http://localhost:5678"), from_file.clone())
    );

    // The environment beats the file, a flag beats both.
    let c = ag_in(
        &sub,
        &["config", "--json"],
        &[
            ("AGENTGRAPH_DB", "/env/db"),
            ("AGENTGRAPH_PROVIDER", "openai"),
        ],
    );
    let v = last_json(&c.stdout);
    assert_eq!(
        setting(&v, "db"),
        (
            json!("/env/db"),
            json!({"kind": "env", "name": "AGENTGRAPH_DB"})
        )
    );
    assert_eq!(
        setting(&v, "provider"),
        (
            json!("openai"),
            json!({"kind": "env", "name": "AGENTGRAPH_PROVIDER"})
        )
    );
    let c = ag_in(
        &sub,
        &["--db", "flagged", "config", "--json"],
        &[("AGENTGRAPH_DB", "/env/db")],
    );
    let v = last_json(&c.stdout);
    assert_eq!(
        setting(&v, "db"),
        (json!("flagged"), json!({"kind": "flag", "name": "--db"}))
    );
    let text = ag_in(&sub, &["config"], &[]);
    assert!(
        text.stdout.contains(&format!("config file: {file}")),
        "{}",
        text.stdout
    );

    // A run from the subfolder: the `auto` model is the scripted one, the store the file's.
    std::fs::write(
        sub.join("s.json"),
        r#"{"responses": [{"node": "agent", "text": "scripted by the config"}]}"#,
    )
    .unwrap();
    std::fs::write(
        sub.join("a.ag"),
        "graph a {\n  state {\n    messages: messages\n    answer: string = \"\"\n  }\n\n  model m = auto { anthropic: \"claude-sonnet-4-5\", openai: \"gpt-4o-mini\", script: \"s.json\" }\n\n  node agent: llm { model: m, messages: messages }\n  node reply {\n    set { answer: last(messages).content }\n  }\n\n  output { answer }\n\n  START -> agent -> reply -> END\n}\n",
    )
    .unwrap();
    let r = ag_in(
        &sub,
        &[
            "run",
            "a.ag",
            "--thread",
            "t",
            "--input",
            r#"{"messages": [{"type": "human", "content": "Hi"}]}"#,
            "--json",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        last_json(&r.stdout),
        json!({"answer": "scripted by the config"})
    );
    assert!(
        project.join("store").is_dir(),
        "the run used the file's store"
    );
    assert!(!sub.join(".agentgraph").exists());
    let t = ag_in(&project, &["threads", "--json"], &[]);
    assert_eq!(last_json(&t.stdout)[0]["thread_id"], json!("t"));

    // `model` goes to the model variable of the provider in force.
    std::fs::write(
        project.join("agentgraph.toml"),
        "provider = \"openai\"\nmodel = \"gpt-from-file\"\n",
    )
    .unwrap();
    let v = last_json(&ag_in(&sub, &["config", "--json"], &[]).stdout);
    assert_eq!(
        setting(&v, "model"),
        (json!("gpt-from-file"), from_file.clone())
    );
    let v = last_json(&ag_in(&sub, &["config", "--json"], &[("OPENAI_MODEL", "gpt-env")]).stdout);
    assert_eq!(
        setting(&v, "model"),
        (
            json!("gpt-env"),
            json!({"kind": "env", "name": "OPENAI_MODEL"})
        )
    );

    // A broken file is a usage error that names it.
    std::fs::write(project.join("agentgraph.toml"), "db = 3\n").unwrap();
    let bad = ag_in(&sub, &["config"], &[]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains(&file), "{}", bad.stderr);
    std::fs::write(project.join("agentgraph.toml"), "dbx = \"a\"\n").unwrap();
    assert_eq!(ag_in(&sub, &["config"], &[]).code, 2);
}

#[test]
fn every_command_help_shows_examples() {
    let dir = tempfile::tempdir().unwrap();
    for sub in [
        "run",
        "resume",
        "fork",
        "state",
        "history",
        "update",
        "threads",
        "prune",
        "check",
        "fmt",
        "new",
        "completions",
        "config",
        "validate",
        "catalogue",
        "chat",
        "serve",
        "keys",
        "n8n",
        "eval",
        "mcp",
        "viz",
    ] {
        let o = ag_in(dir.path(), &[sub, "--help"], &[]);
        assert_eq!(o.code, 0, "{sub}: {}", o.stderr);
        assert!(
            o.stdout.contains(&format!("Examples:\n  agentgraph {sub}"))
                || o.stdout.contains("Examples:\n  agentgraph "),
            "{sub}: {}",
            o.stdout
        );
    }
    let top = ag_in(dir.path(), &["--help"], &[]);
    assert!(
        top.stdout.contains("Examples:\n  agentgraph new hello"),
        "{}",
        top.stdout
    );
}

#[test]
fn serve_refuses_an_unknown_durability_before_opening_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = ag_in(
        dir.path(),
        &["--db", "db", "serve", "--durability", "eventually"],
        &[],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("unknown durability `eventually`; expected sync, async or exit"),
        "{}",
        o.stderr
    );
    assert!(!dir.path().join("db").exists(), "the store was opened");
}
