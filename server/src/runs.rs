//! The run lifecycle: one active run per thread (this process's bookkeeping plus, when
//! configured, the shared thread lease), the run recorded with its run lease when configured,
//! the run's events streamed to the thread's event log between a `run started` and a run-end
//! event, its end recorded (or the run handed over at shutdown), the graph version pinned while
//! the thread may be resumed, cancellation here or on another server.

use crate::auth::Permit;
use crate::events::EventStore;
use crate::run_lease::{Fence, FencedCheckpointer, RunSpec};
use crate::thread_run::OpenRun;
use crate::{ServerState, Versioned};
use agentgraph_runtime::checkpoint::{RunOutcome, RunRecord, ThreadLease};
use agentgraph_runtime::{Input, RunConfig, RunError, RunErrorKind, RunOutput, RunStatus};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// A run in flight on a thread.
#[derive(Clone)]
pub(crate) struct ActiveRun {
    pub(crate) run_id: String,
    pub(crate) cancel: CancellationToken,
    /// Its run lease, when the server has run leases.
    pub(crate) fence: Option<Arc<Fence>>,
}

/// Why a run could not start, or a cancel could not be delivered.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// A run is active on the thread in this process.
    #[error("run {run_id} is active on thread {thread}")]
    Active {
        /// The thread.
        thread: String,
        /// The active run.
        run_id: String,
    },
    /// Another server holds the thread's lease.
    #[error("a run is active on thread {0} on another server")]
    ActiveElsewhere(String),
    /// The server is stopping and takes no new runs.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The shared thread locks could not be reached.
    #[error("{0}")]
    Locks(String),
}

/// A run that was started.
pub(crate) struct Started {
    pub(crate) run_id: String,
    /// The id of the graph version it runs, when known.
    pub(crate) graph_version: Option<String>,
}

/// What a cancel request did.
pub(crate) enum Cancelled {
    /// The run in flight here was asked to stop.
    Here { run_id: String },
    /// The server holding the thread's lease was asked to stop it.
    Elsewhere,
    /// No run is active on the thread.
    Nothing,
}

/// Refuses new runs while stopping or while a run is active on `thread` here.
pub(crate) fn ensure_idle(state: &ServerState, thread: &str) -> Result<(), LifecycleError> {
    if state.inner.shutdown.is_cancelled() {
        return Err(LifecycleError::ShuttingDown);
    }
    match state.runs().get(thread) {
        Some(r) => Err(LifecycleError::Active {
            thread: thread.to_string(),
            run_id: r.run_id.clone(),
        }),
        None => Ok(()),
    }
}

/// Takes the thread's shared lease when the server has thread locks, records the run when it
/// has run leases, registers the run (one per thread), pins the graph version to the thread
/// and spawns the run.
pub(crate) async fn start(
    state: &ServerState,
    thread: &str,
    graph_name: &str,
    (graph, version): Versioned,
    run: OpenRun,
    permit: Option<Permit>,
) -> Result<Started, LifecycleError> {
    let lease = match &state.inner.thread_locks {
        None => None,
        Some(locks) => match locks.try_acquire(thread).await {
            Ok(Some(lease)) => Some(lease),
            Ok(None) => {
                // Active here (the local check says which run) or on another server.
                ensure_idle(state, thread)?;
                return Err(LifecycleError::ActiveElsewhere(thread.to_string()));
            }
            Err(e) => {
                return Err(LifecycleError::Locks(format!(
                    "cannot take the lock of thread {thread}: {e}"
                )))
            }
        },
    };
    let OpenRun {
        input, mut config, ..
    } = run;
    let run_id = config
        .run_id
        .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
        .clone();
    // With a shared lease, a cancel request made on another server fires its token.
    config.cancel = run_token(lease.as_ref());
    let fence = match &state.inner.run_leases {
        None => None,
        Some(leases) => {
            let spec = RunSpec::new(graph_name, version.as_deref().cloned(), &input, &config);
            let record = RunRecord {
                run_id: run_id.clone(),
                thread_id: thread.to_string(),
                graph: graph_name.to_string(),
                spec: serde_json::to_value(&spec).unwrap_or(Value::Null),
            };
            let events = &state.inner.events;
            let floor = events.next_seq(thread).map_err(storage)?.saturating_sub(1);
            let since = Instant::now();
            let settings = &state.inner.lease_settings;
            let ceiling = leases
                .record(&record, settings.lease, floor)
                .await
                .map_err(|e| LifecycleError::Locks(format!("cannot record the run: {e}")))?;
            events.advance(thread, ceiling + 1).map_err(storage)?;
            let cancel = config.cancel.clone();
            Some(Fence::new(
                &run_id,
                leases.clone(),
                settings,
                since,
                ceiling,
                cancel,
            ))
        }
    };
    launch(
        state,
        Launch {
            thread: thread.to_string(),
            graph_name: graph_name.to_string(),
            graph: (graph, version),
            input,
            config,
            lease,
            fence,
            started: Map::new(),
            permit,
        },
    )
}

fn storage(e: crate::ServerError) -> LifecycleError {
    LifecycleError::Locks(e.to_string())
}

