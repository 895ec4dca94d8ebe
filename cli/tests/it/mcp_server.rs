//! `agentgraph mcp` as a process, driven by an MCP client: graphs written here as tools (input
//! schema, a call, an interrupt answered with `resume`), the builder's tools over a workflow
//! held per session, stdio and streamable HTTP, stopping on stdin close and on SIGINT; and the
//! official inspector CLI driving it.
#![cfg(unix)]

use agentgraph_mcp::{Connection, Transport};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const BIN: &str = env!("CARGO_BIN_EXE_agentgraph");

const ECHO: &str = r#"# Echoes its text back.
# agentgraph run echo.ag --input '{"text": "hi"}'
graph echo {
  state {
    text: string
    times: int = 1
    note: string?
    reply: string = ""
  }
  input { text, times, note }
  output { reply }

  node answer {
    set { reply: "echo: " + text }
  }

  START -> answer -> END
}
"#;

const APPROVAL: &str = r#"graph approval {
  state {
    draft: string = ""
    decision: string = ""
    published: bool = false
  }

  node review: interrupt {
    value: { question: "Publish?", draft: draft }
    write: decision
  }
  node publish {
    set { published: true }
  }

  START -> review
  review -> route {
    decision == "yes" => publish
    else              => END
  }
  publish -> END
}
"#;

const REFUSE: &str = r#"graph refuse {
  state {
    format: string = "xml"
  }

  node refuse: fail {
    message: "unknown format `" + format + "`"
    code: "BAD_FORMAT"
  }

  START -> refuse -> END
}
"#;

/// A graphs folder with `echo.ag`, `approval.ag`, `refuse.ag` (a run that fails) and a file
/// that does not compile.
fn graphs(dir: &Path) -> PathBuf {
    let graphs = dir.join("graphs");
    std::fs::create_dir_all(&graphs).expect("graphs folder");
    for (file, text) in [
        ("echo.ag", ECHO),
        ("approval.ag", APPROVAL),
        ("refuse.ag", REFUSE),
        (
            "broken.ag",
            "graph broken { node x { set { nope: 1 } } START -> x }",
        ),
    ] {
        std::fs::write(graphs.join(file), text).expect("graph file");
    }
    graphs
}

