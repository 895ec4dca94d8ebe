//! The binary: one JSON line on success, exit code 2 for bad usage.

use std::process::Command;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentgraph-bench"))
        .args(args)
        .output()
        .expect("the harness binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prints_one_json_line() {
    let (code, stdout, stderr) =
        bench(&["chain", "--n", "3", "--checkpointer", "sqlite", "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["workload"], "chain");
    assert_eq!(v["checkpointer"], "sqlite");
    assert_eq!(v["store"], "sled");
    assert_eq!(v["checksum"], "00746dd9577f1eb2");
    assert!(v["sqlite_bytes"].as_u64().is_some_and(|b| b > 0));
}

#[test]
fn bad_usage_exits_with_2() {
    for args in [
        &["nope", "--n", "3"][..],
        &["chain"][..],
        &["chain", "--n", "x"][..],
        &["chain", "--n", "3", "--checkpointer", "postgres"][..],
        &["chain", "--n", "0"][..],
        &["resume", "--n", "10"][..],
        &["resume", "--n", "1", "--checkpointer", "memory"][..],
    ] {
        let (code, stdout, stderr) = bench(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(!stderr.is_empty(), "{args:?}: no message");
    }
}