/// The cancellation of a run: fired by a cancel here, a lost run lease, or (through the
/// thread lease) a cancel request on another server.
pub(crate) fn run_token(lease: Option<&ThreadLease>) -> CancellationToken {
    lease
        .map(|l| l.cancellation().child_token())
        .unwrap_or_default()
}

/// A run ready to go: its thread lease and run lease already taken.
pub(crate) struct Launch {
    pub(crate) thread: String,
    pub(crate) graph_name: String,
    pub(crate) graph: Versioned,
    pub(crate) input: Input,
    /// With `run_id` and `cancel` set.
    pub(crate) config: RunConfig,
    pub(crate) lease: Option<ThreadLease>,
    pub(crate) fence: Option<Arc<Fence>>,
    /// Extra fields of the `run started` event (a run picked up from another server).
    pub(crate) started: Map<String, Value>,
    /// The run's slot under its principal's limits.
    pub(crate) permit: Option<Permit>,
}

/// Registers the run (one per thread), pins the graph version to the thread and spawns it.
pub(crate) fn launch(state: &ServerState, run: Launch) -> Result<Started, LifecycleError> {
    let run_id = run.config.run_id.clone().unwrap_or_default();
    let thread = run.thread.clone();
    let refused = {
        let mut runs = state.runs();
        if let Some(r) = runs.get(&thread) {
            Some(LifecycleError::Active {
                thread: thread.clone(),
                run_id: r.run_id.clone(),
            })
        } else if state.inner.shutdown.is_cancelled() {
            Some(LifecycleError::ShuttingDown)
        } else {
            runs.insert(
                thread.clone(),
                ActiveRun {
                    run_id: run_id.clone(),
                    cancel: run.config.cancel.clone(),
                    fence: run.fence.clone(),
                },
            );
            None
        }
    };
    if let Some(e) = refused {
        if let Some(fence) = run.fence {
            // Recorded but never run: not for another server to pick up either.
            tokio::spawn(async move {
                let _ = fence
                    .leases()
                    .finish(&fence.run_id, RunOutcome::Cancelled, Some("not started"))
                    .await;
            });
        }
        return Err(e);
    }
    let (graph, version) = run.graph.clone();
    let graph_version = version.as_ref().map(|v| v.id.clone());
    if let Ok(path) = state.inner.graphs.resolve(&run.graph_name) {
        let events = &state.inner.events;
        state
            .inner
            .graphs
            .pin(events, &thread, path, graph.clone(), version);
    }
    if let Err(e) = state.inner.events.set_graph(&thread, &run.graph_name) {
        tracing::warn!(thread, "cannot record the thread's graph: {e}");
    }
    let st = state.clone();
    let vid = graph_version.clone();
    state
        .inner
        .tasks
        .spawn(async move { drive(st, run, vid).await });
    Ok(Started {
        run_id,
        graph_version,
    })
}

/// Logs `envelope` (without `seq`: the log numbers it), warning when it cannot be stored.
fn log(events: &EventStore, thread: &str, envelope: Value) {
    if let Err(e) = events.append(thread, envelope) {
        tracing::warn!(thread, "cannot store an event: {e}");
    }
}

/// A `run` framing event.
fn run_event(data: Value) -> Value {
    json!({ "ns": [], "mode": "run", "node": null, "data": data })
}

/// Logs a run's event, first making sure its id is the run's to give out (with a run lease);
/// once the lease is lost the run's events are no longer logged.
async fn log_run(events: &EventStore, thread: &str, fence: Option<&Fence>, envelope: Value) {
    if let Some(f) = fence {
        match events.next_seq(thread) {
            Ok(seq) => {
                if !f.reserve(seq).await {
                    return;
                }
            }
            Err(e) => tracing::warn!(thread, "cannot read the event log: {e}"),
        }
    }
    log(events, thread, envelope);
}

