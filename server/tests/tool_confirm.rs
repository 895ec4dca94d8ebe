//! A confirmation asked by a tool ("Delete 3 nodes?"), answered over HTTP: the run stops with
//! the tool's question as an interrupt, `POST /resume` with the answer runs the tool again with
//! it, and the run ends. A "no" leaves the nodes alone.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::Registry;
use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `delete_nodes {names}`: asks before deleting; writes what it deleted to `removed`.
struct DeleteNodes;

#[async_trait]
impl Tool for DeleteNodes {
    fn name(&self) -> &str {
        "delete_nodes"
    }
    fn description(&self) -> &str {
        "Deletes workflow nodes after the user confirms."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["names"],
               "properties": {"names": {"type": "array", "items": {"type": "string"}}}})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let names = args["names"].clone();
        let n = names.as_array().map_or(0, Vec::len);
        let answer = ctx.interrupt(json!({
            "question": format!("Delete {n} nodes?"),
            "nodes": names,
        }))?;
        if answer == json!("yes") {
            Ok(ToolOutput::text(format!("deleted {n} nodes")).write("removed", names))
        } else {
            Ok(ToolOutput::text("the user said no; nothing was deleted"))
        }
    }
}

const GRAPH: &str = r#"graph cleanup {
  state {
    messages: messages
    removed: list<string> = [] reduce append
  }
  model main = scripted { script: "cleanup.json" }
  tools t = [delete_nodes]
  node agent: llm { model: main, messages: messages, tools: t }
  node tools: tool_executor { tools: t }
  START -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> agent
}
"#;

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

async fn start() -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("cleanup.ag"), GRAPH).unwrap();
    let script = json!({"responses": [
        {"node": "agent", "tool_calls": [
            {"name": "delete_nodes", "args": {"names": ["Gmail", "Slack", "Set"]}, "id": "d1"}]},
        {"node": "agent", "text": "Done."}
    ]});
    std::fs::write(dir.path().join("cleanup.json"), script.to_string()).unwrap();
    let mut config = ServerConfig::new(dir.path(), dir.path().join("db")).storage(Storage::Memory);
    config.registry = Arc::new(|| {
        let mut reg = Registry::default();
        let tools: agentgraph_dsl::agents::ToolMap = [(
            "delete_nodes".to_string(),
            Arc::new(DeleteNodes) as Arc<dyn Tool>,
        )]
        .into();
        agentgraph_dsl::agents::register(&mut reg, tools);
        reg
    });
    let state = ServerState::new(&config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_on(listener, state, async move {
        let _ = stopped.await;
    }));
    Server {
        base,
        http: reqwest::Client::new(),
        stop: Some(stop),
        _dir: dir,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl Server {
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    /// The thread's state once no run is active on it.
    async fn settled(&self, thread: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s: Value = self
                .http
                .get(format!(
                    "{}/threads/{thread}/state?graph=cleanup",
                    self.base
                ))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if s["active"] == false && s["checkpoint_id"].is_string() {
                return s;
            }
            assert!(Instant::now() < deadline, "still running: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn ask(s: &Server, thread: &str) -> Value {
    let (st, v) = s
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"graph": "cleanup", "input": {"messages": [
                {"type": "human", "content": "remove the unused nodes"}]}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let paused = s.settled(thread).await;
    let interrupts = paused["interrupts"].as_array().expect("interrupts");
    assert_eq!(interrupts.len(), 1, "{paused}");
    assert_eq!(
        interrupts[0]["value"]["question"], "Delete 3 nodes?",
        "{paused}"
    );
    assert_eq!(paused["next"], json!(["tools"]), "{paused}");
    paused
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_asks_and_the_answer_comes_over_http() {
    let s = start().await;
    ask(&s, "yes-1").await;
    let (st, v) = s
        .post("/threads/yes-1/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(st, 202, "{v}");
    let done = s.settled("yes-1").await;
    assert_eq!(done["interrupts"], json!([]), "{done}");
    assert_eq!(done["values"]["removed"], json!(["Gmail", "Slack", "Set"]));
    let msgs = done["values"]["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"], "Done.");
    assert!(
        msgs.iter().any(|m| m["content"] == "deleted 3 nodes"),
        "{done}"
    );

    // "no": the tool runs again with that answer and deletes nothing.
    ask(&s, "no-1").await;
    let (st, _) = s.post("/threads/no-1/resume", json!({"value": "no"})).await;
    assert_eq!(st, 202);
    let done = s.settled("no-1").await;
    assert_eq!(done["values"]["removed"], json!([]));
    // Nothing left to answer.
    let (st, v) = s
        .post("/threads/no-1/resume", json!({"value": "yes"}))
        .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (400, Some("NOTHING_TO_RESUME")),
        "{v}"
    );
}
