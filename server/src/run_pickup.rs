//! Picking up runs other servers left: a run whose lease expired (its server was killed or cut
//! off) or that was handed back (its server shut down) is taken by one server, which continues
//! it from the thread's last checkpoint with the graph version and settings it was recorded
//! with. Its events go on in this server's log for the thread, with ids above every id given
//! out for the thread before.

use crate::run_lease::{Fence, RunSpec};
use crate::runs::{self, Launch};
use crate::{ServerState, Versioned};
use agentgraph_runtime::checkpoint::{ClaimedRun, RunLeases, RunOutcome, Source, ThreadLease};
use agentgraph_runtime::Input;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// Runs taken per heartbeat at most, so that servers share a backlog.
const PER_TICK: usize = 8;

/// Takes the runs waiting to be picked up (up to [`PER_TICK`]) and starts them here.
pub(crate) async fn pick_up(state: &ServerState, leases: &Arc<dyn RunLeases>) {
    let settings = state.inner.lease_settings;
    for _ in 0..PER_TICK {
        if state.inner.shutdown.is_cancelled() {
            return;
        }
        let since = Instant::now();
        let claim = match leases
            .claim_expired(settings.lease, settings.max_attempts)
            .await
        {
            Ok(Some(claim)) => claim,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("cannot look for runs to pick up: {e}");
                return;
            }
        };
        let (run_id, thread) = (claim.record.run_id.clone(), claim.record.thread_id.clone());
        if claim.gave_up {
            tracing::warn!(
                run_id,
                thread,
                attempts = claim.attempts,
                "a run was taken over too many times; marked failed"
            );
            continue;
        }
        tracing::info!(run_id, thread, from = ?claim.previous_owner, "picking up a run");
        if let Err(why) = take_over(state, leases, claim, since).await {
            tracing::warn!(run_id, thread, "cannot continue the run: {why}");
        }
    }
}

/// Why a claimed run was not started, and what becomes of it.
enum Refusal {
    /// Worth another try after the lease (the thread is busy, storage failed).
    Later(String),
    /// It can never run (no such graph, an unreadable record).
    Never(String),
}

async fn take_over(
    state: &ServerState,
    leases: &Arc<dyn RunLeases>,
    claim: ClaimedRun,
    since: Instant,
) -> Result<(), String> {
    let run_id = claim.record.run_id.clone();
    match prepare(state, leases, claim, since).await {
        Ok(Some(launch)) => runs::launch(state, launch)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Ok(None) => Ok(()),
        // The claim stays this server's until it expires: the run is tried again after a
        // lease (a third refusal marks it failed), and a server still running it elsewhere
        // is fenced off meanwhile.
        Err(Refusal::Later(why)) => Err(why),
        Err(Refusal::Never(why)) => {
            let _ = leases.finish(&run_id, RunOutcome::Failed, Some(&why)).await;
            Err(why)
        }
    }
}

/// Everything a claimed run needs to start here, or `None` when its checkpoints show it had
/// already ended (its server died before recording that).
async fn prepare(
    state: &ServerState,
    leases: &Arc<dyn RunLeases>,
    claim: ClaimedRun,
    since: Instant,
) -> Result<Option<Launch>, Refusal> {
    let (run_id, thread) = (&claim.record.run_id, &claim.record.thread_id);
    let spec: RunSpec = serde_json::from_value(claim.record.spec.clone())
        .map_err(|e| Refusal::Never(format!("unreadable run record: {e}")))?;
    let lease = thread_lease(state, thread).await?;
    if state.runs().contains_key(thread) {
        return Err(Refusal::Later(format!(
            "a run is active on thread {thread} here"
        )));
    }
    let graph = graph_of(state, &spec).await?;
    // The run's own checkpoint says where it stands; without one it starts from its input.
    let snapshot = graph
        .0
        .get_state(thread, None)
        .await
        .map_err(|e| Refusal::Later(format!("cannot read the thread: {e}")))?;
    let input = match snapshot.filter(|s| s.metadata.get("run_id") == Some(&json!(run_id))) {
        Some(s) if !s.interrupts.is_empty() => {
            let _ = leases.finish(run_id, RunOutcome::Interrupted, None).await;
            return Ok(None);
        }
        // An input checkpoint lists no next nodes yet: continuing applies its input.
        Some(s) if s.next.is_empty() && s.source != Source::Input => {
            let _ = leases.finish(run_id, RunOutcome::Done, None).await;
            return Ok(None);
        }
        Some(_) => Input::Continue,
        None => spec.input(),
    };
    let events = &state.inner.events;
    let local = events
        .next_seq(thread)
        .map_err(|e| Refusal::Later(e.to_string()))?;
    events
        .advance(thread, claim.event_ceiling.max(local.saturating_sub(1)) + 1)
        .map_err(|e| Refusal::Later(e.to_string()))?;
    let mut config = spec.config(thread, run_id);
    config.cancel = runs::run_token(lease.as_ref());
    let fence = Fence::new(
        run_id,
        leases.clone(),
        &state.inner.lease_settings,
        since,
        claim.event_ceiling,
        config.cancel.clone(),
    );
    let mut started = Map::new();
    started.insert("resumed".into(), Value::Bool(true));
    started.insert("attempt".into(), json!(claim.attempts));
    Ok(Some(Launch {
        thread: thread.clone(),
        graph_name: spec.graph.clone(),
        graph,
        input,
        config,
        lease,
        fence: Some(fence),
        started,
        permit: None,
    }))
}

/// The thread's shared lease, when the server has thread locks.
async fn thread_lease(state: &ServerState, thread: &str) -> Result<Option<ThreadLease>, Refusal> {
    let Some(locks) = &state.inner.thread_locks else {
        return Ok(None);
    };
    match locks.try_acquire(thread).await {
        Ok(Some(lease)) => Ok(Some(lease)),
        Ok(None) => Err(Refusal::Later(format!(
            "thread {thread} is held by another server"
        ))),
        Err(e) => Err(Refusal::Later(format!("cannot lock thread {thread}: {e}"))),
    }
}

/// The graph version the run was recorded with: the newest when it is that version, else
/// compiled from the recorded files; the newest when the recorded one no longer compiles.
async fn graph_of(state: &ServerState, spec: &RunSpec) -> Result<Versioned, Refusal> {
    let graphs = &state.inner.graphs;
    let newest = graphs.get_versioned(&spec.graph).await;
    let Some(recorded) = &spec.version else {
        return newest.map_err(|e| Refusal::Never(format!("graph {}: {e:?}", spec.graph)));
    };
    if let Ok((g, Some(v))) = &newest {
        if v.id == recorded.id {
            return Ok((g.clone(), Some(v.clone())));
        }
    }
    match graphs.compile_version(recorded.clone()).await {
        Ok(g) => Ok((g, Some(Arc::new(recorded.clone())))),
        Err(e) => {
            tracing::warn!(graph = %spec.graph, version = %recorded.id,
                "the run's graph version does not compile here, continuing on the newest: {e:?}");
            newest.map_err(|e| Refusal::Never(format!("graph {}: {e:?}", spec.graph)))
        }
    }
}
