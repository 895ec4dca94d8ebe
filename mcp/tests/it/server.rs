//! The MCP server side: a few tools served over an in-memory stream and streamable HTTP,
//! driven by rmcp's client (the crate's own `Connection` for HTTP).

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_mcp::server::{serve_http, serve_io, ServedTool, ToolServer, HTTP_PATH};
use agentgraph_mcp::{Connection, Transport};
use async_trait::async_trait;
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `echo {text}` → `{"echo": text}`; no session state.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args["text"] == json!("fail") {
            return Err(ToolError::new("REFUSED", "asked to fail"));
        }
        Ok(ToolOutput {
            content: json!({"echo": args["text"]}),
            writes: Vec::new(),
        })
    }
}

/// `note {text}` adds a note to the session's `notes`; `notes` lists them.
struct Note;

#[async_trait]
impl Tool for Note {
    fn name(&self) -> &str {
        "note"
    }
    fn description(&self) -> &str {
        "Keeps a note in the session."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut notes = ctx.state().get("notes").cloned().unwrap_or(json!([]));
        if let Some(list) = notes.as_array_mut() {
            list.push(args["text"].clone());
        }
        Ok(ToolOutput::text("kept").write("notes", notes))
    }
}

struct Notes;

#[async_trait]
impl Tool for Notes {
    fn name(&self) -> &str {
        "notes"
    }
    fn description(&self) -> &str {
        "The session's notes."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let notes = ctx.state().get("notes").cloned().unwrap_or(json!([]));
        Ok(ToolOutput {
            content: json!({"notes": notes}),
            writes: Vec::new(),
        })
    }
}

fn server() -> Arc<ToolServer> {
    let mut s = ToolServer::new("test-server", "1.0").instructions("Tools for tests.");
    let tools = [
        ServedTool::new(Arc::new(Echo))
            .output_schema(json!({"type": "object", "properties": {"echo": {"type": "string"}}})),
        ServedTool::session(Arc::new(Note)),
        ServedTool::session(Arc::new(Notes)),
    ];
    for t in tools {
        if let Err(e) = s.add(t) {
            panic!("{e}");
        }
    }
    Arc::new(s)
}

#[test]
fn duplicate_and_invalid_names_are_refused() {
    let mut s = ToolServer::new("s", "1");
    assert!(s.add(ServedTool::new(Arc::new(Echo))).is_ok());
    let e = s
        .add(ServedTool::new(Arc::new(Echo)))
        .expect_err("duplicate");
    assert_eq!(
        e.to_string(),
        "two tools are named `echo`; MCP tool names must be unique"
    );
}

#[tokio::test]
async fn a_stream_session_lists_calls_and_keeps_state() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let stop = CancellationToken::new();
    let served = {
        let stop = stop.clone();
        tokio::spawn(async move { serve_io(server(), read, write, stop.cancelled_owned()).await })
    };
    let client = ().serve(client_io).await.expect("handshake");
    let info = client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("test-server"));
    assert_eq!(info.instructions.as_deref(), Some("Tools for tests."));
    let tools = client.peer().list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo", "note", "notes"]);
    let echo = &tools[0];
    assert_eq!(
        Value::Object((*echo.input_schema).clone()),
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    assert!(echo.output_schema.is_some());

    let call = |name: &str, args: Value| {
        let mut p = CallToolRequestParams::new(name.to_string());
        p.arguments = args.as_object().cloned();
        client.peer().call_tool(p)
    };
    let r = call("echo", json!({"text": "hi"})).await.expect("echo");
    assert_eq!(r.structured_content, Some(json!({"echo": "hi"})));
    assert_eq!(r.is_error, Some(false));
    // A tool error and an argument the schema refuses: results with isError.
    let r = call("echo", json!({"text": "fail"})).await.expect("fail");
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_value(&r.content).unwrap_or_default();
    assert_eq!(text[0]["text"], json!("REFUSED: asked to fail"));
    let r = call("echo", json!({"text": 3})).await.expect("bad args");
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_value(&r.content).unwrap_or_default();
    assert!(
        text[0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("INVALID_INPUT: ") && t.contains("text")),
        "{text}"
    );
    // An unknown tool is a protocol error.
    assert!(call("nope", json!({})).await.is_err());
    // Session state: each call sees the writes of the ones before.
    call("note", json!({"text": "a"})).await.expect("note");
    call("note", json!({"text": "b"})).await.expect("note");
    let r = call("notes", json!({})).await.expect("notes");
    assert_eq!(r.structured_content, Some(json!({"notes": ["a", "b"]})));

    let _ = client.cancel().await;
    let ended = tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the server stops when the client closes");
    assert!(matches!(ended, Ok(Ok(()))), "{ended:?}");
}

