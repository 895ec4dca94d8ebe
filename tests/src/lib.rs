//! End-to-end test support: the long, deterministic "crash graph" that the `crash-worker` binary
//! runs on sled (and that the crash test runs uninterrupted in-process to get the expected state).
//!
//! Every super-step runs two parallel nodes, `left` and `right`; every fifth step a push task
//! `tally` (a `send`) joins them. Together they write every kind of channel:
//!
//! | channel    | reducer        | written by                                               |
//! |------------|----------------|----------------------------------------------------------|
//! | `target`   | replace        | the input (the number of loop steps)                     |
//! | `counter`  | replace        | `left`: `counter + 1`                                    |
//! | `trace`    | append         | all three: `L{k}@{step}`, `R{k}@{step}`, `T{k}@{step}`   |
//! | `total`    | sum            | all three                                                |
//! | `seen`     | merge          | `right` (a rolling key) and `tally`                      |
//! | `messages` | add_messages   | `left` and `right`, with edits and removals by id        |
//!
//! `k` is `counter + 1` as seen at the step's start; `step` is the engine's super-step number.
//! Both are baked into the values, so a step that is lost, run twice, or renumbered on resume
//! changes the final state. Message ids are deterministic (`m-{k}-{node}`), so states compare
//! exactly.

pub mod background;

use agentgraph_runtime::checkpoint::ChannelEntry;
use agentgraph_runtime::{
    node_fn, AddMessages, Append, ChannelSpec, Checkpoint, CheckpointError, CheckpointId,
    CheckpointTuple, Checkpointer, CompiledGraph, GraphBuilder, ListQuery, Merge, Numeric,
    PruneStats, Targets, Update, ValueType, END,
};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The thread the crash test uses.
pub const THREAD: &str = "crash-thread";

/// Called at the start of every task with the super-step number and the node name (the worker
/// prints `started step K` from it).
pub type StepHook = Arc<dyn Fn(i64, &str) + Send + Sync>;

/// The input that starts a run of `steps` loop steps.
pub fn input(steps: i64) -> Value {
    json!({ "target": steps })
}

async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

/// The crash graph. Each task sleeps `node_sleep` (so a run lasts long enough for kills to land
/// mid-run) and calls `hook` first. The sleep and the hook do not change the state.
pub fn crash_graph(node_sleep: Duration, hook: Option<StepHook>) -> CompiledGraph {
    let hook_l = hook.clone();
    let hook_r = hook.clone();
    let hook_t = hook;
    GraphBuilder::new("crash")
        .channel(ChannelSpec::new("target", ValueType::Int).default_value(json!(0)))
        .channel(ChannelSpec::new("counter", ValueType::Int).default_value(json!(0)))
        .channel(
            ChannelSpec::new("trace", "list<string>".parse().expect("type"))
                .reducer(Arc::new(Append))
                .default_value(json!([])),
        )
        .channel(
            ChannelSpec::new("total", ValueType::Int)
                .reducer(Arc::new(Numeric::sum()))
                .default_value(json!(0)),
        )
        .channel(
            ChannelSpec::new("seen", "map<int>".parse().expect("type"))
                .reducer(Arc::new(Merge))
                .default_value(json!({})),
        )
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .node(
            "left",
            node_fn(move |ctx| {
                let hook = hook_l.clone();
                async move {
                    let step = ctx.step();
                    if let Some(h) = &hook {
                        h(step, "left");
                    }
                    pause(node_sleep).await;
                    let k = ctx.state().i64("counter") + 1;
                    let mut msgs = vec![json!({
                        "type": "ai",
                        "id": format!("m-{k}-left"),
                        "content": format!("left {k} at step {step}"),
                    })];
                    if k % 10 == 0 {
                        // Edit an earlier message in place (replace by id).
                        msgs.push(json!({
                            "type": "ai",
                            "id": format!("m-{}-left", k - 5),
                            "content": format!("left {} edited by {k}", k - 5),
                        }));
                    }
                    Ok(Update::new()
                        .set("counter", json!(k))
                        .set("trace", json!([format!("L{k}@{step}")]))
                        .set("total", json!(k))
                        .set("messages", Value::Array(msgs)))
                }
            }),
        )
        .node(
            "right",
            node_fn(move |ctx| {
                let hook = hook_r.clone();
                async move {
                    let step = ctx.step();
                    if let Some(h) = &hook {
                        h(step, "right");
                    }
                    pause(node_sleep).await;
                    let k = ctx.state().i64("counter") + 1;
                    let mut msgs = vec![json!({
                        "type": "human",
                        "id": format!("m-{k}-right"),
                        "content": format!("right {k} at step {step}"),
                    })];
                    if k % 13 == 0 {
                        // Remove an earlier message by id.
                        msgs.push(json!({"type": "remove", "id": format!("m-{}-right", k - 3)}));
                    }
                    Ok(Update::new()
                        .set("trace", json!(format!("R{k}@{step}")))
                        .set("total", json!(k * k))
                        .set("seen", json!({ format!("r{}", k % 7): k }))
                        .set("messages", Value::Array(msgs)))
                }
            }),
        )
        .node(
            "tally",
            node_fn(move |ctx| {
                let hook = hook_t.clone();
                async move {
                    let step = ctx.step();
                    if let Some(h) = &hook {
                        h(step, "tally");
                    }
                    pause(node_sleep).await;
                    let k = ctx
                        .payload()
                        .and_then(|p| p.get("k"))
                        .and_then(Value::as_i64)
                        .unwrap_or(-1);
                    Ok(Update::new()
                        .set("trace", json!([format!("T{k}@{step}")]))
                        .set("total", json!(1000))
                        .set("seen", json!({ format!("t{k}"): step })))
                }
            }),
        )
        .edge("START", "left")
        .edge("START", "right")
        .route("left", |s| {
            let counter = s.i64("counter");
            if counter >= s.i64("target") {
                return Targets::from(END);
            }
            let mut t = Targets::from(vec!["left", "right"]);
            if counter > 0 && counter % 5 == 0 {
                t.0.push(agentgraph_runtime::Goto::Send(agentgraph_runtime::Send {
                    node: "tally".into(),
                    payload: json!({ "k": counter }),
                }));
            }
            t
        })
        .compile()
        .expect("the crash graph compiles")
}

