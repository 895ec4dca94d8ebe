//! Runs picked up from run leases (a stand-in for the database: it hands out the runs it is
//! given and records how they end): a run that wrote no checkpoint starts from its recorded
//! input, on the recorded graph version, above the recorded event ids; a run whose checkpoint
//! shows it waiting for a human is only marked, never run again.

use super::*;
use agentgraph_runtime::checkpoint::{
    CheckpointError, ClaimedRun, RunLeases, RunOutcome, RunRecord,
};
use agentgraph_server::LeaseSettings;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Run leases in memory: `claim_expired` hands out the runs in `waiting`; every call holds.
#[derive(Default)]
struct Handed {
    waiting: Mutex<Vec<ClaimedRun>>,
    ended: Mutex<Vec<(String, RunOutcome)>>,
}

#[async_trait::async_trait]
impl RunLeases for Handed {
    fn owner(&self) -> &str {
        "test"
    }
    async fn record(&self, _: &RunRecord, _: Duration, floor: u64) -> Result<u64, CheckpointError> {
        Ok(floor)
    }
    async fn renew(&self, runs: &[String], _: Duration) -> Result<Vec<String>, CheckpointError> {
        Ok(runs.to_vec())
    }
    async fn holds(&self, _: &str) -> Result<bool, CheckpointError> {
        Ok(true)
    }
    async fn reserve_events(&self, _: &str, _: u64) -> Result<bool, CheckpointError> {
        Ok(true)
    }
    async fn finish(
        &self,
        run_id: &str,
        outcome: RunOutcome,
        _: Option<&str>,
    ) -> Result<bool, CheckpointError> {
        let mut ended = self.ended.lock().expect("lock");
        ended.push((run_id.to_string(), outcome));
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
        Ok(self.waiting.lock().expect("lock").pop())
    }
}

impl Handed {
    fn offer(&self, run_id: &str, thread: &str, spec: Value, event_ceiling: u64) {
        self.waiting.lock().expect("lock").push(ClaimedRun {
            record: RunRecord {
                run_id: run_id.to_string(),
                thread_id: thread.to_string(),
                graph: spec["graph"].as_str().unwrap_or_default().to_string(),
                spec,
            },
            attempts: 2,
            previous_owner: Some("dead".to_string()),
            event_ceiling,
            gave_up: false,
        });
    }

