//! A tiny bounded run of the server's loopback load test (`src/bin/loadtest.rs`): every run completes
//! and every event arrives exactly once and in order, for the scripted agent (the default:
//! token streaming and a tool call) and for plain `set` steps. No speed is asserted here; the
//! figures come from release runs recorded in `docs/benchmarks.md`.

use serde_json::Value;
use std::process::Command;

fn load_test(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args([
            "--runs",
            "20",
            "--concurrency",
            "4",
            "--seconds",
            "120",
            "--json",
        ])
        .args(args)
        .output()
        .expect("the load test runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("a JSON report");
    assert_eq!(report["runs_completed"], 20, "{report}");
    assert_eq!(report["runs_failed"], 0, "{report}");
    assert_eq!(report["post_to_first_event"]["samples"], 20, "{report}");
    report
}

#[test]
fn scripted_agent_runs_at_concurrency_four_all_complete_in_order() {
    for storage in [&[][..], &["--sled"][..]] {
        let mut args = vec!["--words", "5"];
        args.extend_from_slice(storage);
        // The binary checks each run's ids are 1, 2, 3, … with no gap or duplicate, `run
        // started` first, three `updates`, 2 × 5 + 2 `messages` and `run done` last.
        let report = load_test(&args);
        assert_eq!(report["model"], "scripted", "{report}");
        assert_eq!(report["messages_events_per_run"], 12, "{report}");
        // started + 12 messages + 3 updates + the tool's progress + done.
        let per_run = report["events_per_run"].as_u64().unwrap_or(0);
        assert!(per_run > 17, "{report}");
        assert_eq!(report["events"], per_run * 20, "{report}");
        assert_eq!(report["post_to_first_token"]["samples"], 20, "{report}");
        assert_eq!(
            report["between_events"]["samples"],
            (per_run - 1) * 20,
            "{report}"
        );
    }
}

#[test]
fn set_steps_at_concurrency_four_all_complete_in_order() {
    for storage in [&[][..], &["--sled"][..]] {
        let mut args = vec!["--model", "none", "--steps", "4"];
        args.extend_from_slice(storage);
        let report = load_test(&args);
        // started + 4 updates + done.
        assert_eq!(report["events_per_run"], 6, "{report}");
        assert_eq!(report["events"], 120, "{report}");
        assert_eq!(report["between_events"]["samples"], 100, "{report}");
    }
}
