//! Background tasks over HTTP: a graph's `start_background_task` leaves a task running after
//! its run ended; `GET /threads/{id}/tasks` lists it, `POST /threads/{id}/tasks/{task}/cancel`
//! stops it (the server's cancel of one task), and `POST /threads/{id}/cancel` stops every
//! task of the thread.

use agentgraph_agents::orchestration::background::Background;
use agentgraph_agents::orchestration::ToolPool;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::Registry;
use agentgraph_server::{serve_on, ServerConfig, ServerState, Storage};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `slow`: runs until its run is cancelled.
struct Slow;

#[async_trait]
impl Tool for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Works until stopped."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.cancellation().cancelled().await;
        Err(ToolError::new("CANCELLED", "stopped"))
    }
}

const GRAPH: &str = r#"graph bg {
  state {
    messages: messages
    background_tasks: json = {} reduce merge
    background_status: string = ""
  }
  model main = scripted { script: "bg.json" }
  prompt tasks = "{{ background_status }}"
  tools t = [start_background_task, cancel_task]
  node tasks: tool { tool: task_status, model: main, output: background_status }
  node agent: llm { model: main, system: [tasks], messages: messages, tools: t }
  node tools: tool_executor { tools: t, model: main }
  START -> tasks -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> tasks
}
"#;

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn start() -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bg.ag"), GRAPH).expect("graph");
    // One cursor per thread: the task's thread starts the script at its start too, so the
    // answers form one `match` group that each caller picks from by what it was asked.
    let script = json!({"responses": [
        {"node": "task", "match": "count slowly", "tool_calls": [{"name": "slow", "args": {}}]},
        {"node": "agent", "match": "start it", "tool_calls": [{"name": "start_background_task",
            "args": {"id": "a", "role": "counter", "instructions": "Count.",
                     "task": "count slowly", "tools": ["slow"]}}]},
        {"node": "agent", "match": "\"type\":\"tool\"", "text": "Started."}
    ]});
    std::fs::write(dir.path().join("bg.json"), script.to_string()).expect("script");
    let config = ServerConfig::new(dir.path(), dir.path().join("db"))
        .storage(Storage::Memory)
        .registry(Arc::new(|| {
            let mut reg = Registry::default();
            let slow: Arc<dyn Tool> = Arc::new(Slow);
            let pool: ToolPool = Arc::new([("slow".to_string(), slow)].into_iter().collect());
            let tools: agentgraph_dsl::agents::ToolMap = Background::new(pool)
                .tools()
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect();
            agentgraph_dsl::agents::register(&mut reg, tools);
            reg
        }));
    let state = ServerState::new(&config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
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

impl Server {
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("post");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json")
    }

    /// Waits until `GET /threads/{thread}/tasks` shows task `a` in `state`.
    async fn task_a(&self, thread: &str, state: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.get(&format!("/threads/{thread}/tasks")).await;
            if v["tasks"][0]["state"] == state {
                return v;
            }
            assert!(Instant::now() < deadline, "task a never {state}: {v}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts task `a` on `thread` and waits until it runs after the run ended.
    async fn started(&self, thread: &str) {
        let (st, v) = self
            .post(
                &format!("/threads/{thread}/runs"),
                json!({"graph": "bg", "input": {"messages": [
                    {"type": "human", "id": "h1", "content": "start it"}]}}),
            )
            .await;
        assert_eq!(st, 202, "{v}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.get(&format!("/threads/{thread}/state?graph=bg")).await;
            if s["active"] == false && s["checkpoint_id"].is_string() {
                let last = s["values"]["messages"]
                    .as_array()
                    .and_then(|m| m.last().cloned());
                assert_eq!(last.expect("messages")["content"], "Started.", "{s}");
                break;
            }
            assert!(Instant::now() < deadline, "the run never ended: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.task_a(thread, "running").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_task_is_cancelled_by_its_route_and_all_by_the_threads_cancel() {
    let server = start().await;

    server.started("one").await;
    let (st, v) = server.post("/threads/one/tasks/a/cancel", json!({})).await;
    assert_eq!((st, v["cancelled"].clone()), (200, json!(true)), "{v}");
    let listed = server.task_a("one", "cancelled").await;
    assert_eq!(listed["tasks"][0]["id"], "a");
    // Over already, or never there.
    let (st, v) = server.post("/threads/one/tasks/a/cancel", json!({})).await;
    assert_eq!(
        (st, v["error"]["code"].clone()),
        (409, json!("TASK_FINISHED"))
    );
    let (st, v) = server.post("/threads/one/tasks/zz/cancel", json!({})).await;
    assert_eq!(
        (st, v["error"]["code"].clone()),
        (404, json!("UNKNOWN_TASK"))
    );

    server.started("two").await;
    let (st, v) = server.post("/threads/two/cancel", json!({})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["tasks_cancelled"], json!(["a"]), "{v}");
    server.task_a("two", "cancelled").await;
}
