//! The crash worker: kill plans, one run of the child process and what it printed.

use super::*;

/// Where a worker is killed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kill {
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
pub(crate) struct Outcome {
    /// Ended by SIGKILL (false: it exited on its own before the kill).
    pub(crate) killed: bool,
    /// Its stdout lines.
    pub(crate) lines: Vec<String>,
    /// How long it lived.
    pub(crate) elapsed: Duration,
}

impl Outcome {
    pub(crate) fn started(&self) -> impl Iterator<Item = i64> + '_ {
        self.lines.iter().filter_map(|l| started_step(l))
    }
    pub(crate) fn max_started(&self) -> Option<i64> {
        self.started().max()
    }
    pub(crate) fn min_started(&self) -> Option<i64> {
        self.started().min()
    }
    /// `Some(Some(S))` for "resuming from step S", `Some(None)` for "resuming from nothing".
    pub(crate) fn resumed_from(&self) -> Option<Option<i64>> {
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

pub(crate) struct Settings {
    pub(crate) steps: i64,
    pub(crate) sleep_us: u64,
}

/// Spawns the worker in `mode` on `db`, kills it as `kill` says, waits for it.
pub(crate) fn run_worker(
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

pub(crate) fn tail(lines: &[String]) -> String {
    let from = lines.len().saturating_sub(8);
    lines[from..].join("\n")
}
