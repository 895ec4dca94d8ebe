//! One kill-and-resume iteration and its checks.

use super::*;

pub(crate) fn random_kill(rng: &mut StdRng, steps: i64, run_time: Duration) -> Kill {
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
pub(crate) struct Tally {
    pub(crate) kills_landed: usize,
    pub(crate) kills_mid_steps: usize,
    pub(crate) kills_missed: usize,
    pub(crate) resumes: usize,
    pub(crate) fresh_restarts: usize,
    pub(crate) self_kills: usize,
    pub(crate) unflushed_survived: usize,
    pub(crate) steps_seen: Vec<i64>,
}

/// One kill iteration: run, kill, check, resume (maybe kill again), until the thread completes.
pub(crate) fn iteration(
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
