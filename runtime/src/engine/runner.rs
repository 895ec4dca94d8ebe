//! Running a step's tasks: each node call with its timeout, retry policy, cancellation, panic
//! capture and tracing span; a step's tasks run concurrently, results kept in task order.

use super::plan::TaskPlan;
use crate::cache::NodeCache;
use crate::error::RunError;
use crate::graph::{GraphInner, NodeOptions};
use crate::node::{Node, NodeError, TaskContext, TaskHost};
use crate::retry::RetryOn;
use crate::state::StateView;
use crate::store::Store;
use crate::stream::Emitter;
use crate::stream::{DebugEvent, EventKind, Mode};
use crate::update::Update;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How one task of a step ended.
pub(super) enum TaskEnd {
    /// It returned an update. `cached`: not run, reused (from the node cache, or from the
    /// pending writes of an earlier attempt, which `saved` says).
    Done {
        update: Update,
        cached: bool,
        saved: bool,
    },
    /// It asked a human.
    Interrupted(Vec<crate::node::Interrupt>),
    /// It failed after its retries (or the run was cancelled).
    Failed(NodeError),
    /// It panicked; the message is the panic's.
    Panicked(String),
}

impl TaskEnd {
    /// The error text stored as the task's pending `__error__` write.
    pub(super) fn error_text(&self) -> Option<String> {
        match self {
            TaskEnd::Failed(e) => Some(e.to_string()),
            TaskEnd::Panicked(m) => Some(panic_text(m)),
            _ => None,
        }
    }

    /// The run error of a task that failed or panicked (`None` for the others).
    pub(super) fn into_error(
        self,
        node: &str,
        step: i64,
        thread: &str,
        ns: &[String],
    ) -> Option<RunError> {
        let (message, code) = match self {
            TaskEnd::Done { .. } | TaskEnd::Interrupted(_) => return None,
            TaskEnd::Failed(NodeError::Cancelled) => {
                return Some(RunError::Cancelled(thread.to_string()))
            }
            TaskEnd::Panicked(message) => {
                return Some(RunError::Panicked {
                    node: node.to_string(),
                    step,
                    thread: thread.to_string(),
                    ns: ns.to_vec(),
                    message,
                })
            }
            TaskEnd::Failed(NodeError::Failed { message, code, .. }) => (message, code),
            TaskEnd::Failed(other) => (other.to_string(), None),
        };
        Some(RunError::NodeFailed {
            node: node.to_string(),
            step,
            thread: thread.to_string(),
            ns: ns.to_vec(),
            message,
            code,
        })
    }
}

/// What the tasks of one step are given.
pub(super) struct StepEnv<'a> {
    pub graph: &'a GraphInner,
    pub step: i64,
    /// The state as of the step's start.
    pub state: StateView,
    pub ns: &'a Arc<Vec<String>>,
    pub thread: &'a Arc<str>,
    pub emitter: &'a Emitter,
    pub cancel: &'a CancellationToken,
    pub resume: &'a Arc<BTreeMap<String, Value>>,
    pub host: Arc<dyn TaskHost>,
    /// The graph's store, for the task contexts.
    pub store: Option<Arc<dyn Store>>,
    /// The node cache (used for nodes with a cache policy).
    pub cache: Option<Arc<dyn NodeCache>>,
    /// Updates of tasks that finished in an earlier attempt of this step, by task id.
    pub finished: HashMap<&'a str, Update>,
}

/// How a step's tasks ended.
pub(super) struct Ran {
    /// One end per planned task, in task order.
    pub ends: Vec<TaskEnd>,
    /// Tasks that ran (reused ones excluded).
    pub executed: u64,
}

