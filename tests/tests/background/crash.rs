//! SIGKILL while two background tasks run and a third one has finished: the next turn of the
//! thread, in a new process, resumes the two from their checkpoints; nothing they had
//! finished runs again, and the finished task is not run again at all.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORKER: &str = env!("CARGO_BIN_EXE_background-worker");

fn worker(mode: &str, db: &Path, log: &Path) -> Command {
    let mut c = Command::new(WORKER);
    c.arg(mode)
        .arg("--db")
        .arg(db)
        .arg("--log")
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn count(lines: &[String], line: &str) -> usize {
    lines.iter().filter(|l| *l == line).count()
}

#[test]
fn a_sigkill_while_two_tasks_run_resumes_both_and_reruns_nothing_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, log) = (dir.path().join("db"), dir.path().join("log"));
    let mut first = worker("start", &db, &log)
        .spawn()
        .expect("spawn the worker");
    let stdout = first.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(l) if l == "ready" => break,
            Ok(l) => printed.push(l),
            Err(e) => {
                let _ = first.kill();
                panic!("the worker never got both tasks into their second step: {e}");
            }
        }
    }
    // The thread's list still says `c` runs: the restart must find out that it ended.
    assert_eq!(printed, ["c is listed as \"running\""]);
    // Both tasks are inside their second `work` call: SIGKILL.
    first.kill().expect("SIGKILL");
    let status = first.wait().expect("wait");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let before: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(str::to_owned)
        .collect();
    for t in ["a", "b"] {
        assert_eq!(count(&before, &format!("work {t} 1")), 1, "{before:#?}");
        assert_eq!(count(&before, &format!("work {t} 2")), 1, "{before:#?}");
        let thread = format!("model task bg-thread:task:{t}");
        assert_eq!(count(&before, &thread), 2, "{before:#?}");
    }
    // `c` finished: two steps and its answer.
    assert_eq!(count(&before, "work c 1"), 1, "{before:#?}");
    assert_eq!(count(&before, "work c 2"), 1, "{before:#?}");
    assert_eq!(
        count(&before, "model task bg-thread:task:c"),
        3,
        "{before:#?}"
    );

    let out = worker("resume", &db, &log)
        .output()
        .expect("run the worker");
    assert!(
        out.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(str::to_owned)
        .collect();
    for t in ["a", "b"] {
        // The finished first step is not run again; the second, cut by the kill, runs once
        // more; the task's model is called once more (after it), not from its start.
        assert_eq!(count(&lines, &format!("work {t} 1")), 1, "{lines:#?}");
        assert_eq!(count(&lines, &format!("work {t} 2")), 2, "{lines:#?}");
        let thread = format!("model task bg-thread:task:{t}");
        assert_eq!(count(&lines, &thread), 3, "{lines:#?}");
    }
    // The finished task was not run again.
    assert_eq!(count(&lines, "work c 1"), 1, "{lines:#?}");
    assert_eq!(count(&lines, "work c 2"), 1, "{lines:#?}");
    assert_eq!(
        count(&lines, "model task bg-thread:task:c"),
        3,
        "{lines:#?}"
    );
    // Turn 1 made two orchestrator calls; turns 2 and 3 one each.
    assert_eq!(count(&lines, "model agent bg-thread"), 4, "{lines:#?}");
    let report: serde_json::Value = serde_json::from_slice(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .expect("a report line")
            .as_bytes(),
    )
    .expect("JSON");
    let second = report["second"].as_str().expect("second");
    assert!(
        second.contains("- a [running]") && second.contains("- b [running]"),
        "{second}"
    );
    let third = report["third"].as_str().expect("third");
    for t in ["a", "b", "c"] {
        assert!(
            third.contains(&format!(
                "- {t} [done] counter: count for {t} | result: finished count for {t}"
            )),
            "{third}"
        );
        assert_eq!(report["tasks"][t]["state"], "done", "{report}");
    }
}
