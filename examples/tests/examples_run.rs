//! The embedding examples run to their end and print what they promise.

use std::process::Command;

fn run(bin: &str) -> String {
    let o = Command::new(bin).output().expect("the example runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn embed_dsl_uses_the_custom_tool_and_reducer() {
    let out = run(env!("CARGO_BIN_EXE_embed_dsl"));
    assert!(out.contains("progress: \"Looking up A-1001\""), "{out}");
    assert!(out.contains("priority: 1"), "{out}");
    assert!(out.contains("arrives tomorrow"), "{out}");
}

#[test]
fn a_second_process_resumes_the_thread() {
    let out = run(env!("CARGO_BIN_EXE_resume_elsewhere"));
    assert!(out.contains("[start] waiting for a human"), "{out}");
    assert!(out.contains("[resume] published: true"), "{out}");
}

#[test]
fn the_server_mounted_in_an_axum_app_runs_counter() {
    let o = Command::new(env!("CARGO_BIN_EXE_axum_app"))
        .arg("--self-test")
        .output()
        .expect("the example runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("GET /health -> {\"ok\":true}"), "{out}");
    assert!(out.contains("POST /agents/threads/t1/runs -> 202"), "{out}");
    assert!(out.contains("count: 3"), "{out}");
}
