//! A run's lease on shared storage ([`RunLeases`]): the settings, what is recorded to start
//! the run again elsewhere ([`RunSpec`]), the per-run [`Fence`] (renewed by the heartbeat,
//! checked before every checkpoint write and before event ids are given out), and the
//! heartbeat itself.

use crate::versions::GraphVersion;
use crate::ServerState;
use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer, ListQuery,
    PruneStats, RunLeases,
};
use agentgraph_runtime::{CheckpointId, Durability, Input, Mode, Modes, Resume, RunConfig};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Event ids reserved at a time: a run touches the database once per this many events.
const EVENT_BLOCK: u64 = 256;

/// How runs are leased when the server has [`RunLeases`] (see `docs/deploy.md`).
#[derive(Debug, Clone, Copy)]
pub struct LeaseSettings {
    /// How long a run stays this server's without a renewal (default 30 s): after a crash,
    /// another server picks the run up once this has passed.
    pub lease: Duration,
    /// How often the leases are renewed and expired runs looked for (default 10 s); must be
    /// well below `lease`.
    pub renew_every: Duration,
    /// How many servers may own one run in turn, each losing it to a crash, before it is
    /// marked failed (default 3; hand-overs at shutdown do not count): a run that kills every
    /// server running it stops going round.
    pub max_attempts: u32,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        LeaseSettings {
            lease: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
            max_attempts: 3,
        }
    }
}

/// How a recorded run starts (its first start, or again after a takeover when the thread holds
/// no checkpoint of it yet).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SpecInput {
    /// New input.
    Values(Value),
    /// The answer to the pending interrupt.
    Resume(Value),
    /// Answers by interrupt id.
    ResumeById(BTreeMap<String, Value>),
    /// Continue from the thread's checkpoint.
    Continue,
}

/// What a server records to run a run again: the graph, its exact version, the input and the
/// run settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSpec {
    pub(crate) graph: String,
    pub(crate) version: Option<GraphVersion>,
    pub(crate) input: SpecInput,
    pub(crate) modes: Vec<String>,
    pub(crate) recursion_limit: Option<usize>,
    pub(crate) configurable: Map<String, Value>,
    /// Absent in the specs of earlier versions: `sync`, their only mode.
    #[serde(default)]
    pub(crate) durability: Durability,
}

impl RunSpec {
    /// The spec of a run of `graph` (at `version`) started with `input` and `config`.
    pub(crate) fn new(
        graph: &str,
        version: Option<GraphVersion>,
        input: &Input,
        config: &RunConfig,
    ) -> Self {
        let input = match input {
            Input::Values(v) => SpecInput::Values(v.clone()),
            Input::Resume(Resume::Value(v)) => SpecInput::Resume(v.clone()),
            Input::Resume(Resume::ById(m)) => SpecInput::ResumeById(m.clone()),
            Input::Continue => SpecInput::Continue,
        };
        RunSpec {
            graph: graph.to_string(),
            version,
            input,
            modes: Mode::ALL
                .into_iter()
                .filter(|m| config.modes.contains(*m))
                .map(|m| m.as_str().to_string())
                .collect(),
            recursion_limit: config.recursion_limit,
            configurable: config.configurable.clone(),
            durability: config.durability,
        }
    }

    /// The recorded input.
    pub(crate) fn input(&self) -> Input {
        match &self.input {
            SpecInput::Values(v) => Input::Values(v.clone()),
            SpecInput::Resume(v) => Input::Resume(Resume::Value(v.clone())),
            SpecInput::ResumeById(m) => Input::Resume(Resume::ById(m.clone())),
            SpecInput::Continue => Input::Continue,
        }
    }

    /// The run's configuration on `thread` with id `run_id`.
    pub(crate) fn config(&self, thread: &str, run_id: &str) -> RunConfig {
        let modes: Vec<Mode> = self.modes.iter().filter_map(|m| m.parse().ok()).collect();
        let mut config = RunConfig::thread(thread)
            .modes(Modes::of(&modes))
            .durability(self.durability);
        config.recursion_limit = self.recursion_limit;
        config.configurable = self.configurable.clone();
        config.run_id = Some(run_id.to_string());
        config
    }
}

/// One run's hold on its lease: whether this server may still write for it.
pub(crate) struct Fence {
    pub(crate) run_id: String,
    leases: Arc<dyn RunLeases>,
    /// Until when the lease surely holds: the start of the last successful renewal plus most
    /// of the lease (the database counts from a later moment).
    valid_until: Mutex<Instant>,
    lease: Duration,
    /// Event ids up to this one are the run's to give out.
    ceiling: AtomicU64,
    /// Fires when the lease is lost (the run is then cancelled).
    lost: CancellationToken,
    /// The run's own cancellation.
    run: CancellationToken,
}