/// Runs a step's tasks concurrently; those that finished in an earlier attempt of the step are
/// reused. `counts` (executions per node) grows by the tasks that ran.
pub(super) async fn execute(env: StepEnv<'_>, plans: &mut [TaskPlan], counts: &mut [u64]) -> Ran {
    let mut ends: Vec<Option<TaskEnd>> = Vec::with_capacity(plans.len());
    let mut jobs = Vec::new();
    for (index, plan) in plans.iter_mut().enumerate() {
        let entry = &env.graph.nodes[plan.node];
        if let Some(update) = env.finished.get(plan.id.as_str()) {
            ends.push(Some(TaskEnd::Done {
                update: update.clone(),
                cached: true,
                saved: true,
            }));
            reused(&env, &entry.name, &plan.id).await;
            continue;
        }
        let mut cache = None;
        if let (Some(c), Some(policy)) = (&env.cache, &entry.options.cache) {
            let input = match &plan.payload {
                Some(p) => p.clone(),
                None => env.state.to_object(),
            };
            let key = policy.key_of(&env.graph.name, &entry.name, &input);
            match c.get(&env.graph.name, &entry.name, &key).await {
                Ok(Some(update)) => {
                    ends.push(Some(TaskEnd::Done {
                        update,
                        cached: true,
                        saved: false,
                    }));
                    reused(&env, &entry.name, &plan.id).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(node = %entry.name, error = %e, "node cache read failed; running the node")
                }
            }
            cache = Some(CacheSlot {
                cache: c.clone(),
                graph: env.graph.name.clone(),
                node: entry.name.clone(),
                key,
                ttl: policy.ttl,
            });
        }
        ends.push(None);
        counts[plan.node] += 1;
        let ctx = TaskContext {
            state: env.state.clone(),
            payload: plan.payload.take(),
            node: entry.label.clone(),
            task_id: Arc::from(plan.id.as_str()),
            step: env.step,
            ns: env.ns.clone(),
            thread_id: env.thread.clone(),
            emitter: env.emitter.clone(),
            cancel: env.cancel.clone(),
            resume: env.resume.clone(),
            interrupt_calls: Arc::new(AtomicUsize::new(0)),
            host: Some(env.host.clone()),
            salvage: Default::default(),
            store: env.store.clone(),
            answered: Arc::default(),
        };
        jobs.push(Job {
            index,
            node: entry.node.clone(),
            ctx,
            options: entry.options.clone(),
            cache,
        });
    }
    let executed = jobs.len() as u64;
    // Only the tasks hold the snapshot now: once they end, values can be updated in place.
    drop(env);
    run_jobs(jobs, &mut ends).await;
    let ends = ends
        .into_iter()
        .map(|e| e.unwrap_or_else(|| TaskEnd::Failed(NodeError::fatal("task produced no result"))))
        .collect();
    Ran { ends, executed }
}

/// Emits the debug end of a task that was not run (its update reused).
async fn reused(env: &StepEnv<'_>, node: &str, task_id: &str) {
    if env.emitter.enabled(Mode::Debug) {
        let ev = DebugEvent::TaskEnd {
            step: env.step,
            task_id: task_id.to_string(),
            error: None,
            cached: true,
        };
        env.emitter.emit(Some(node), EventKind::Debug(ev)).await;
    }
}

/// Where a task with a cache policy keeps its update when it succeeds.
struct CacheSlot {
    cache: Arc<dyn NodeCache>,
    graph: String,
    node: String,
    key: String,
    ttl: Option<std::time::Duration>,
}

/// A task to run: its index in the step, node, context, options and cache entry.
struct Job {
    index: usize,
    node: Arc<dyn Node>,
    ctx: TaskContext,
    options: NodeOptions,
    cache: Option<CacheSlot>,
}

/// Why an attempt produced no update.
enum Failure {
    Node(NodeError),
    Panic(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::Node(e) => e.to_string(),
            Failure::Panic(m) => panic_text(m),
        }
    }
}

fn panic_text(message: &str) -> String {
    format!("node panicked: {message}")
}

