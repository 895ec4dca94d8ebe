//! A tiny bounded run of the loopback load test (`src/bin/loadtest.rs`): every run completes
//! and every event arrives exactly once and in order. No speed is asserted here; the figures
//! come from release runs recorded in `docs/benchmarks.md`.

use serde_json::Value;
use std::process::Command;

#[test]
fn twenty_runs_at_concurrency_four_all_complete_in_order() {
    for storage in [None, Some("--sled")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadtest"));
        cmd.args([
            "--runs",
            "20",
            "--concurrency",
            "4",
            "--steps",
            "4",
            "--seconds",
            "120",
            "--json",
        ]);
        if let Some(flag) = storage {
            cmd.arg(flag);
        }
        let out = cmd.output().expect("the load test runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_str(stdout.trim()).expect("a JSON report");
        // The binary checks each run's ids are 1, 2, 3, … with no gap or duplicate, `run
        // started` first, one `updates` event per step and `run done` last.
        assert_eq!(report["runs_completed"], 20, "{report}");
        assert_eq!(report["runs_failed"], 0, "{report}");
        // started + 4 updates + done.
        assert_eq!(report["events_per_run"], 6, "{report}");
        assert_eq!(report["events"], 120, "{report}");
        assert_eq!(report["post_to_first_event"]["samples"], 20, "{report}");
        assert_eq!(report["between_events"]["samples"], 100, "{report}");
    }
}
