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

/// Where a worker is killed.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// This long after it was spawned.
    After(Duration),
    /// As soon as it prints `started step K` for a K at least this.
    AtStep(i64),
    /// The worker SIGKILLs itself at an exact storage boundary (its `--die` option).
    Die(DiePoint),
    /// Not killed: runs to its end.
    Never,
}

/// What one worker process did.
struct Outcome {
    /// Ended by SIGKILL (false: it exited on its own before the kill).
    killed: bool,
    /// Its stdout lines.
    lines: Vec<String>,
    /// How long it lived.
    elapsed: Duration,
}

impl Outcome {
    fn started(&self) -> impl Iterator<Item = i64> + '_ {
        self.lines.iter().filter_map(|l| started_step(l))
    }
    fn max_started(&self) -> Option<i64> {
        self.started().max()
    }
    fn min_started(&self) -> Option<i64> {
        self.started().min()
    }
    /// `Some(Some(S))` for "resuming from step S", `Some(None)` for "resuming from nothing".
    fn resumed_from(&self) -> Option<Option<i64>> {
        self.lines.iter().find_map(|l| {
            if l.starts_with("resuming from nothing") {
                Some(None)
            } else {
                l.strip_prefix("resuming from step ")
                    .and_then(|s| s.trim().parse().ok())
                    .map(Some)
            }
        })
    }
}

struct Settings {
    steps: i64,
    sleep_us: u64,
}

