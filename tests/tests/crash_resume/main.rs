//! Crash test: a real child process (`crash-worker`) runs the long crash graph on sled with
//! `sync` durability and is killed with SIGKILL at seeded random points; resuming the thread
//! must give exactly the final state of an uninterrupted run, with no completed step lost.
//!
//! For every kill point the test checks, after the child died:
//! * no completed step was lost: if the child printed `started step K` (which it does only after
//!   the checkpoint of step K-1 was flushed), the thread's newest checkpoint is at step >= K-1;
//! * nothing durable went backwards, and nothing newer than what ran exists;
//! * the newest checkpoint holds exactly the state (and next tasks) of the uninterrupted run at
//!   the same step;
//! * the resumed child continues from that checkpoint and re-runs only the step after it.
//!
//! After the thread completes: the final state equals the uninterrupted run's, and the history
//! is one linear chain of checkpoints -1, 0, 1, …, N (each parent exists, steps increase by one).
//!
//! Knobs (environment): `CRASH_SEED` (default 0x5EED_C0DE), `CRASH_KILLS` (default 22 kill
//! iterations), `CRASH_STEPS` (default 200 loop steps), `CRASH_SLEEP_US` (default 1000 µs per
//! node), `CRASH_WORKER` (another worker binary). On failure the message names the seed, the
//! iteration and the kill plan, and the sled folders are kept for inspection.

use agentgraph_e2e::{crash_graph, expected_final, input, started_step, DiePoint, THREAD};
use agentgraph_runtime::{
    CheckpointId, CompiledGraph, Durability, Input, ListQuery, MemoryCheckpointer, RunConfig,
    SledCheckpointer, Source,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

mod expected;
mod iteration;
mod worker;

use expected::*;
use iteration::*;
use worker::*;

const WORKER: &str = env!("CARGO_BIN_EXE_crash-worker");
const SIGKILL: i32 = 9;
/// A worker still alive after this long is hung (a whole run takes about a second).
const WORKER_TIMEOUT: Duration = Duration::from_secs(60);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16)
                    .ok()
                    .and_then(|n| n.to_string().parse().ok()),
                None => v.parse().ok(),
            };
            parsed.unwrap_or_else(|| panic!("bad value {v:?} for {name}"))
        }
        Err(_) => default,
    }
}

#[test]
fn sigkill_at_random_points_then_resume_gives_the_uninterrupted_state() {
    let t0 = Instant::now();
    let seed: u64 = env_or("CRASH_SEED", 0x5EED_C0DE);
    let iterations: usize = env_or("CRASH_KILLS", 22);
    let s = Settings {
        steps: env_or("CRASH_STEPS", 200),
        sleep_us: env_or("CRASH_SLEEP_US", 1000),
    };
    assert!(s.steps >= 5, "CRASH_STEPS must be at least 5");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut expected = Expected::compute(&rt, s.steps);
    eprintln!(
        "crash test: seed {seed:#x}, {iterations} kill iterations, {} steps, {} µs per node; expected state in {:?}",
        s.steps,
        s.sleep_us,
        t0.elapsed()
    );

    // Calibration: one uninterrupted worker run, which must also end in the expected state.
    let base = tempfile::tempdir().expect("tempdir");
    let calib_dir = base.path().join("calibration");
    std::fs::create_dir_all(&calib_dir).expect("mkdir");
    let calib = run_worker(
        "run",
        &calib_dir.join("db"),
        &calib_dir,
        "calibration",
        &s,
        Kill::Never,
    )
    .expect("uninterrupted worker run");
    let run_time = calib.elapsed;
    let got = latest(&rt, &calib_dir.join("db")).expect("calibration checkpoint");
    assert_eq!(
        got, expected.final_state,
        "an uninterrupted worker run ends in the in-process run's state"
    );
    check_history(&rt, &calib_dir.join("db"), s.steps).expect("calibration history");
    eprintln!("uninterrupted worker run: {run_time:?}");

    // The kill plan: fixed early and late points first, then seeded random ones; about a third
    // of the iterations also kill the first resume.
    let mut rng = StdRng::seed_from_u64(seed);
    let startup = Duration::from_millis(15);
    let mut plans: Vec<Vec<Kill>> = vec![
        vec![Kill::After(Duration::ZERO)],
        vec![Kill::After(startup)],
        vec![Kill::AtStep(1), Kill::AtStep(2)],
        vec![Kill::AtStep(2), Kill::After(Duration::ZERO)],
        vec![Kill::AtStep(s.steps)],
        vec![Kill::After(run_time.mul_f64(0.9))],
        vec![Kill::AtStep(s.steps / 2), Kill::AtStep(s.steps)],
    ];
    while plans.len() < iterations {
        let mut p = vec![random_kill(&mut rng, s.steps, run_time)];
        if rng.gen_bool(0.35) {
            p.push(random_kill(&mut rng, s.steps, run_time));
        }
        plans.push(p);
    }
    plans.truncate(iterations);
    let parent_kill_plans = plans.len();
    // Exact storage boundaries: the worker kills itself right before or after a flush. The
    // input checkpoint (-1) and the first step (0) matter most: resuming from them re-applies
    // the input.
    let n = s.steps;
    let r1 = rng.gen_range(1..n - 1);
    let r2 = rng.gen_range(r1 + 1..=n);
    let r3 = rng.gen_range(1..n);
    let die = |p| Kill::Die(p);
    plans.extend([
        vec![die(DiePoint::BeforeFlush(-1))],
        vec![die(DiePoint::AfterFlush(-1))],
        vec![die(DiePoint::BeforeFlush(0))],
        vec![die(DiePoint::AfterFlush(-1)), die(DiePoint::AfterFlush(0))],
        vec![
            die(DiePoint::BeforeFlush(r1)),
            die(DiePoint::AfterFlush(r2)),
        ],
        vec![
            die(DiePoint::AfterFlush(r3)),
            die(DiePoint::BeforeFlush(r3 + 1)),
        ],
        vec![die(DiePoint::BeforeFlush(n))],
        vec![die(DiePoint::AfterFlush(n))],
    ]);

    let mut tally = Tally::default();
    for (i, kills) in plans.iter().enumerate() {
        let dir = base.path().join(format!("kill-{i:02}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let started = Instant::now();
        match iteration(&rt, &mut expected, &s, &dir, kills, &mut tally) {
            Ok(report) => eprintln!("#{i:02} {:?}: {report}", started.elapsed()),
            Err(e) => {
                let kept: PathBuf = base.keep();
                panic!(
                    "crash test failed: seed {seed:#x}, iteration {i}, kill plan {kills:?}\n{e}\n(sled folders kept in {})",
                    kept.display()
                );
            }
        }
    }
    tally.steps_seen.sort_unstable();
    tally.steps_seen.dedup();
    eprintln!(
        "{} kills landed ({} self-kills at flush boundaries, {} unflushed checkpoints survived; {} mid-run after a step started, {} distinct steps), {} missed (the worker finished first), {} resumes ({} from nothing); total {:?}",
        tally.kills_landed,
        tally.self_kills,
        tally.unflushed_survived,
        tally.kills_mid_steps,
        tally.steps_seen.len(),
        tally.kills_missed,
        tally.resumes,
        tally.fresh_restarts,
        t0.elapsed()
    );
    let parent_kills = tally.kills_landed - tally.self_kills;
    assert!(
        parent_kills >= 20.min(parent_kill_plans),
        "only {parent_kills} kills from the parent landed; expected at least 20"
    );
}