    /// Waits until `run_id` has been recorded as ended `n` times; returns its outcomes.
    async fn ends_of(&self, run_id: &str, n: usize) -> Vec<RunOutcome> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ends: Vec<RunOutcome> = self
                .ended
                .lock()
                .expect("lock")
                .iter()
                .filter(|(r, _)| r == run_id)
                .map(|(_, o)| *o)
                .collect();
            if ends.len() >= n {
                return ends;
            }
            assert!(Instant::now() < deadline, "{run_id} never ended: {ends:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn with_leases(leases: Arc<Handed>) -> Server {
    let settings = LeaseSettings {
        lease: Duration::from_secs(2),
        renew_every: Duration::from_millis(100),
        ..LeaseSettings::default()
    };
    let config = ServerConfig::new(graphs_dir(), "unused")
        .storage(Storage::Memory)
        .run_leases(leases, settings);
    Server::start(config).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_without_a_checkpoint_starts_from_its_recorded_input() {
    let leases = Arc::new(Handed::default());
    leases.offer(
        "picked-1",
        "pk1",
        json!({ "graph": "counter", "version": null, "input": { "values": { "limit": 4 } },
            "modes": ["updates"], "recursion_limit": null, "configurable": {} }),
        40,
    );
    let s = with_leases(leases.clone()).await;
    let events = s.events_until("pk1", Some(0), is_run_end).await;
    let (first, started) = &events[0];
    assert_eq!(started["data"]["status"], "started");
    assert_eq!(started["data"]["run_id"], "picked-1");
    assert_eq!(started["data"]["resumed"], true);
    assert_eq!(started["data"]["attempt"], 2);
    // Above every id the thread had before (40), whatever this server had logged.
    assert!(*first > 40, "{events:?}");
    let (_, end) = events.last().expect("end");
    assert_eq!(end["data"]["status"], "done");
    let (st, state) = s.get("/threads/pk1/state?graph=counter").await;
    assert_eq!(st, 200, "{state}");
    assert_eq!(state["values"]["count"], 4);
    assert_eq!(leases.ends_of("picked-1", 1).await, [RunOutcome::Done]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_waiting_for_a_human_is_marked_not_run_again() {
    let leases = Arc::new(Handed::default());
    let s = with_leases(leases.clone()).await;
    let (st, v) = s
        .post(
            "/threads/pk2/runs",
            json!({ "graph": "approval", "input": { "draft": "Hi" } }),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    let run_id = v["run_id"].as_str().expect("run id").to_string();
    let events = s.events_until("pk2", Some(0), is_run_end).await;
    let (last, end) = events.last().expect("end");
    assert_eq!(end["data"]["status"], "interrupted");
    assert_eq!(leases.ends_of(&run_id, 1).await, [RunOutcome::Interrupted]);

    // As if its server had died before recording the interrupt: offered for pickup.
    leases.offer(
        &run_id,
        "pk2",
        json!({ "graph": "approval", "version": null, "input": { "values": { "draft": "Hi" } },
            "modes": ["updates"], "recursion_limit": null, "configurable": {} }),
        0,
    );
    let ends = leases.ends_of(&run_id, 2).await;
    assert_eq!(ends, [RunOutcome::Interrupted, RunOutcome::Interrupted]);
    // Nothing ran: the thread still waits with its question, and logged nothing more.
    let (_, state) = s.get("/threads/pk2/state?graph=approval").await;
    assert_eq!(
        state["interrupts"].as_array().map(Vec::len),
        Some(1),
        "{state}"
    );
    assert_eq!(state["active"], false);
    let (st, v) = s
        .post("/threads/pk2/resume", json!({ "value": "yes" }))
        .await;
    assert_eq!(st, 202, "{v}");
    let more = s.events_until("pk2", Some(*last), is_run_end).await;
    assert_eq!(more[0].1["data"]["status"], "started");
    assert_eq!(
        more[0].1["data"]["resumed"],
        Value::Null,
        "a new run: {more:?}"
    );
    assert_eq!(more.last().expect("end").1["data"]["status"], "done");
    s.stop().await;
}

fn is_run_end(v: &Value) -> bool {
    v["mode"] == "run" && v["data"]["status"] != "started"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_picked_up_run_keeps_the_graph_version_it_was_recorded_with() {
    // The recorded version counts to 2 by default; the file on disk counts to 3.
    let root = graphs_dir()
        .join("counter.ag")
        .canonicalize()
        .expect("path");
    let on_disk = std::fs::read_to_string(&root).expect("graph file");
    let older = on_disk.replace("limit: int = 3", "limit: int = 2");
    assert_ne!(older, on_disk);
    let version = agentgraph_server::GraphVersion::new(
        root.clone(),
        [(root.clone(), older)].into_iter().collect(),
    );
    let leases = Arc::new(Handed::default());
    leases.offer(
        "picked-3",
        "pk3",
        json!({ "graph": "counter", "version": version, "input": { "values": {} },
            "modes": ["updates"], "recursion_limit": null, "configurable": {} }),
        0,
    );
    let s = with_leases(leases.clone()).await;
    let events = s.events_until("pk3", Some(0), is_run_end).await;
    assert_eq!(events[0].1["data"]["graph_version"], json!(version.id));
    assert_eq!(events.last().expect("end").1["data"]["status"], "done");
    assert_eq!(leases.ends_of("picked-3", 1).await, [RunOutcome::Done]);
    let (_, state) = s.get("/threads/pk3/state?graph=counter").await;
    assert_eq!(state["values"]["count"], 2, "{state}");
    s.stop().await;
}
