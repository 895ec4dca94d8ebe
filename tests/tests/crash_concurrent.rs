//! Crash test under group commit: one `crash-worker` process runs 16 threads of the crash graph
//! at once on one sled store (`sync` durability, so their checkpoints share flushes) and is
//! killed with SIGKILL after a seeded random number of task starts, 30 times in a row; each
//! restart resumes every thread.
//!
//! After every kill, for every thread: no completed step was lost (a thread that printed
//! `started step K` has a checkpoint at step >= K-1, since the step starts only after the
//! previous checkpoint's flush returned), and its newest checkpoint holds exactly the state of an
//! uninterrupted run at that step. At the end every thread's final state equals the closed-form
//! state of a complete run.
//!
//! Knobs (environment): `CRASH_SEED`, `CRASH_CONCURRENT_KILLS` (default 30),
//! `CRASH_CONCURRENT_STEPS` (default 120).

use agentgraph_e2e::{crash_graph, expected_final, input, started_step};
use agentgraph_runtime::{Durability, Input, ListQuery, MemoryCheckpointer, RunConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_crash-worker");
const THREADS: usize = 16;
const PREFIX: &str = "cc";
/// Per-task sleep of the worker, µs: short, so the store's flushes dominate.
const SLEEP_US: u64 = 500;

fn env_or(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            }
            .unwrap_or_else(|| panic!("bad value {v:?} for {name}"))
        }
        Err(_) => default,
    }
}

/// The thread id at the end of a worker line (`… cc-3`), if any.
fn thread_of(line: &str) -> Option<&str> {
    line.rsplit(' ')
        .next()
        .filter(|t| t.starts_with(&format!("{PREFIX}-")))
}

/// Runs the worker in `mode` over the 16 threads; with `kill_after`, SIGKILLs it once it has
/// printed that many `started step` lines. Returns its lines and whether it was killed.
fn worker(db: &Path, mode: &str, steps: i64, kill_after: Option<usize>) -> (Vec<String>, bool) {
    let mut child = Command::new(WORKER)
        .arg(mode)
        .arg("--db")
        .arg(db)
        .args(["--thread", PREFIX, "--threads", &THREADS.to_string()])
        .args(["--steps", &steps.to_string()])
        .args(["--sleep-us", &SLEEP_US.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn crash-worker");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    let mut started = 0usize;
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if started_step(&line).is_some() {
            started += 1;
        }
        lines.push(line);
        if !killed && kill_after.is_some_and(|k| started >= k) {
            // `Child::kill` sends SIGKILL on Unix.
            child.kill().expect("kill the worker");
            killed = true;
        }
    }
    let status = child.wait().expect("wait for the worker");
    if !killed {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        assert!(
            status.success() || mode == "final",
            "crash-worker {mode} failed: {status}\n{err}"
        );
    }
    (lines, killed)
}

/// The newest checkpoint of every thread that has one: thread → (step, values).
fn newest(db: &Path) -> HashMap<String, (i64, Value)> {
    let (lines, _) = worker(db, "final", 1, None);
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let t = v["thread"].as_str()?.to_string();
            Some((t, (v["step"].as_i64()?, v["values"].clone())))
        })
        .collect()
}

/// The states of an uninterrupted run at every step, from an in-process run in memory.
fn uninterrupted(steps: i64) -> BTreeMap<i64, Value> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let graph = crash_graph(Duration::ZERO, None)
            .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
        graph
            .invoke(
                Input::values(input(steps)),
                RunConfig::thread("t").durability(Durability::Sync),
            )
            .await
            .expect("uninterrupted run");
        let history = graph
            .history("t", ListQuery::default())
            .await
            .expect("history");
        let mut by_step = BTreeMap::new();
        for h in history {
            let s = graph
                .get_state("t", Some(h.checkpoint_id))
                .await
                .expect("state")
                .expect("checkpoint");
            by_step.insert(s.step, s.values);
        }
        by_step
    })
}

#[test]
fn sixteen_threads_sharing_flushes_survive_thirty_sigkills() {
    let seed = env_or("CRASH_SEED", 0x5EED_C0DE);
    let kills = env_or("CRASH_CONCURRENT_KILLS", 30);
    let steps = env_or("CRASH_CONCURRENT_STEPS", 120) as i64;
    let expected = uninterrupted(steps);
    assert_eq!(
        expected.get(&steps),
        Some(&expected_final(steps)),
        "the in-process run agrees with the closed form"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut killed_runs = 0;
    let mut seen_steps: HashMap<String, i64> = HashMap::new();
    for i in 0..kills {
        // Between a few task starts and ~8 steps of all 16 threads (2–3 tasks per step).
        let kill_after = rng.gen_range(1..=16 * 3 * 8);
        let (lines, killed) = worker(&db, "resume", steps, Some(kill_after));
        killed_runs += usize::from(killed);
        let plan = format!("seed {seed:#x}, kill {i}, after {kill_after} task starts");
        let mut max_started: HashMap<&str, i64> = HashMap::new();
        for l in &lines {
            if let (Some(k), Some(t)) = (started_step(l), thread_of(l)) {
                let m = max_started.entry(t).or_insert(k);
                *m = (*m).max(k);
            }
        }
        let now = newest(&db);
        for (t, k) in &max_started {
            let (step, _) = now
                .get(*t)
                .unwrap_or_else(|| panic!("{plan}: {t} started step {k} but has no checkpoint"));
            assert!(
                *step >= k - 1,
                "{plan}: {t} started step {k} (so step {} was flushed) but its newest \
                 checkpoint is at step {step}",
                k - 1
            );
        }
        for (t, (step, values)) in &now {
            let want = expected
                .get(step)
                .unwrap_or_else(|| panic!("{plan}: {t} is at step {step}, past the run's end"));
            assert_eq!(
                values, want,
                "{plan}: {t} at step {step} differs from the uninterrupted run"
            );
            let before = seen_steps.insert(t.clone(), *step).unwrap_or(i64::MIN);
            assert!(
                *step >= before,
                "{plan}: {t} went back from step {before} to {step}"
            );
        }
    }
    assert!(
        killed_runs * 2 >= kills as usize,
        "only {killed_runs} of {kills} workers were killed mid-run: the runs are too short"
    );
    let (_, killed) = worker(&db, "resume", steps, None);
    assert!(!killed);
    let done = newest(&db);
    assert_eq!(done.len(), THREADS, "every thread has a checkpoint");
    for (t, (step, values)) in &done {
        assert_eq!(*step, steps, "{t} ends at the last step");
        assert_eq!(values, &expected_final(steps), "{t}: final state");
    }
}
