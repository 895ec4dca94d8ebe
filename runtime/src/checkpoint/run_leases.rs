//! Run leases: runs recorded where every process sharing the checkpoints sees them, so a run
//! whose process died is picked up by another one and continued from its last checkpoint.
//!
//! A [`RunLeases`] records each run (its thread, its graph, and whatever its owner needs to
//! start it again, as an opaque [`RunRecord::spec`]) as `running` under this process's name
//! with a lease that the owner renews ([`RunLeases::renew`]). When the owner stops renewing
//! (killed, cut off), the lease expires and [`RunLeases::claim_expired`] hands the run to
//! exactly one other process; the first owner, if it still lives, finds out through
//! [`RunLeases::holds`] (fencing) and stops writing. Ended runs are marked
//! ([`RunLeases::finish`]) and never picked up; a run stopped at a human interrupt is marked
//! [`RunOutcome::Interrupted`] and waits for its answer.
//!
//! Each run also carries the thread's *event ceiling*: the highest event id its owner may give
//! out ([`RunLeases::reserve_events`]). A process taking a thread over starts its ids above
//! it, so the ids of a thread's event stream keep rising across processes.
//!
//! `agentgraph-postgres` implements it on a table (`PostgresRunLeases`).

use super::CheckpointError;
use async_trait::async_trait;
use serde_json::Value;
use std::time::Duration;

/// A run as recorded for pickup.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The run's id.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The graph's name (for people reading the table; the spec is what counts).
    pub graph: String,
    /// What the owner needs to start the run again (graph, version, input, settings), in the
    /// owner's own format.
    pub spec: Value,
}

/// A run taken over by [`RunLeases::claim_expired`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRun {
    /// The run as recorded.
    pub record: RunRecord,
    /// How many processes have owned it, this one included, not counting hand-overs
    /// ([`RunLeases::hand_back`]).
    pub attempts: u32,
    /// The process whose lease expired (`None` for a run handed back).
    pub previous_owner: Option<String>,
    /// The highest event id any process reserved for the thread.
    pub event_ceiling: u64,
    /// `true` when the run's lease expired with `max_attempts` owners already: it is marked
    /// failed instead of being taken (a run that kills every process running it must stop).
    pub gave_up: bool,
}

/// How a run ended, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// It reached its end.
    Done,
    /// It failed.
    Failed,
    /// A caller cancelled it (resuming the thread is a new run).
    Cancelled,
    /// It waits for a human's answer (resuming the thread is a new run).
    Interrupted,
}

impl RunOutcome {
    /// The status stored for it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Done => "done",
            RunOutcome::Failed => "failed",
            RunOutcome::Cancelled => "cancelled",
            RunOutcome::Interrupted => "interrupted",
        }
    }
}

/// Records runs with leases their owners renew; hands expired ones to one other process.
/// Every call that changes a run checks that this process still owns it.
#[async_trait]
pub trait RunLeases: Send + Sync {
    /// The name this process records as the owner of its runs.
    fn owner(&self) -> &str;

    /// Records `run` as running here, with a lease of `lease`. Older unfinished runs of the
    /// same thread are marked cancelled (whoever started this run holds the thread now). Returns
    /// the run's event ceiling: the highest event id given out for the thread so far (`floor`,
    /// the caller's own, included); the caller's ids continue above it.
    async fn record(
        &self,
        run: &RunRecord,
        lease: Duration,
        floor: u64,
    ) -> Result<u64, CheckpointError>;

    /// Extends the leases of `runs` (owned here and not expired) by `lease` from now; returns
    /// the ones renewed. A run missing from the answer is no longer this process's.
    async fn renew(&self, runs: &[String], lease: Duration)
        -> Result<Vec<String>, CheckpointError>;

    /// Whether this process owns `run` and its lease has not expired.
    async fn holds(&self, run_id: &str) -> Result<bool, CheckpointError>;

    /// Raises the event ceiling of `run` to `ceiling`, if this process holds it; `false`
    /// otherwise (the ids above the old ceiling belong to another process).
    async fn reserve_events(&self, run_id: &str, ceiling: u64) -> Result<bool, CheckpointError>;

    /// Marks `run` ended, if this process holds it; `false` otherwise.
    async fn finish(
        &self,
        run_id: &str,
        outcome: RunOutcome,
        error: Option<&str>,
    ) -> Result<bool, CheckpointError>;

    /// Gives `run` up so that any process may take it at once (a graceful shutdown), if this
    /// process holds it.
    async fn hand_back(&self, run_id: &str) -> Result<bool, CheckpointError>;

    /// Atomically takes one unfinished run whose lease expired (never one that another
    /// process takes at the same time), leased to this process for `lease`. A run whose lease
    /// expired with `max_attempts` owners already (hand-overs not counted) is marked failed
    /// and returned with [`ClaimedRun::gave_up`]. `None` when no run waits.
    async fn claim_expired(
        &self,
        lease: Duration,
        max_attempts: u32,
    ) -> Result<Option<ClaimedRun>, CheckpointError>;
}