/// The message of a panic payload.
fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Whether a retry policy retries this failure (a panic counts as a fatal failure).
fn retryable(f: &Failure, on: &RetryOn) -> bool {
    match (f, on) {
        (Failure::Panic(_), RetryOn::Any) => true,
        (Failure::Panic(_), _) => false,
        (Failure::Node(e), on) => match (e, on) {
            (NodeError::Interrupted(_) | NodeError::Cancelled, _) => false,
            (NodeError::Timeout(_), RetryOn::Transient | RetryOn::Any) => true,
            (NodeError::Failed { retryable, .. }, RetryOn::Transient) => *retryable,
            (NodeError::Failed { .. }, RetryOn::Any) => true,
            (NodeError::Failed { code: Some(c), .. }, RetryOn::Codes(codes)) => codes.contains(c),
            _ => false,
        },
    }
}

async fn attempt(
    node: &Arc<dyn Node>,
    ctx: TaskContext,
    options: &NodeOptions,
) -> Result<Update, Failure> {
    let cancel = ctx.cancel.clone();
    let call = AssertUnwindSafe(node.run(ctx)).catch_unwind();
    let timed = async {
        match options.timeout {
            Some(t) => match tokio::time::timeout(t, call).await {
                Ok(r) => r,
                Err(_) => Ok(Err(NodeError::Timeout(t))),
            },
            None => call.await,
        }
    };
    tokio::select! {
        r = timed => match r {
            Ok(result) => result.map_err(Failure::Node),
            Err(p) => Err(Failure::Panic(panic_message(&*p))),
        },
        _ = cancel.cancelled() => Err(Failure::Node(NodeError::Cancelled)),
    }
}

/// Runs a task to its end, retrying as its policy says; a success is cached when the task
/// has a cache entry.
async fn run_task(job: Job) -> TaskEnd {
    let Job {
        node,
        ctx,
        options,
        cache,
        ..
    } = job;
    let span =
        tracing::info_span!("task", node = %ctx.node, task_id = %ctx.task_id, step = ctx.step);
    async move {
        let debug = ctx.emitter.enabled(Mode::Debug);
        if debug {
            let ev = DebugEvent::TaskStart {
                step: ctx.step,
                task_id: ctx.task_id.to_string(),
            };
            ctx.emitter
                .emit(Some(&ctx.node), EventKind::Debug(ev))
                .await;
        }
        let mut n = 1u32;
        let result = loop {
            let mut this = ctx.clone();
            this.interrupt_calls = Arc::new(AtomicUsize::new(0));
            let r = attempt(&node, this, &options).await;
            match (&r, &options.retry) {
                (Err(f), Some(policy))
                    if n < policy.max_attempts && retryable(f, &policy.retry_on) =>
                {
                    let wait = policy.backoff(n);
                    tracing::warn!(attempt = n, error = %f.text(), ?wait, "task failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = ctx.cancel.cancelled() => break Err(Failure::Node(NodeError::Cancelled)),
                    }
                    n += 1;
                }
                _ => break r,
            }
        };
        if debug {
            let error = result.as_ref().err().map(Failure::text);
            let ev = DebugEvent::TaskEnd {
                step: ctx.step,
                task_id: ctx.task_id.to_string(),
                error,
                cached: false,
            };
            ctx.emitter
                .emit(Some(&ctx.node), EventKind::Debug(ev))
                .await;
        }
        let failure = match result {
            Ok(update) => {
                let answered = ctx.answered.load(std::sync::atomic::Ordering::SeqCst);
                if let Some(slot) = cache.filter(|_| !answered) {
                    let set = slot
                        .cache
                        .set(&slot.graph, &slot.node, &slot.key, &update, slot.ttl);
                    if let Err(e) = set.await {
                        tracing::warn!(error = %e, "node cache write failed");
                    }
                }
                return TaskEnd::Done {
                    update,
                    cached: false,
                    saved: false,
                };
            }
            Err(Failure::Node(NodeError::Interrupted(list))) => return TaskEnd::Interrupted(list),
            Err(Failure::Node(NodeError::Cancelled)) => {
                return TaskEnd::Failed(NodeError::Cancelled)
            }
            Err(f) => f,
        };
        let Some(channel) = &options.catch else {
            return match failure {
                Failure::Node(e) => TaskEnd::Failed(e),
                Failure::Panic(m) => TaskEnd::Panicked(m),
            };
        };
        let (code, message) = match &failure {
            Failure::Node(NodeError::Failed { code, message, .. }) => (code.clone(), message.clone()),
            Failure::Node(NodeError::Timeout(_)) => (Some("TIMEOUT".to_string()), failure.text()),
            other => (None, other.text()),
        };
        tracing::warn!(error = %failure.text(), channel = %channel, "task failed; error caught");
        // What the task had already done (a subgraph's finished steps) is kept.
        let mut update = Update::new();
        if let Some(writes) = ctx.salvage.lock().ok().and_then(|mut s| s.take()) {
            update.writes = writes;
        }
        TaskEnd::Done {
            update: update.set(
                channel.clone(),
                serde_json::json!({"node": &*ctx.node, "code": code, "message": message}),
            ),
            cached: false,
            saved: false,
        }
    }
    .instrument(span)
    .await
}