/// The final state of a complete run of `steps` loop steps, computed in closed form without the
/// runtime: an oracle for the runtime's own uninterrupted run.
pub fn expected_final(steps: i64) -> Value {
    let mut trace = Vec::new();
    let mut total = 0i64;
    let mut seen = serde_json::Map::new();
    let mut messages: Vec<Value> = Vec::new();
    let find = |msgs: &[Value], id: &str| msgs.iter().position(|m| m["id"] == id);
    for k in 1..=steps {
        // Step k: left and right see counter k-1; a tally sent after step k-1 joins them.
        trace.push(json!(format!("L{k}@{k}")));
        trace.push(json!(format!("R{k}@{k}")));
        total += k + k * k;
        seen.insert(format!("r{}", k % 7), json!(k));
        let j = k - 1;
        if j > 0 && j % 5 == 0 {
            trace.push(json!(format!("T{j}@{k}")));
            total += 1000;
            seen.insert(format!("t{j}"), json!(k));
        }
        messages.push(json!({"type": "ai", "id": format!("m-{k}-left"), "content": format!("left {k} at step {k}")}));
        if k % 10 == 0 {
            let id = format!("m-{}-left", k - 5);
            let i = find(&messages, &id).expect("edited message exists");
            messages[i] =
                json!({"type": "ai", "id": id, "content": format!("left {} edited by {k}", k - 5)});
        }
        messages.push(json!({"type": "human", "id": format!("m-{k}-right"), "content": format!("right {k} at step {k}")}));
        if k % 13 == 0 {
            let i = find(&messages, &format!("m-{}-right", k - 3)).expect("removed message exists");
            messages.remove(i);
        }
    }
    json!({
        "target": steps,
        "counter": steps,
        "trace": trace,
        "total": total,
        "seen": seen,
        "messages": messages,
    })
}

/// Parses `--name value` pairs of the worker's command line.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The step number of a `started step K ...` line printed by the worker.
pub fn started_step(line: &str) -> Option<i64> {
    line.strip_prefix("started step ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Where a [`DieAt`] checkpointer kills its own process with SIGKILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiePoint {
    /// Right after the checkpoint of this step was written, before it is flushed.
    BeforeFlush(i64),
    /// Right after the checkpoint of this step was flushed (before the engine goes on).
    AfterFlush(i64),
}

impl std::str::FromStr for DiePoint {
    type Err = String;
    /// `before-flush:S` or `after-flush:S`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, step) = s
            .split_once(':')
            .ok_or_else(|| format!("expected before-flush:STEP or after-flush:STEP, got {s:?}"))?;
        let step: i64 = step
            .parse()
            .map_err(|e| format!("bad step in {s:?}: {e}"))?;
        match kind {
            "before-flush" => Ok(DiePoint::BeforeFlush(step)),
            "after-flush" => Ok(DiePoint::AfterFlush(step)),
            other => Err(format!("unknown die point kind {other:?}")),
        }
    }
}

