//! `agentgraph keys` and `serve`'s authentication as processes: a created key is printed once
//! and never listed, a revoked one is listed as revoked; `serve` refuses a non-loopback address
//! without authentication (non-zero exit, a clear error) and, once a key exists, answers 401
//! without it and serves its page without one.
#![cfg(unix)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples")
}

fn agentgraph(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("AGENTGRAPH_JWT_SECRET")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .output()
        .expect("agentgraph runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn keys_are_printed_once_listed_without_the_key_and_revoked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let out = agentgraph(&db, &["keys", "create", "--name", "ci", "--scope", "admin"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = text(&out.stdout).trim().to_string();
    assert!(key.starts_with("agk_") && key.len() > 60, "{key}");
    assert_eq!(key.lines().count(), 1, "stdout is the key alone: {key}");
    let again = agentgraph(&db, &["keys", "create", "--name", "ci"]);
    assert_eq!(again.status.code(), Some(2), "a duplicate name is refused");

    let list = agentgraph(&db, &["keys", "list"]);
    let listed = text(&list.stdout);
    assert!(
        listed.contains("ci") && listed.contains("admin"),
        "{listed}"
    );
    assert!(!listed.contains(&key), "the key is never listed");
    let stored = std::fs::read_to_string(db.join("api-keys.json")).expect("keys file");
    assert!(!stored.contains(&key), "the key is stored hashed");

    let out = agentgraph(&db, &["keys", "revoke", "ci"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = agentgraph(&db, &["--json", "keys", "list"]);
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json list");
    assert!(v[0]["revoked"].is_string(), "{v}");
    assert_eq!(
        agentgraph(&db, &["keys", "revoke", "nope"]).status.code(),
        Some(2)
    );
}

#[test]
fn serve_off_loopback_without_auth_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let graphs = examples();
    let graphs = graphs.to_str().expect("utf-8 path");
    // Refused before it binds. Should it start anyway, it is stopped (no test hangs on it).
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(&db)
        .args(["serve", "--graphs", graphs, "--addr", "0.0.0.0:0"])
        .env_remove("RUST_LOG")
        .env_remove("AGENTGRAPH_JWT_SECRET")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentgraph runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("served on 0.0.0.0 without authentication");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!status.success(), "served without authentication");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert!(
        err.contains("without authentication") && err.contains("--insecure-no-auth"),
        "{err}"
    );
}

#[tokio::test]
async fn serve_with_a_key_needs_it_and_still_serves_its_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let out = agentgraph(&db, &["keys", "create", "--name", "me"]);
    let key = text(&out.stdout).trim().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(&db)
        .arg("serve")
        .arg("--graphs")
        .arg(examples())
        .args(["--addr", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let base = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(rest) = line.strip_prefix("serving on ") {
                    break rest.split_whitespace().next().unwrap_or("").to_string();
                }
                seen.push(line);
            }
            _ => {
                let _ = child.kill();
                panic!("serve exited: {seen:?}");
            }
        }
    };
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    assert!(
        seen.iter()
            .any(|l| l.starts_with("authentication: API keys")),
        "{seen:?}"
    );
    let http = reqwest::Client::new();
    let get = |path: &str, key: Option<&str>| {
        let mut r = http.get(format!("{base}{path}"));
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        r.send()
    };
    let st = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(st(get("/threads", None).await.expect("get")), 401);
    assert_eq!(
        st(get("/threads", Some("agk_nope_nope")).await.expect("get")),
        401
    );
    assert_eq!(st(get("/threads", Some(&key)).await.expect("get")), 200);
    // The studio (at `/`, its script under `/studio/`) and the chat page load without a key,
    // and their scripts send one.
    let body = |path: &'static str| async move {
        let page = get(path, None).await.expect("page");
        assert_eq!(page.status().as_u16(), 200, "{path}");
        page.text().await.expect("text")
    };
    assert!(body("/").await.contains("/studio/app.js"));
    assert!(body("/studio/app.js").await.contains("Authorization"));
    assert!(body("/chat").await.contains("Authorization"));
    let _ = child.kill();
    let _ = child.wait();
}
