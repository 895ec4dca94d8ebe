//! Model providers: the scripted model offline, missing keys, commands that need no
//! provider, keys read with `env`.

use super::*;

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
