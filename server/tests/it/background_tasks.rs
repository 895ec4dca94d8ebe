//! Background tasks over HTTP: a graph's `start_background_task` leaves a task running after
//! its run ended; `GET /threads/{id}/tasks` lists it, `POST /threads/{id}/tasks/{task}/cancel`
//! stops it (the server's cancel of one task), and `POST /threads/{id}/cancel` stops every
//! task of the thread. With run leases, a task keeps writing its own thread after the run that
//! started it ended (the run's fence guards the run's thread only).

use agentgraph_agents::orchestration::background::Background;
use agentgraph_agents::orchestration::ToolPool;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::Registry;
use agentgraph_runtime::checkpoint::{
    CheckpointError, ClaimedRun, RunLeases, RunOutcome, RunRecord,
};
use agentgraph_server::{serve_on, LeaseSettings, ServerConfig, ServerState, Storage};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
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

/// Opened by the test: `gate` calls wait until then.
static GATE: AtomicBool = AtomicBool::new(false);

/// `gate`: waits until [`GATE`] opens.
struct Gate;

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits for the gate."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        while !GATE.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(ToolOutput::text("open"))
    }
}

/// Run leases in memory: a run holds its lease until it finished.
#[derive(Default)]
struct Ending {
    finished: Mutex<BTreeSet<String>>,
}

#[async_trait]
impl RunLeases for Ending {
    fn owner(&self) -> &str {
        "test"
    }
    async fn record(&self, _: &RunRecord, _: Duration, floor: u64) -> Result<u64, CheckpointError> {
        Ok(floor)
    }
    async fn renew(&self, runs: &[String], _: Duration) -> Result<Vec<String>, CheckpointError> {
        Ok(runs.to_vec())
    }
    async fn holds(&self, run_id: &str) -> Result<bool, CheckpointError> {
        Ok(!self.finished.lock().expect("lock").contains(run_id))
    }
    async fn reserve_events(&self, _: &str, _: u64) -> Result<bool, CheckpointError> {
        Ok(true)
    }
    async fn finish(
        &self,
        run_id: &str,
        _: RunOutcome,
        _: Option<&str>,
    ) -> Result<bool, CheckpointError> {
        self.finished
            .lock()
            .expect("lock")
            .insert(run_id.to_string());
        Ok(true)
    }
    async fn hand_back(&self, _: &str) -> Result<bool, CheckpointError> {
        Ok(true)
    }
    async fn claim_expired(
        &self,
        _: Duration,
        _: u32,
    ) -> Result<Option<ClaimedRun>, CheckpointError> {
        Ok(None)
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
    start_with(None).await
}

async fn start_with(leases: Option<Arc<Ending>>) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bg.ag"), GRAPH).expect("graph");
    // One cursor per thread: the task's thread starts the script at its start too, so the
    // answers form one `match` group that each caller picks from by what it was asked.
    let script = json!({"responses": [
        {"node": "task", "match": "count slowly", "tool_calls": [{"name": "slow", "args": {}}]},
        {"node": "task", "match": "\"open\"", "text": "Through."},
        {"node": "task", "match": "pass the gate", "tool_calls": [{"name": "gate", "args": {}}]},
        {"node": "agent", "match": "\"type\":\"tool\"", "text": "Started."},
        {"node": "agent", "match": "gate it", "tool_calls": [{"name": "start_background_task",
            "args": {"id": "a", "role": "gatekeeper", "instructions": "Pass.",
                     "task": "pass the gate", "tools": ["gate"]}}]},
        {"node": "agent", "match": "start it", "tool_calls": [{"name": "start_background_task",
            "args": {"id": "a", "role": "counter", "instructions": "Count.",
                     "task": "count slowly", "tools": ["slow"]}}]}
    ]});
    std::fs::write(dir.path().join("bg.json"), script.to_string()).expect("script");
    let mut config = ServerConfig::new(dir.path(), dir.path().join("db"))
        .storage(Storage::Memory)
        .registry(Arc::new(|| {
            let mut reg = Registry::default();
            let (slow, gate): (Arc<dyn Tool>, Arc<dyn Tool>) = (Arc::new(Slow), Arc::new(Gate));
            let pool: ToolPool = Arc::new(
                [("slow".to_string(), slow), ("gate".to_string(), gate)]
                    .into_iter()
                    .collect(),
            );
            let tools: agentgraph_dsl::agents::ToolMap = Background::new(pool)
                .tools()
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect();
            agentgraph_dsl::agents::register(&mut reg, tools);
            reg
        }));
    if let Some(leases) = leases {
        config = config.run_leases(leases, LeaseSettings::default());
    }
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
        self.run(thread, "start it").await;
        self.task_a(thread, "running").await;
    }

    /// Runs a turn saying `text` on `thread` and waits until its run ended.
    async fn run(&self, thread: &str, text: &str) {
        let (st, v) = self
            .post(
                &format!("/threads/{thread}/runs"),
                json!({"graph": "bg", "input": {"messages": [
                    {"type": "human", "id": "h1", "content": text}]}}),
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
                assert!(
                    last.expect("messages")["content"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("Started")),
                    "{s}"
                );
                break;
            }
            assert!(Instant::now() < deadline, "the run never ended: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

#[tokio::test(flavor = "multi_thread")]
async fn with_run_leases_a_task_outlives_the_lease_of_the_run_that_started_it() {
    let leases = Arc::new(Ending::default());
    let server = start_with(Some(leases.clone())).await;
    server.run("leased", "gate it").await;
    // The run that started the task has ended: its lease no longer holds.
    let deadline = Instant::now() + Duration::from_secs(20);
    while leases.finished.lock().expect("lock").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the run's end was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    GATE.store(true, Ordering::SeqCst);
    let v = server.task_a("leased", "done").await;
    assert_eq!(v["tasks"][0]["result"], "Through.", "{v}");
}
