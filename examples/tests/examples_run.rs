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