#[tokio::test]
async fn http_sessions_have_their_own_state_and_shutdown_stops_the_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = CancellationToken::new();
    let served = {
        let stop = stop.clone();
        tokio::spawn(async move { serve_http(server(), listener, stop.cancelled_owned()).await })
    };
    let transport = Transport::Http {
        url: format!("http://{addr}{HTTP_PATH}"),
        headers: BTreeMap::new(),
    };
    let limit = Duration::from_secs(20);
    let never = CancellationToken::new();
    let first = Connection::open(&transport).await.expect("first session");
    let second = Connection::open(&transport).await.expect("second session");
    let listed = first.list_tools().await.expect("tools/list");
    assert_eq!(listed.len(), 3);

    first
        .call("note", json!({"text": "only in the first"}), limit, &never)
        .await
        .expect("note");
    let mine = first
        .call("notes", json!({}), limit, &never)
        .await
        .expect("notes");
    assert_eq!(
        mine["structuredContent"],
        json!({"notes": ["only in the first"]})
    );
    let theirs = second
        .call("notes", json!({}), limit, &never)
        .await
        .expect("notes");
    assert_eq!(theirs["structuredContent"], json!({"notes": []}));
    let echoed = second
        .call("echo", json!({"text": "over http"}), limit, &never)
        .await
        .expect("echo");
    assert_eq!(echoed["structuredContent"], json!({"echo": "over http"}));

    stop.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the server stops on shutdown");
    assert!(matches!(ended, Ok(Ok(()))), "{ended:?}");
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn a_client_gone_before_the_handshake_ends_the_session_cleanly() {
    let (client_io, server_io) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(server_io);
    drop(client_io);
    let ended = tokio::time::timeout(
        Duration::from_secs(10),
        serve_io(server(), read, write, std::future::pending()),
    )
    .await
    .expect("the session ends");
    assert!(ended.is_ok(), "{ended:?}");
}

/// `wait`: returns when its call is cancelled, and says so in `seen`.
struct Wait {
    seen: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl Tool for Wait {
    fn name(&self) -> &str {
        "wait"
    }
    fn description(&self) -> &str {
        "Waits until cancelled."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            () = ctx.cancellation().cancelled() => {
                self.seen.notify_one();
                Err(ToolError::new("CANCELLED", "cancelled"))
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => Ok(ToolOutput::text("not cancelled")),
        }
    }
}

#[tokio::test]
async fn a_cancelled_request_cancels_the_call() {
    let seen = Arc::new(tokio::sync::Notify::new());
    let mut s = ToolServer::new("wait-server", "1");
    s.add(ServedTool::new(Arc::new(Wait { seen: seen.clone() })))
        .expect("wait");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = CancellationToken::new();
    let served = {
        let stop = stop.clone();
        tokio::spawn(async move { serve_http(Arc::new(s), listener, stop.cancelled_owned()).await })
    };
    let conn = Connection::open(&Transport::Http {
        url: format!("http://{addr}{HTTP_PATH}"),
        headers: BTreeMap::new(),
    })
    .await
    .expect("session");
    let cancel = CancellationToken::new();
    let call = conn.call("wait", json!({}), Duration::from_secs(60), &cancel);
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.cancel();
    });
    assert!(matches!(
        call.await,
        Err(agentgraph_mcp::McpError::Cancelled)
    ));
    tokio::time::timeout(Duration::from_secs(10), seen.notified())
        .await
        .expect("the tool saw the cancellation");
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), served).await;
    conn.close().await;
}
