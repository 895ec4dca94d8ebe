//! Inputs, stores and thread ids: nothing written on errors, the resume hint, unknown
//! threads.

use super::*;

#[test]
fn a_badly_typed_input_is_a_usage_error_and_writes_nothing() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("counter.ag"),
            "--thread",
            "bad",
            "--input",
            r#"{"limit": "x"}"#,
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("input `limit`"), "{}", o.stderr);
    let state = ag(db.path(), &["state", &g("counter.ag"), "--thread", "bad"]);
    assert_ne!(state.code, 0, "no checkpoint was written: {}", state.stdout);
}

/// The "resume with:" line pastes as is: it names the store when it is not the default.
#[test]
fn the_resume_hint_names_the_store() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(
        db.path(),
        &[
            "run",
            &g("approval.ag"),
            "--thread",
            "h",
            "--input",
            r#"{"draft": "Hi"}"#,
        ],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    let hint = o
        .stderr
        .lines()
        .find(|l| l.starts_with("resume with:"))
        .unwrap_or_else(|| panic!("a resume hint: {}", o.stderr));
    assert!(
        hint.contains(&format!("--db {} --thread h", db.path().display())),
        "{hint}"
    );
}

/// `--thread` takes the ids the server takes too.
#[test]
fn thread_ids_follow_the_servers_rule() {
    let db = tempfile::tempdir().unwrap();
    for bad in ["", "a b/é"] {
        let o = ag(
            db.path(),
            &["run", &g("counter.ag"), "--thread", bad, "--json"],
        );
        assert_eq!(o.code, 2, "{bad:?}: {}", o.stderr);
        assert!(o.stderr.contains("thread ids are"), "{}", o.stderr);
    }
}

/// Reading commands never create a store: a mistyped `--db` is an error.
#[test]
fn reading_a_missing_store_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("agentgrph");
    for args in [
        vec!["threads"],
        vec!["state", "graphs/examples/counter.ag", "--thread", "t"],
        vec!["prune", "--keep", "1"],
    ] {
        let mut full = vec![];
        for a in &args {
            full.push(if a.ends_with(".ag") {
                g("counter.ag")
            } else {
                a.to_string()
            });
        }
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let o = ag(&typo, &refs);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("no store at"), "{}", o.stderr);
        assert!(!typo.exists(), "{args:?} created the store");
    }
}

/// An unknown thread is bad usage for every command that reads one.
#[test]
fn an_unknown_thread_exits_2_everywhere() {
    let db = tempfile::tempdir().unwrap();
    let o = ag(db.path(), &["run", &g("counter.ag"), "--thread", "known"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for cmd in ["state", "history", "resume"] {
        let o = ag(db.path(), &[cmd, &g("counter.ag"), "--thread", "unknown"]);
        assert_eq!(o.code, 2, "{cmd}: {}", o.stderr);
    }
}

/// `store check|export|import`: a sled store copied through the JSON Lines export reads the
/// same, and a thread stopped at an interrupt resumes from the copy.
#[test]
fn a_store_exported_and_imported_reads_the_same_and_resumes() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dst = dst.path().join("restored");
    let counter = g("counter.ag");
    let approval = g("approval.ag");
    let o = ag(
        src.path(),
        &[
            "run",
            &counter,
            "--thread",
            "c",
            "--input",
            r#"{"limit": 4}"#,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = ag(
        src.path(),
        &[
            "run",
            &approval,
            "--thread",
            "a",
            "--input",
            r#"{"draft": "Hi"}"#,
        ],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);

    let check = ag(src.path(), &["store", "check"]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(
        check.stdout.contains("readable: 2 threads"),
        "{}",
        check.stdout
    );

    let file = src.path().join("backup.jsonl");
    let file = file.to_str().unwrap();
    let e = ag(src.path(), &["store", "export", "--out", file]);
    assert_eq!(e.code, 0, "{}", e.stderr);
    let i = ag(&dst, &["store", "import", file]);
    assert_eq!(i.code, 0, "{}", i.stderr);
    assert!(i.stdout.contains("imported 2 threads"), "{}", i.stdout);
    for (graph, thread) in [(&counter, "c"), (&approval, "a")] {
        for cmd in ["state", "history"] {
            let args = [cmd, graph.as_str(), "--thread", thread, "--json"];
            let (a, b) = (ag(src.path(), &args), ag(&dst, &args));
            assert_eq!(a.code, b.code);
            assert_eq!(
                a.stdout, b.stdout,
                "{cmd} of {thread} differs after the copy"
            );
        }
    }
    let r = ag(
        &dst,
        &[
            "resume", &approval, "--thread", "a", "--value", "\"yes\"", "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        last_json(&r.stdout),
        json!({"draft": "Hi", "decision": "yes", "published": true})
    );
    // The copy holds the threads now: importing again is refused.
    let again = ag(&dst, &["store", "import", file]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}