/// Runs the jobs concurrently and stores each end at its job's index in `ends`.
async fn run_jobs(mut jobs: Vec<Job>, ends: &mut [Option<TaskEnd>]) {
    if jobs.len() == 1 {
        if let Some(j) = jobs.pop() {
            let index = j.index;
            ends[index] = Some(run_task(j).await);
        }
    } else if jobs.len() <= spawn_limit() {
        let handles: Vec<(usize, tokio::task::JoinHandle<TaskEnd>)> = jobs
            .into_iter()
            .map(|j| (j.index, tokio::spawn(run_task(j))))
            .collect();
        for (i, h) in handles {
            ends[i] = Some(h.await.unwrap_or_else(joined_error));
        }
    } else {
        // A wide step (map-reduce over thousands of items): a few spawned groups, each driving
        // its share of the tasks concurrently (up to GROUP_CONCURRENCY at a time, so the
        // futures of a 10 000-task step are not all alive at once).
        let chunk = jobs.len().div_ceil(spawn_limit());
        let mut groups = Vec::new();
        let mut rest = jobs.into_iter();
        loop {
            let part: Vec<_> = rest.by_ref().take(chunk).collect();
            if part.is_empty() {
                break;
            }
            groups.push(tokio::spawn(run_group(part)));
        }
        for g in groups {
            match g.await {
                Ok(results) => {
                    for (i, r) in results {
                        ends[i] = Some(r);
                    }
                }
                Err(e) => tracing::error!(error = %e, "a task group failed"),
            }
        }
    }
}

/// The end of a spawned task that did not return (it panicked outside its node, or was aborted).
fn joined_error(e: tokio::task::JoinError) -> TaskEnd {
    if e.is_panic() {
        TaskEnd::Panicked(panic_message(&*e.into_panic()))
    } else {
        TaskEnd::Failed(NodeError::fatal(format!("task did not finish: {e}")))
    }
}

type JobFuture = Pin<Box<dyn Future<Output = (usize, TaskEnd)> + Send>>;

fn run_job(j: Job) -> JobFuture {
    Box::pin(async move { (j.index, run_task(j).await) })
}

/// Runs a share of a wide step, a bounded number at a time.
async fn run_group(part: Vec<Job>) -> Vec<(usize, TaskEnd)> {
    let mut out = Vec::with_capacity(part.len());
    let mut rest = part.into_iter();
    let mut running: futures::stream::FuturesUnordered<_> =
        rest.by_ref().take(GROUP_CONCURRENCY).map(run_job).collect();
    while let Some(done) = running.next().await {
        out.push(done);
        if let Some(job) = rest.next() {
            running.push(run_job(job));
        }
    }
    out
}

/// Tasks of a wide step that one group drives at the same time.
const GROUP_CONCURRENCY: usize = 256;

/// How many tasks of one step get their own tokio task; wider steps are grouped.
fn spawn_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(2)
            * 8
    })
}