/// The arguments of `agentgraph --db DB mcp --graphs DIR --builder-tools`, plus `extra`.
fn args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "--db".to_string(),
        dir.join("db").display().to_string(),
        "mcp".into(),
        "--graphs".into(),
        graphs(dir).display().to_string(),
        "--builder-tools".into(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

const LIMIT: Duration = Duration::from_secs(60);

async fn call(conn: &Connection, tool: &str, args: Value) -> Value {
    conn.call(tool, args, LIMIT, &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Adds a manual trigger named `name` through `add_nodes`.
async fn add_trigger(conn: &Connection, name: &str) {
    let r = call(
        conn,
        "add_nodes",
        json!({
            "nodeType": "n8n-nodes-base.manualTrigger",
            "name": name,
            "connectionParametersReasoning": "a trigger has static connections",
            "connectionParameters": {}
        }),
    )
    .await;
    assert_eq!(r["isError"], json!(false), "{r}");
}

async fn node_names(conn: &Connection) -> Vec<String> {
    let wf = call(conn, "get_workflow", json!({})).await;
    wf["structuredContent"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["name"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn stdio_serves_graphs_an_interrupt_and_the_builder_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let transport = Transport::Stdio {
        command: BIN.to_string(),
        args: args(dir.path(), &[]),
        env: [(
            "AGENTGRAPH_DATA_DIR".to_string(),
            crate::NO_DATA_DIR.to_string(),
        )]
        .into(),
        cwd: None,
    };
    let conn = Connection::open(&transport)
        .await
        .expect("agentgraph mcp starts");
    let tools = conn.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "approval",
        "echo",
        "resume",
        "search_nodes",
        "add_nodes",
        "get_workflow",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(!names.contains(&"broken"), "{names:?}");
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo");
    assert!(
        echo.description.starts_with("Echoes its text back. "),
        "{}",
        echo.description
    );
    assert_eq!(
        echo.input_schema,
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "channel `text` (string)"},
                "times": {"type": "integer", "description": "channel `times` (int)", "default": 1},
                "note": {"type": ["string", "null"], "description": "channel `note` (string?)"}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    );

    let r = call(&conn, "echo", json!({"text": "hi"})).await;
    assert_eq!(r["isError"], json!(false), "{r}");
    assert_eq!(r["structuredContent"], json!({"reply": "echo: hi"}));
    let r = call(&conn, "echo", json!({"times": 2})).await;
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        text_of(&r).contains("missing required argument `text`"),
        "{r}"
    );

    // A failed run: an error with the run's message.
    let r = call(&conn, "refuse", json!({"format": "csv"})).await;
    assert_eq!(r["isError"], json!(true), "{r}");
    let text = text_of(&r);
    assert!(text.starts_with("RUN_FAILED: "), "{text}");
    assert!(text.contains("unknown format `csv`"), "{text}");

    // An interrupt: an error naming the thread and the question; `resume` answers it.
    let r = call(&conn, "approval", json!({"draft": "Hello"})).await;
    assert_eq!(r["isError"], json!(true), "{r}");
    let text = text_of(&r);
    assert!(text.starts_with("INTERRUPTED: "), "{text}");
    assert!(text.contains(r#""question":"Publish?""#), "{text}");
    let thread = text
        .split('`')
        .find(|part| part.starts_with("mcp-"))
        .unwrap_or_else(|| panic!("no thread in {text}"))
        .to_string();
    let r = call(
        &conn,
        "resume",
        json!({"graph": "approval", "thread": thread, "value": "yes"}),
    )
    .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    assert_eq!(
        r["structuredContent"],
        json!({"draft": "Hello", "decision": "yes", "published": true})
    );
    let r = call(
        &conn,
        "resume",
        json!({"graph": "approval", "thread": thread, "value": "again"}),
    )
    .await;
    assert_eq!(
        r["isError"],
        json!(true),
        "a finished thread has nothing to resume: {r}"
    );

    // The builder: a node added is in the session's workflow; parameters set on it stay.
    assert!(node_names(&conn).await.is_empty());
    add_trigger(&conn, "Start").await;
    let r = call(
        &conn,
        "set_node_parameters",
        json!({"nodeId": "Start", "parameters": {"note": "kept"}}),
    )
    .await;
    assert_eq!(r["isError"], json!(false), "{r}");
    let wf = call(&conn, "get_workflow", json!({})).await;
    let nodes = wf["structuredContent"]["nodes"].clone();
    assert_eq!(nodes[0]["name"], json!("Start"), "{wf}");
    assert_eq!(nodes[0]["type"], json!("n8n-nodes-base.manualTrigger"));
    assert_eq!(nodes[0]["parameters"]["note"], json!("kept"));
    conn.close().await;
}

/// Starts `agentgraph mcp --http 127.0.0.1:0` and reads its URL from stderr.
fn start_http(dir: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(args(dir, &["--http", "127.0.0.1:0"]))
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentgraph mcp --http starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let url = loop {
        match lines.next() {
            Some(Ok(line)) => {
                let url = line
                    .strip_prefix("agentgraph mcp on ")
                    .and_then(|rest| rest.split_whitespace().next())
                    .map(String::from);
                seen.push(line);
                if let Some(url) = url {
                    break url;
                }
            }
            _ => panic!("agentgraph mcp exited before listening: {seen:?}"),
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (child, url)
}

/// Waits for `child` to exit, at most `limit`; its exit code.
fn exit_code(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[tokio::test]
async fn http_sessions_each_have_their_workflow_and_sigint_stops_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, url) = start_http(dir.path());
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let transport = Transport::Http {
        url,
        headers: BTreeMap::new(),
    };
    let first = Connection::open(&transport).await.expect("first session");
    let second = Connection::open(&transport).await.expect("second session");
    add_trigger(&first, "Only Here").await;
    assert_eq!(node_names(&first).await, ["Only Here"]);
    assert!(node_names(&second).await.is_empty());
    let r = call(&second, "echo", json!({"text": "over http"})).await;
    assert_eq!(r["structuredContent"], json!({"reply": "echo: over http"}));

    // SAFETY: a plain kill(2) on the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    assert_eq!(exit_code(&mut child, Duration::from_secs(20)), Some(0));
    first.close().await;
    second.close().await;
}

#[test]
fn stdio_stops_when_stdin_closes_and_usage_is_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(BIN)
        .args(args(dir.path(), &[]))
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("agentgraph mcp starts");
    drop(child.stdin.take());
    assert_eq!(exit_code(&mut child, Duration::from_secs(20)), Some(0));

    let out = Command::new(BIN)
        .args(["--db", &dir.path().join("db").display().to_string(), "mcp"])
        .output()
        .expect("agentgraph mcp runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: `agentgraph mcp` needs --graphs DIR, --builder-tools or both"
    );
}

/// Runs the inspector CLI with `args`; its stdout as JSON.
fn inspector(program: &Path, args: &[String]) -> Value {
    // The inspector reads its own package.json at `../package.json` relative to the working
    // folder: run it from its `build/` folder, where that path is right.
    let real = std::fs::canonicalize(program).expect("the inspector's program");
    let cwd = real.parent().expect("its folder");
    let out = Command::new(&real)
        .args(args)
        .current_dir(cwd)
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .output()
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("inspector {}:\n{stdout}", args.join(" "));
    assert!(
        out.status.success(),
        "inspector failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_inspector_cli_lists_and_calls_over_stdio_and_http() {
    let Some(program) = agentgraph_test_support::require_mcp_inspector() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut stdio = owned(&["--cli", BIN]);
    stdio.extend(args(dir.path(), &[]));
    let mut list = stdio.clone();
    list.extend(owned(&["--method", "tools/list"]));
    let listed = inspector(&program, &list);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get_workflow"),
        "{names:?}"
    );
    let mut echo = stdio;
    echo.extend(owned(&[
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=hi",
    ]));
    let r = inspector(&program, &echo);
    assert_eq!(r["structuredContent"], json!({"reply": "echo: hi"}), "{r}");

    let (mut child, url) = start_http(&dir.path().join("http"));
    let base = owned(&["--cli", &url, "--transport", "http"]);
    let mut list = base.clone();
    list.extend(owned(&["--method", "tools/list"]));
    let listed = inspector(&program, &list);
    assert!(
        listed["tools"].as_array().is_some_and(|t| t.len() > 10),
        "{listed}"
    );
    let mut call = base;
    call.extend(owned(&[
        "--method",
        "tools/call",
        "--tool-name",
        "approval",
        "--tool-arg",
        "draft=Hi",
    ]));
    let r = inspector(&program, &call);
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("thread `mcp-")),
        "{r}"
    );
    // SAFETY: a plain kill(2) on the child this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    assert_eq!(exit_code(&mut child, Duration::from_secs(20)), Some(0));
}
