//! The `agentgraph` command end to end: every command and exit code, on a temporary sled store.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn graphs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples")
}

fn ag(db: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn g(name: &str) -> String {
    graphs().join(name).display().to_string()
}

fn last_json(s: &str) -> Value {
    let line = s
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("null");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
}

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
    let t = ag(db.path(), &["threads"]);
    assert_eq!(t.stdout.trim(), "t");
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
fn llm_node_runs_offline_on_the_scripted_model() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("chat.ag"),
            "--json",
            "--stream",
            "messages",
            "--input",
            r#"{"messages": [{"type": "human", "content": "Hi"}]}"#,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (chunks, fin) = lines.split_at(lines.len() - 1);
    assert!(
        chunks.len() > 1
            && chunks
                .iter()
                .all(|c| c["mode"] == json!("messages") && c["node"] == json!("agent"))
    );
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["data"]["delta"].as_str())
        .collect();
    let messages = fin[0]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["type"], json!("ai"));
    assert_eq!(messages[1]["content"].as_str(), Some(streamed.as_str()));
    assert!(streamed.contains("scripted demo model"));
    assert_eq!(fin[0]["usage"]["total"]["input_tokens"], json!(42));
    // Each process loads the script afresh, so another run on a new thread gets the same answer.
    let again = ag(
        db.path(),
        &[
            "run",
            &g("chat.ag"),
            "--thread",
            "x",
            "--input",
            r#"{"messages": [{"type": "human", "content": "a"}]}"#,
        ],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn a_missing_provider_key_says_what_to_set_and_how_to_run_offline() {
    let db = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("g.ag");
    std::fs::write(
        &f,
        "graph g {\n  state { messages: messages }\n  model main = anthropic { model: \"claude-sonnet-4-20250514\" }\n  node agent: llm { model: main }\n  START -> agent -> END\n}\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .args([
            "--db",
            db.path().to_str().unwrap(),
            "run",
            f.to_str().unwrap(),
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).replace('\n', " ");
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("scripted"),
        "{err}"
    );
}

/// The `agentgraph` command with no model provider in its environment, run in `cwd`.
fn ag_without_provider(cwd: &Path, db: &Path, args: &[&str], provider: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(cwd).arg("--db").arg(db).args(args);
    for var in [
        "AGENTGRAPH_PROVIDER",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    if let Some(p) = provider {
        cmd.env("AGENTGRAPH_PROVIDER", p);
    }
    let o = cmd
        .env("NO_COLOR", "1")
        .output()
        .expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn state_and_history_need_no_model_provider() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let graph = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../graphs/agents/react-agent.ag")
        .display()
        .to_string();
    let input = r#"{"message": "What is 17 * 23 + 4?"}"#;
    let run = ag_without_provider(
        dir.path(),
        &db,
        &["run", &graph, "--thread", "t1", "--input", input],
        Some("scripted"),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Reading the thread compiles the graph but calls no model: no provider needed.
    let state = ag_without_provider(dir.path(), &db, &["state", &graph, "--thread", "t1"], None);
    assert_eq!(state.code, 0, "{}", state.stderr);
    let v: Value = serde_json::from_str(&state.stdout).unwrap();
    let messages = v["values"]["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().map(|m| &m["type"]),
        Some(&json!("ai")),
        "{v}"
    );
    let history = ag_without_provider(
        dir.path(),
        &db,
        &["history", &graph, "--thread", "t1"],
        None,
    );
    assert_eq!(history.code, 0, "{}", history.stderr);
    // Running still says what to set, before the run.
    let run = ag_without_provider(dir.path(), &db, &["run", &graph, "--input", input], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no model provider is configured"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_model_block_reads_its_key_with_env() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(
            json!({"role": "assistant", "content": "hello from the team key"}),
            None
        ),
        chunk(json!({}), Some("stop"))
    );
    // Only the key named by the block is accepted.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer team-key-123"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("keyed.ag");
    std::fs::write(
        &graph,
        r#"graph keyed {
  state {
    messages: messages
  }
  model main = openai { model: "gpt-4o", api_key: env("AG_TEST_TEAM_KEY"), base_url: env("AG_TEST_BASE") }
  node agent: llm { model: main, messages: messages }
  START -> agent -> END
}
"#,
    )
    .unwrap();
    let run = |key: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
        cmd.arg("--db")
            .arg(dir.path().join("db"))
            .args(["run", graph.to_str().unwrap(), "--input"])
            .arg(r#"{"messages": [{"type": "human", "content": "hi"}]}"#)
            .env("AG_TEST_BASE", format!("{}/v1", server.uri()))
            .env("OPENAI_API_KEY", "the-sdk-variable-must-not-be-used")
            .env_remove("AGENTGRAPH_PROVIDER")
            .env_remove("OPENAI_BASE_URL");
        match key {
            Some(k) => cmd.env("AG_TEST_TEAM_KEY", k),
            None => cmd.env_remove("AG_TEST_TEAM_KEY"),
        };
        cmd.output().expect("the agentgraph binary runs")
    };
    let ok = run(Some("team-key-123"));
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(stdout.contains("hello from the team key"), "{stdout}");
    // The variable it names is unset: a clear error before the run.
    let missing = run(None);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`api_key` is empty"), "{stderr}");
}