impl std::fmt::Display for DiePoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiePoint::BeforeFlush(s) => write!(f, "before-flush:{s}"),
            DiePoint::AfterFlush(s) => write!(f, "after-flush:{s}"),
        }
    }
}

/// Kills the current process with SIGKILL (no destructors, no flushes, like `kill -9`).
pub fn sigkill_self() -> ! {
    // SAFETY: `getpid` and `kill` have no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    // SIGKILL cannot be caught; this is only reached if delivery is delayed.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A checkpointer that delegates to another and SIGKILLs the process at an exact storage
/// boundary (the worker's `--die` option): precise kill points, unlike a kill from outside.
pub struct DieAt {
    inner: Arc<dyn Checkpointer>,
    point: Option<DiePoint>,
    last_put_step: AtomicI64,
}

impl DieAt {
    /// Wraps `inner`; `point: None` never dies.
    pub fn new(inner: Arc<dyn Checkpointer>, point: Option<DiePoint>) -> Self {
        DieAt {
            inner,
            point,
            last_put_step: AtomicI64::new(i64::MIN),
        }
    }
}

#[async_trait]
impl Checkpointer for DieAt {
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError> {
        self.inner.put(thread, ns, checkpoint, blobs).await?;
        self.last_put_step.store(checkpoint.step, Ordering::SeqCst);
        if self.point == Some(DiePoint::BeforeFlush(checkpoint.step)) {
            sigkill_self();
        }
        Ok(())
    }

    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError> {
        self.inner.put_writes(thread, ns, id, task_id, writes).await
    }

    async fn get(
        &self,
        thread: &str,
        ns: &str,
        id: Option<CheckpointId>,
    ) -> Result<Option<CheckpointTuple>, CheckpointError> {
        self.inner.get(thread, ns, id).await
    }

    async fn list(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError> {
        self.inner.list(thread, query).await
    }

    async fn channel_entries(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError> {
        self.inner
            .channel_entries(thread, ns, channel, version)
            .await
    }

    async fn blob(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        id: CheckpointId,
    ) -> Result<Option<ChannelEntry>, CheckpointError> {
        self.inner.blob(thread, ns, channel, id).await
    }

    async fn list_threads(&self) -> Result<Vec<String>, CheckpointError> {
        self.inner.list_threads().await
    }

    async fn delete_thread(&self, thread: &str) -> Result<(), CheckpointError> {
        self.inner.delete_thread(thread).await
    }

    async fn prune(
        &self,
        thread: Option<&str>,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        self.inner.prune(thread, keep).await
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.inner.flush().await?;
        let step = self.last_put_step.load(Ordering::SeqCst);
        if self.point == Some(DiePoint::AfterFlush(step)) {
            sigkill_self();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_runtime::{Durability, Input, MemoryCheckpointer, RunConfig};

    #[test]
    fn command_line_helpers() {
        let args: Vec<String> = ["run", "--db", "x", "--steps", "7"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(flag(&args, "--db"), Some("x"));
        assert_eq!(flag(&args, "--steps"), Some("7"));
        assert_eq!(flag(&args, "--thread"), None);
        assert_eq!(started_step("started step 12 left"), Some(12));
        assert_eq!(started_step("resuming from step 3"), None);
        for p in [DiePoint::BeforeFlush(-1), DiePoint::AfterFlush(42)] {
            assert_eq!(p.to_string().parse::<DiePoint>(), Ok(p));
        }
        assert!("during-flush:1".parse::<DiePoint>().is_err());
    }

    #[tokio::test]
    async fn the_runtime_agrees_with_the_closed_form() {
        for steps in [1, 5, 6, 13, 40] {
            let graph = crash_graph(Duration::ZERO, None)
                .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
            let out = graph
                .invoke(
                    Input::values(input(steps)),
                    RunConfig::thread(THREAD).durability(Durability::Sync),
                )
                .await
                .unwrap();
            assert_eq!(out.values, expected_final(steps), "{steps} steps");
            assert_eq!(out.stats.steps, steps as u64);
        }
    }
}