/// Spawns the worker in `mode` on `db`, kills it as `kill` says, waits for it.
fn run_worker(
    mode: &str,
    db: &Path,
    log_dir: &Path,
    tag: &str,
    s: &Settings,
    kill: Kill,
) -> Result<Outcome, String> {
    let stderr_path = log_dir.join(format!("{tag}.stderr"));
    let stderr = File::create(&stderr_path).expect("stderr log");
    let start = Instant::now();
    let deadline = start + WORKER_TIMEOUT;
    let worker = std::env::var("CRASH_WORKER").unwrap_or_else(|_| WORKER.to_string());
    let mut command = Command::new(worker);
    command
        .arg(mode)
        .arg("--db")
        .arg(db)
        .args(["--thread", THREAD])
        .args(["--steps", &s.steps.to_string()])
        .args(["--sleep-us", &s.sleep_us.to_string()]);
    if let Kill::Die(point) = kill {
        command.args(["--die", &point.to_string()]);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn crash-worker");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    match kill {
        Kill::Never | Kill::Die(_) => {}
        Kill::After(d) => {
            std::thread::sleep(d.saturating_sub(start.elapsed()));
            let _ = child.kill();
        }
        Kill::AtStep(k) => {
            // Read lines as they come; kill the moment step k (or later) starts.
            while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                let hit = started_step(&line).is_some_and(|s| s >= k);
                lines.push(line);
                if hit {
                    break;
                }
            }
            let _ = child.kill();
        }
    }
    // Wait, with a watchdog: a worker that hangs is killed and reported.
    let mut hung = false;
    let status = loop {
        match child.try_wait().expect("wait for crash-worker") {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                hung = true;
                let _ = child.kill();
                break child.wait().expect("wait for crash-worker");
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let elapsed = start.elapsed();
    // Everything the child wrote before it died is still in the pipe.
    lines.extend(rx.iter());
    reader.join().expect("stdout reader");
    let killed = status.signal() == Some(SIGKILL);
    if hung || (!killed && !status.success()) {
        let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        return Err(format!(
            "crash-worker {mode} ({tag}) {} after {elapsed:?}\nstderr:\n{err}\nstdout tail:\n{}",
            if hung {
                format!("hung for more than {WORKER_TIMEOUT:?}")
            } else {
                format!("failed with {status}")
            },
            tail(&lines)
        ));
    }
    Ok(Outcome {
        killed,
        lines,
        elapsed,
    })
}

fn tail(lines: &[String]) -> String {
    let from = lines.len().saturating_sub(8);
    lines[from..].join("\n")
}

/// A state at a checkpoint: step, values, next nodes.
#[derive(Debug, Clone, PartialEq)]
struct At {
    step: i64,
    values: Value,
    next: Vec<String>,
}

/// The uninterrupted in-process run, to compare against.
struct Expected {
    graph: CompiledGraph,
    by_step: HashMap<i64, CheckpointId>,
    cache: BTreeMap<i64, At>,
    final_state: At,
}

impl Expected {
    fn compute(rt: &tokio::runtime::Runtime, steps: i64) -> Self {
        let graph = crash_graph(Duration::ZERO, None)
            .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
        rt.block_on(async {
            graph
                .invoke(
                    Input::values(input(steps)),
                    RunConfig::thread(THREAD).durability(Durability::Sync),
                )
                .await
                .expect("uninterrupted in-process run");
            let history = graph
                .history(THREAD, ListQuery::default())
                .await
                .expect("history");
            let by_step: HashMap<i64, CheckpointId> =
                history.iter().map(|e| (e.step, e.checkpoint_id)).collect();
            assert_eq!(
                by_step.len(),
                history.len(),
                "the uninterrupted run has one checkpoint per step"
            );
            let s = graph
                .get_state(THREAD, None)
                .await
                .expect("state")
                .expect("a checkpoint");
            let final_state = At {
                step: s.step,
                values: s.values,
                next: s.next,
            };
            assert_eq!(final_state.step, steps, "the run ends at step N");
            assert_eq!(
                final_state.values,
                expected_final(steps),
                "the uninterrupted in-process run agrees with the closed form"
            );
            assert!(final_state.next.is_empty());
            Expected {
                graph,
                by_step,
                cache: BTreeMap::new(),
                final_state,
            }
        })
    }

    fn at(&mut self, rt: &tokio::runtime::Runtime, step: i64) -> At {
        if let Some(a) = self.cache.get(&step) {
            return a.clone();
        }
        let id = *self
            .by_step
            .get(&step)
            .unwrap_or_else(|| panic!("the uninterrupted run has no checkpoint at step {step}"));
        let s = rt
            .block_on(self.graph.get_state(THREAD, Some(id)))
            .expect("state")
            .expect("checkpoint");
        let a = At {
            step: s.step,
            values: s.values,
            next: s.next,
        };
        self.cache.insert(step, a.clone());
        a
    }
}

/// The sled graph of a db folder (opened in this process while no worker runs).
fn sled_graph(db: &Path) -> CompiledGraph {
    let cp = SledCheckpointer::open(db).expect("open sled in the test process");
    crash_graph(Duration::ZERO, None).with_checkpointer(Arc::new(cp))
}

/// The thread's newest checkpoint in the sled folder, `None` when it has none (or no folder).
fn latest(rt: &tokio::runtime::Runtime, db: &Path) -> Option<At> {
    if !db.exists() {
        return None;
    }
    let graph = sled_graph(db);
    let s = rt
        .block_on(graph.get_state(THREAD, None))
        .expect("get_state on the crashed store")?;
    Some(At {
        step: s.step,
        values: s.values,
        next: s.next,
    })
}

/// Checks the finished thread's history: one linear chain -1, 0, 1, …, N.
fn check_history(rt: &tokio::runtime::Runtime, db: &Path, steps: i64) -> Result<(), String> {
    let graph = sled_graph(db);
    let history = rt
        .block_on(graph.history(THREAD, ListQuery::default()))
        .map_err(|e| format!("history: {e}"))?;
    let ids: HashSet<CheckpointId> = history.iter().map(|e| e.checkpoint_id).collect();
    if ids.len() != history.len() {
        return Err("duplicate checkpoint ids in the history".into());
    }
    let by_id: HashMap<CheckpointId, &agentgraph_runtime::HistoryEntry> =
        history.iter().map(|e| (e.checkpoint_id, e)).collect();
    for e in &history {
        match e.parent_id {
            Some(p) if !ids.contains(&p) => {
                return Err(format!(
                    "checkpoint {} (step {}) has a parent {p} that does not exist",
                    e.checkpoint_id, e.step
                ))
            }
            None if e.step != -1 || e.source != Source::Input => {
                return Err(format!(
                    "checkpoint {} (step {}, {:?}) has no parent but is not the first input",
                    e.checkpoint_id, e.step, e.source
                ))
            }
            _ if e.step >= 0 && e.source != Source::Loop => {
                return Err(format!(
                    "checkpoint {} (step {}) has source {:?}, expected loop",
                    e.checkpoint_id, e.step, e.source
                ))
            }
            _ => {}
        }
    }
    // Walk the parent chain from the newest checkpoint.
    let newest = history.first().ok_or("empty history")?;
    let mut chain = vec![newest.step];
    let mut at = newest;
    while let Some(p) = at.parent_id {
        let parent = by_id[&p];
        if parent.step >= at.step {
            return Err(format!(
                "steps do not increase along the chain: {} (step {}) has parent step {}",
                at.checkpoint_id, at.step, parent.step
            ));
        }
        if parent.checkpoint_id >= at.checkpoint_id {
            return Err(format!(
                "checkpoint ids do not increase along the chain at step {}",
                at.step
            ));
        }
        chain.push(parent.step);
        at = parent;
    }
    chain.reverse();
    let want: Vec<i64> = (-1..=steps).collect();
    if chain != want {
        return Err(format!(
            "the chain of the final checkpoint is not -1..={steps}: {chain:?}"
        ));
    }
    if chain.len() != history.len() {
        return Err(format!(
            "{} checkpoints are not on the final chain",
            history.len() - chain.len()
        ));
    }
    Ok(())
}

fn random_kill(rng: &mut StdRng, steps: i64, run_time: Duration) -> Kill {
    if rng.gen_bool(0.5) {
        Kill::AtStep(rng.gen_range(1..=steps))
    } else {
        // A fraction (drawn independently of the timing, so that a seed always gives the same
        // plan) of up to 90% of the calibrated run time: later delays tend to miss faster runs.
        let fraction: f64 = rng.gen();
        Kill::After(run_time.mul_f64(0.9 * fraction))
    }
}

#[derive(Default)]
struct Tally {
    kills_landed: usize,
    kills_mid_steps: usize,
    kills_missed: usize,
    resumes: usize,
    fresh_restarts: usize,
    self_kills: usize,
    unflushed_survived: usize,
    steps_seen: Vec<i64>,
}

/// One kill iteration: run, kill, check, resume (maybe kill again), until the thread completes.
fn iteration(
    rt: &tokio::runtime::Runtime,
    expected: &mut Expected,
    s: &Settings,
    dir: &Path,
    kills: &[Kill],
    tally: &mut Tally,
) -> Result<String, String> {
    let db = dir.join("db");
    let mut prev: Option<At> = None;
    let mut report = Vec::new();
    for attempt in 0..10usize {
        let mode = if attempt == 0 { "run" } else { "resume" };
        let kill = kills.get(attempt).copied().unwrap_or(Kill::Never);
        let out = run_worker(mode, &db, dir, &format!("{attempt}-{mode}"), s, kill)?;
        let now = latest(rt, &db);
        let now_step = now.as_ref().map(|a| a.step);
        let prev_step = prev.as_ref().map(|a| a.step);
        let ctx = || {
            format!(
                "attempt {attempt} ({mode}, kill {kill:?}, killed {}, lived {:?}): previous checkpoint step {prev_step:?}, newest now {now_step:?}, started steps {:?}..={:?}\nstdout tail:\n{}",
                out.killed,
                out.elapsed,
                out.min_started(),
                out.max_started(),
                tail(&out.lines)
            )
        };
        // The resumed worker saw the same newest checkpoint as this process did.
        if mode == "resume" {
            if let Some(from) = out.resumed_from() {
                if from != prev_step {
                    return Err(format!(
                        "the worker resumed from {from:?}, the test saw {prev_step:?}; {}",
                        ctx()
                    ));
                }
                if from.is_none() {
                    tally.fresh_restarts += 1;
                }
            }
        }
        // It re-ran exactly the step after the checkpoint it resumed from.
        if let Some(first) = out.min_started() {
            let want = prev_step.map_or(1, |p| p.max(0) + 1);
            if first != want {
                return Err(format!(
                    "the first step run was {first}, expected {want}; {}",
                    ctx()
                ));
            }
        }
        // Nothing durable went backwards.
        if let (Some(p), n) = (prev_step, now_step) {
            if n.is_none_or(|n| n < p) {
                return Err(format!("the newest checkpoint went backwards; {}", ctx()));
            }
        }
        // No completed step lost: step K started => checkpoint K-1 was flushed.
        if let Some(k) = out.max_started() {
            if now_step.is_none_or(|n| n < k - 1) {
                return Err(format!(
                    "completed step lost: step {k} had started, so step {} was flushed, but the newest checkpoint is {now_step:?}; {}",
                    k - 1,
                    ctx()
                ));
            }
        }
        // Nothing newer than what ran.
        let ran_up_to = out
            .max_started()
            .unwrap_or_else(|| prev_step.map_or(0, |p| p.max(0)));
        if now_step.is_some_and(|n| n > ran_up_to.max(0)) {
            return Err(format!(
                "a checkpoint newer than any started step exists; {}",
                ctx()
            ));
        }
        // The newest checkpoint holds exactly the uninterrupted run's state at its step.
        if let Some(now) = &now {
            let want = expected.at(rt, now.step);
            if *now != want {
                return Err(format!(
                    "the state at step {} differs from the uninterrupted run\n expected: {}\n   actual: {}\n{}",
                    now.step,
                    serde_json::to_string(&(&want.values, &want.next)).unwrap_or_default(),
                    serde_json::to_string(&(&now.values, &now.next)).unwrap_or_default(),
                    ctx()
                ));
            }
        }
        // A self-kill at a storage boundary leaves exactly that boundary behind.
        if let Kill::Die(point) = kill {
            if !out.killed {
                return Err(format!("the worker never reached {point}; {}", ctx()));
            }
            let allowed = match point {
                DiePoint::AfterFlush(s) => vec![Some(s)],
                // The unflushed checkpoint may or may not have reached the disk.
                DiePoint::BeforeFlush(s) => vec![Some(s), if s == -1 { None } else { Some(s - 1) }],
            };
            if !allowed.contains(&now_step) {
                return Err(format!(
                    "after dying at {point} the newest checkpoint is {now_step:?}, expected one of {allowed:?}; {}",
                    ctx()
                ));
            }
            if let DiePoint::BeforeFlush(s) = point {
                if now_step == Some(s) {
                    tally.unflushed_survived += 1;
                }
            }
            tally.self_kills += 1;
        }
        if out.killed {
            tally.kills_landed += 1;
            if let Some(k) = out.max_started() {
                tally.kills_mid_steps += 1;
                tally.steps_seen.push(k);
            }
            report.push(format!(
                "{mode} killed ({kill:?}) after {:?} at started step {:?}, newest checkpoint {now_step:?}",
                out.elapsed,
                out.max_started()
            ));
            if attempt > 0 {
                tally.resumes += 1;
            }
            prev = now;
            continue;
        }
        if matches!(kill, Kill::After(_) | Kill::AtStep(_)) {
            tally.kills_missed += 1;
        }
        if attempt > 0 {
            tally.resumes += 1;
        }
        report.push(match kill {
            Kill::Never => format!("{mode} completed after {:?}", out.elapsed),
            k => format!(
                "{mode} completed after {:?} before its kill ({k:?})",
                out.elapsed
            ),
        });
        // Finished: exactly the uninterrupted final state, and a clean history.
        let Some(now) = now else {
            return Err(format!(
                "the worker completed without a checkpoint; {}",
                ctx()
            ));
        };
        if now != expected.final_state {
            return Err(format!(
                "the final state differs from the uninterrupted run\n expected: {}\n   actual: {}\n{}",
                serde_json::to_string(&expected.final_state.values).unwrap_or_default(),
                serde_json::to_string(&now.values).unwrap_or_default(),
                ctx()
            ));
        }
        check_history(rt, &db, s.steps)?;
        return Ok(report.join("; "));
    }
    Err("the thread did not complete in 10 attempts".into())
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