#[test]
fn a_badly_typed_input_is_a_usage_error_and_writes_nothing() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("counter.ag"),
            "--thread",
            "bad",
            "--input",
            r#"{"limit": "x"}"#,
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("input `limit`"), "{}", o.stderr);
    let state = ag(db.path(), &["state", &g("counter.ag"), "--thread", "bad"]);
    assert_ne!(state.code, 0, "no checkpoint was written: {}", state.stdout);
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

/// The "resume with:" line pastes as is: it names the store when it is not the default.
#[test]
fn the_resume_hint_names_the_store() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("approval.ag"),
            "--thread",
            "h",
            "--input",
            r#"{"draft": "Hi"}"#,
        ],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    let hint = o
        .stderr
        .lines()
        .find(|l| l.starts_with("resume with:"))
        .unwrap_or_else(|| panic!("a resume hint: {}", o.stderr));
    assert!(
        hint.contains(&format!("--db {} --thread h", db.path().display())),
        "{hint}"
    );
}

/// `--thread` takes the ids the server takes too.
#[test]
fn thread_ids_follow_the_servers_rule() {
    let db = tempfile::tempdir().unwrap();
    for bad in ["", "a b/é"] {
        let o = ag(
            db.path(),
            &["run", &g("counter.ag"), "--thread", bad, "--json"],
        );
        assert_eq!(o.code, 2, "{bad:?}: {}", o.stderr);
        assert!(o.stderr.contains("thread ids are"), "{}", o.stderr);
    }
}

/// Reading commands never create a store: a mistyped `--db` is an error.
#[test]
fn reading_a_missing_store_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("agentgrph");
    for args in [
        vec!["threads"],
        vec!["state", "graphs/examples/counter.ag", "--thread", "t"],
        vec!["prune", "--keep", "1"],
    ] {
        let mut full = vec![];
        for a in &args {
            full.push(if a.ends_with(".ag") {
                g("counter.ag")
            } else {
                a.to_string()
            });
        }
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let o = ag(&typo, &refs);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("no store at"), "{}", o.stderr);
        assert!(!typo.exists(), "{args:?} created the store");
    }
}

/// An unknown thread is bad usage for every command that reads one.
#[test]
fn an_unknown_thread_exits_2_everywhere() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(db.path(), &["run", &g("counter.ag"), "--thread", "known"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for cmd in ["state", "history", "resume"] {
        let o = ag(db.path(), &[cmd, &g("counter.ag"), "--thread", "unknown"]);
        assert_eq!(o.code, 2, "{cmd}: {}", o.stderr);
    }
}