/// Runs a graph, logging `run started`, its events, then a `run` event with how it ended.
async fn drive(state: ServerState, run: Launch, graph_version: Option<String>) {
    let Launch {
        thread,
        graph: (graph, _),
        input,
        config,
        lease,
        fence,
        mut started,
        // The principal's run slot, given back when this run ends.
        permit: _permit,
        ..
    } = run;
    let run_id = config.run_id.clone().unwrap_or_default();
    let events = &state.inner.events;
    started.insert("status".into(), json!("started"));
    crate::telemetry::metrics().run_started();
    started.insert("run_id".into(), json!(run_id));
    started.insert("graph_version".into(), json!(graph_version));
    log_run(
        events,
        &thread,
        fence.as_deref(),
        run_event(Value::Object(started)),
    )
    .await;
    if let Err(e) = events.set_running(&thread, Some(&run_id)) {
        tracing::warn!(thread = %thread, "cannot store an event: {e}");
    }
    // Every checkpoint write first checks the run's lease.
    let graph = match (&fence, graph.checkpointer()) {
        (Some(f), Some(cp)) => {
            let fenced = FencedCheckpointer {
                inner: cp.clone(),
                fence: f.clone(),
                thread: thread.to_string(),
            };
            graph.clone().with_checkpointer(Arc::new(fenced))
        }
        _ => graph,
    };
    let mut stream = graph.stream(input, config);
    while let Some(ev) = stream.next().await {
        let envelope = serde_json::to_value(&ev).unwrap_or(Value::Null);
        log_run(events, &thread, fence.as_deref(), envelope).await;
    }
    let finished = stream.finish().await;
    let (data, resumable) = match &fence {
        Some(f) if f.is_lost() => (
            json!({ "status": "interrupted", "run_id": run_id,
                "reason": "this server lost the run's lease; another server continues the run" }),
            true,
        ),
        _ => ending(&run_id, finished),
    };
    let data = match &fence {
        Some(f) if !f.is_lost() => record_end(&state, f, data).await,
        _ => data,
    };
    // The shared lease goes first, so another server may take the thread as soon as a
    // client has seen the end event.
    if let Some(lease) = lease {
        lease.release().await;
    }
    // The end event and the removal happen under the runs lock, so a run started after the
    // client saw the end event never interleaves with it and never gets 409.
    let mut runs = state.runs();
    log(events, &thread, run_event(data));
    if let Err(e) = events.set_running(&thread, None) {
        tracing::warn!(thread = %thread, "cannot store an event: {e}");
    }
    if runs.get(&thread).is_some_and(|r| r.run_id == run_id) {
        // A thread that may be resumed keeps its graph version; else the next run takes
        // the newest.
        if !resumable {
            state.inner.graphs.unpin(events, &thread);
        }
        runs.remove(&thread);
    }
}

/// Records how a leased run ended: a run cancelled by this server's shutdown is handed back
/// for another server to continue (`requeued: true` in the end event); any other end is marked
/// so that nobody picks the run up.
async fn record_end(state: &ServerState, fence: &Fence, mut data: Value) -> Value {
    let status = data["status"].as_str().unwrap_or_default();
    let outcome = match status {
        "done" => Some(RunOutcome::Done),
        "interrupted" => Some(RunOutcome::Interrupted),
        "failed" => Some(RunOutcome::Failed),
        "cancelled" if !state.inner.shutdown.is_cancelled() => Some(RunOutcome::Cancelled),
        _ => None,
    };
    let leases = fence.leases();
    let recorded = match outcome {
        Some(o) => {
            leases
                .finish(&fence.run_id, o, data["error"].as_str())
                .await
        }
        None => {
            let r = leases.hand_back(&fence.run_id).await;
            if matches!(r, Ok(true)) {
                if let Some(o) = data.as_object_mut() {
                    o.insert("requeued".into(), json!(true));
                }
            }
            r
        }
    };
    match recorded {
        Ok(true) => {}
        Ok(false) => tracing::warn!(run_id = %fence.run_id, "the run's lease was gone at its end"),
        Err(e) => tracing::warn!(run_id = %fence.run_id, "cannot record the run's end: {e}"),
    }
    data
}

/// The run-end event's data, and whether the thread may be resumed.
fn ending(run_id: &str, finished: Result<RunOutput, RunError>) -> (Value, bool) {
    use crate::telemetry::{metrics, RunEnd};
    metrics().run_ended(match &finished {
        Ok(out) if matches!(out.status, RunStatus::Done) => RunEnd::Done,
        Ok(_) => RunEnd::Interrupted,
        Err(e) if e.kind() == RunErrorKind::Cancelled => RunEnd::Cancelled,
        Err(_) => RunEnd::Failed,
    });
    match finished {
        Ok(out) => match out.status {
            RunStatus::Done => (
                json!({ "status": "done", "run_id": run_id, "checkpoint_id": out.checkpoint_id }),
                false,
            ),
            RunStatus::Interrupted { interrupts, next } => (
                json!({ "status": "interrupted", "run_id": run_id, "interrupts": interrupts,
                    "next": next, "checkpoint_id": out.checkpoint_id }),
                true,
            ),
        },
        Err(e) if e.kind() == RunErrorKind::Cancelled => {
            (json!({ "status": "cancelled", "run_id": run_id }), true)
        }
        Err(e) => (
            json!({ "status": "failed", "run_id": run_id, "error": e.to_string() }),
            false,
        ),
    }
}

/// Asks the run on `thread` to stop: the one in flight here, else (with shared thread locks)
/// the one another server runs.
pub(crate) async fn cancel(state: &ServerState, thread: &str) -> Result<Cancelled, LifecycleError> {
    let run = state.runs().get(thread).cloned();
    if let Some(r) = run {
        r.cancel.cancel();
        return Ok(Cancelled::Here { run_id: r.run_id });
    }
    let elsewhere = match &state.inner.thread_locks {
        Some(locks) => locks.request_cancel(thread).await.map_err(|e| {
            LifecycleError::Locks(format!(
                "cannot reach the other servers to cancel thread {thread}: {e}"
            ))
        })?,
        None => false,
    };
    Ok(if elsewhere {
        Cancelled::Elsewhere
    } else {
        Cancelled::Nothing
    })
}
