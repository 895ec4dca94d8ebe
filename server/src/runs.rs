//! The run lifecycle: one active run per thread (this process's bookkeeping plus, when
//! configured, the shared thread lease), the run's events streamed to the thread's event log
//! between a `run started` and a run-end event, the graph version pinned while the thread may
//! be resumed, cancellation here or on another server.

use crate::events::EventStore;
use crate::thread_run::OpenRun;
use crate::{ServerState, Versioned};
use agentgraph_runtime::checkpoint::ThreadLease;
use agentgraph_runtime::{
    CompiledGraph, Input, RunConfig, RunError, RunErrorKind, RunOutput, RunStatus,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// A run in flight on a thread.
#[derive(Clone)]
pub(crate) struct ActiveRun {
    pub(crate) run_id: String,
    pub(crate) cancel: CancellationToken,
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

/// Takes the thread's shared lease when the server has thread locks, registers the run (one
/// per thread), pins the graph version to the thread and spawns the run.
pub(crate) async fn start(
    state: &ServerState,
    thread: &str,
    graph_name: &str,
    (graph, version): Versioned,
    run: OpenRun,
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
    let cancel = lease
        .as_ref()
        .map(|l| l.cancellation().clone())
        .unwrap_or_default();
    config.cancel = cancel.clone();
    {
        let mut runs = state.runs();
        if let Some(r) = runs.get(thread) {
            return Err(LifecycleError::Active {
                thread: thread.to_string(),
                run_id: r.run_id.clone(),
            });
        }
        if state.inner.shutdown.is_cancelled() {
            return Err(LifecycleError::ShuttingDown);
        }
        runs.insert(
            thread.to_string(),
            ActiveRun {
                run_id: run_id.clone(),
                cancel,
            },
        );
    }
    let graph_version = version.as_ref().map(|v| v.id.clone());
    if let Ok(path) = state.inner.graphs.resolve(graph_name) {
        let events = &state.inner.events;
        state
            .inner
            .graphs
            .pin(events, thread, path, graph.clone(), version);
    }
    if let Err(e) = state.inner.events.set_graph(thread, graph_name) {
        tracing::warn!(thread, "cannot record the thread's graph: {e}");
    }
    let st = state.clone();
    let (t, rid, vid) = (thread.to_string(), run_id.clone(), graph_version.clone());
    state
        .inner
        .tasks
        .spawn(async move { drive(st, t, (rid, vid), graph, (input, config), lease).await });
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

/// Runs a graph, logging `run started`, its events, then a `run` event with how it ended.
async fn drive(
    state: ServerState,
    thread: String,
    (run_id, graph_version): (String, Option<String>),
    graph: CompiledGraph,
    (input, config): (Input, RunConfig),
    lease: Option<ThreadLease>,
) {
    let events = &state.inner.events;
    log(
        events,
        &thread,
        run_event(json!({ "status": "started", "run_id": run_id, "graph_version": graph_version })),
    );
    if let Err(e) = events.set_running(&thread, Some(&run_id)) {
        tracing::warn!(thread = %thread, "cannot store an event: {e}");
    }
    let mut stream = graph.stream(input, config);
    while let Some(ev) = stream.next().await {
        log(
            events,
            &thread,
            serde_json::to_value(&ev).unwrap_or(Value::Null),
        );
    }
    let (data, resumable) = ending(&run_id, stream.finish().await);
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

/// The run-end event's data, and whether the thread may be resumed.
fn ending(run_id: &str, finished: Result<RunOutput, RunError>) -> (Value, bool) {
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