impl Fence {
    /// The fence of a run whose lease was taken (or renewed) at `since`.
    pub(crate) fn new(
        run_id: &str,
        leases: Arc<dyn RunLeases>,
        settings: &LeaseSettings,
        since: Instant,
        ceiling: u64,
        run: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Fence {
            run_id: run_id.to_string(),
            leases,
            valid_until: Mutex::new(since + settings.lease * 4 / 5),
            lease: settings.lease,
            ceiling: AtomicU64::new(ceiling),
            lost: CancellationToken::new(),
            run,
        })
    }

    /// The run leases the fence checks.
    pub(crate) fn leases(&self) -> &Arc<dyn RunLeases> {
        &self.leases
    }

    /// Whether the lease was lost (the run must stop writing and is cancelled).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    /// Gives the run up: no more writes, the run is cancelled.
    pub(crate) fn lose(&self, why: &str) {
        if !self.lost.is_cancelled() {
            tracing::warn!(run_id = %self.run_id, "lost the run's lease ({why}); stopping it");
            self.lost.cancel();
            self.run.cancel();
        }
    }

    fn expired_locally(&self) -> bool {
        Instant::now() >= *self.valid_until.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn renewed(&self, at: Instant) {
        let mut until = self.valid_until.lock().unwrap_or_else(|p| p.into_inner());
        *until = (*until).max(at + self.lease * 4 / 5);
    }

    /// Checks, with the database, that the lease still holds: before a checkpoint is written.
    pub(crate) async fn check(&self) -> Result<(), CheckpointError> {
        if !self.is_lost() && self.expired_locally() {
            self.lose("not renewed in time");
        }
        if !self.is_lost() {
            match self.leases.holds(&self.run_id).await {
                Ok(true) => return Ok(()),
                Ok(false) => self.lose("another server took it"),
                Err(e) => self.lose(&format!("cannot check it: {e}")),
            }
        }
        Err(CheckpointError::Backend(format!(
            "run {} lost its lease: another server continues it",
            self.run_id
        )))
    }

    /// Makes sure event id `seq` is the run's to give out, reserving a block of ids when it
    /// is not yet; `false` when the lease is lost.
    pub(crate) async fn reserve(&self, seq: u64) -> bool {
        if self.is_lost() {
            return false;
        }
        if seq <= self.ceiling.load(Ordering::SeqCst) {
            return true;
        }
        let ceiling = seq + EVENT_BLOCK - 1;
        match self.leases.reserve_events(&self.run_id, ceiling).await {
            Ok(true) => {
                self.ceiling.fetch_max(ceiling, Ordering::SeqCst);
                true
            }
            Ok(false) => {
                self.lose("another server took it");
                false
            }
            Err(e) => {
                self.lose(&format!("cannot reserve event ids: {e}"));
                false
            }
        }
    }
}

/// The server's checkpointer as one run sees it: every write to the run's thread first checks
/// the run's lease. Writes to other threads — runs a task started detached from this one (a
/// background task on its own thread), which outlive it — are not the run's to fence.
pub(crate) struct FencedCheckpointer {
    pub(crate) inner: Arc<dyn Checkpointer>,
    pub(crate) fence: Arc<Fence>,
    /// The run's thread.
    pub(crate) thread: String,
}

#[async_trait]
impl Checkpointer for FencedCheckpointer {
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError> {
        if thread == self.thread {
            self.fence.check().await?;
        }
        self.inner.put(thread, ns, checkpoint, blobs).await
    }

    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError> {
        if thread == self.thread {
            self.fence.check().await?;
        }
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
        self.fence.check().await?;
        self.inner.delete_thread(thread).await
    }

    async fn prune(
        &self,
        thread: Option<&str>,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        self.fence.check().await?;
        self.inner.prune(thread, keep).await
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.inner.flush().await
    }
}

/// Renews the leases of this server's runs every `renew_every`, stops the runs whose lease is
/// lost, and picks up runs other servers left; until the server shuts down.
pub(crate) async fn heartbeat(state: ServerState, leases: Arc<dyn RunLeases>) {
    let settings = state.inner.lease_settings;
    let mut tick = tokio::time::interval(settings.renew_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = state.inner.shutdown.cancelled() => return,
        }
        renew(&state, leases.as_ref(), &settings).await;
        if !state.inner.shutdown.is_cancelled() {
            crate::run_pickup::pick_up(&state, &leases).await;
        }
    }
}

async fn renew(state: &ServerState, leases: &dyn RunLeases, settings: &LeaseSettings) {
    let fences: Vec<Arc<Fence>> = state
        .runs()
        .values()
        .filter_map(|r| r.fence.clone())
        .filter(|f| !f.is_lost())
        .collect();
    if fences.is_empty() {
        return;
    }
    for f in &fences {
        if f.expired_locally() {
            f.lose("not renewed in time");
        }
    }
    let ids: Vec<String> = fences
        .iter()
        .filter(|f| !f.is_lost())
        .map(|f| f.run_id.clone())
        .collect();
    let at = Instant::now();
    match tokio::time::timeout(settings.renew_every, leases.renew(&ids, settings.lease)).await {
        Ok(Ok(kept)) => {
            for f in &fences {
                if kept.contains(&f.run_id) {
                    f.renewed(at);
                } else {
                    f.lose("another server took it");
                }
            }
        }
        // The runs go on until their lease runs out locally, then stop.
        Ok(Err(e)) => tracing::warn!("cannot renew run leases: {e}"),
        Err(_) => tracing::warn!("renewing run leases timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_keeps_the_runs_durability_and_an_older_one_reads_as_sync() {
        let config = RunConfig::thread("t").durability(Durability::Exit);
        let spec = RunSpec::new("g", None, &Input::Values(Value::Null), &config);
        let stored = serde_json::to_string(&spec).expect("encode");
        let back: RunSpec = serde_json::from_str(&stored).expect("decode");
        assert_eq!(back.config("t", "r1").durability, Durability::Exit);

        // A spec an earlier version recorded has no `durability`.
        let mut older: Value = serde_json::from_str(&stored).expect("json");
        assert_eq!(older["durability"], "exit", "{older}");
        older.as_object_mut().map(|o| o.remove("durability"));
        let older: RunSpec = serde_json::from_value(older).expect("an older spec reads");
        assert_eq!(older.config("t", "r1").durability, Durability::Sync);
    }
}
