//! `agentgraph serve` as a process: SIGTERM stops it gracefully (exit 0, the run in flight is
//! cancelled and checkpointed, a restarted server replays its `cancelled` end event and resumes
//! it); after SIGKILL a restarted server ends the orphaned run's log with an `interrupted`
//! event and resumes it; the log (stderr) reports a broken graph edit.
#![cfg(unix)]

use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    base: String,
    /// Every stderr line so far (the drain thread appends).
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples")
}

/// Starts `agentgraph serve` on port 0 over `graphs` and `db` and reads the bound address from
/// the `serving on http://…` line of stderr.
fn start(graphs: &Path, db: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db)
        .arg("serve")
        .arg("--graphs")
        .arg(graphs)
        // A host name, as in the README's examples (resolved to 127.0.0.1).
        .args(["--addr", "localhost:0"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentgraph serve starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let base = loop {
        match lines.next() {
            Some(Ok(line)) => {
                let found = line.strip_prefix("serving on ").map(|rest| {
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string()
                });
                seen.lock().unwrap().push(line);
                if let Some(base) = found {
                    break base;
                }
            }
            _ => panic!(
                "agentgraph serve exited before listening: {:?}",
                seen.lock().unwrap()
            ),
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    let sink = seen.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    Server {
        child,
        base,
        stderr: seen,
    }
}

impl Server {
    fn signal(&self, sig: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }

    /// Waits up to `limit` for the process to exit.
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "agentgraph serve still running {limit:?} after the signal; stderr: {:?}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    async fn post(&self, http: &reqwest::Client, path: &str, body: Value) -> (u16, Value) {
        let r = http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("post");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, http: &reqwest::Client, path: &str) -> (u16, Value) {
        let r = http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("get");
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    /// The thread's state once `done` holds (polls for up to 30 s).
    async fn wait_state(
        &self,
        http: &reqwest::Client,
        thread: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, st) = self
                .get(http, &format!("/threads/{thread}/state?graph=counter"))
                .await;
            if done(&st) {
                return st;
            }
            assert!(Instant::now() < deadline, "timed out; last state {st}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Replays the thread's log from the start until the first run-end event; returns the
    /// events' data.
    async fn replay_to_end(&self, http: &reqwest::Client, thread: &str) -> Vec<Value> {
        let mut resp = http
            .get(format!(
                "{}/threads/{thread}/events?lastEventId=0",
                self.base
            ))
            .send()
            .await
            .expect("sse");
        assert_eq!(resp.status().as_u16(), 200);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut buf = String::new();
        let mut out = Vec::new();
        loop {
            while let Some(i) = buf.find("\n\n") {
                let block: String = buf.drain(..i + 2).collect();
                if block.lines().any(|l| l.starts_with("event: gap")) {
                    // The bounded log dropped the run's first events (it made many steps).
                    continue;
                }
                for line in block.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        let v: Value = serde_json::from_str(data.trim()).expect("json event");
                        let end = v["mode"] == "run" && v["data"]["status"] != "started";
                        out.push(v);
                        if end {
                            return out;
                        }
                    }
                }
            }
            let chunk = tokio::time::timeout_at(deadline, resp.chunk())
                .await
                .unwrap_or_else(|_| panic!("no run-end event in the replay: {out:?}"))
                .expect("sse chunk")
                .unwrap_or_else(|| panic!("stream ended without a run-end event: {out:?}"));
            buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

const LONG_RUN: &str =
    r#"{"graph":"counter","input":{"limit":100000000},"recursion_limit":200000000}"#;

/// Starts the long counter run on `thread` and waits until it has made some steps.
async fn start_long_run(s: &Server, http: &reqwest::Client, thread: &str) -> String {
    let body: Value = serde_json::from_str(LONG_RUN).expect("json");
    let (st, v) = s.post(http, &format!("/threads/{thread}/runs"), body).await;
    assert_eq!(st, 202, "{v}");
    s.wait_state(http, thread, |st| {
        st["values"]["count"].as_i64().unwrap_or(0) >= 5
    })
    .await;
    v["run_id"].as_str().expect("run id").to_string()
}

/// Resumes the thread on `s`, sees it make progress, then cancels it.
async fn resume_makes_progress(s: &Server, http: &reqwest::Client, thread: &str, from: i64) {
    let (st, v) = s
        .post(http, &format!("/threads/{thread}/resume"), json!({}))
        .await;
    assert_eq!(st, 202, "{v}");
    s.wait_state(http, thread, |st| {
        st["values"]["count"].as_i64().unwrap_or(0) > from + 5
    })
    .await;
    let (st, v) = s
        .post(http, &format!("/threads/{thread}/cancel"), json!({}))
        .await;
    assert_eq!((st, &v["cancelled"]), (200, &json!(true)), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_gracefully_and_the_cancelled_run_resumes_after_a_restart() {
    let db = tempfile::tempdir().expect("tempdir");
    let http = reqwest::Client::new();
    let mut s = start(&examples(), db.path());
    let run_id = start_long_run(&s, &http, "term-1").await;

    let sent = Instant::now();
    s.signal(libc::SIGTERM);
    let status = s.wait_exit(Duration::from_secs(10));
    assert!(
        status.success(),
        "exit {status:?}; stderr: {}",
        s.stderr_text()
    );
    assert!(sent.elapsed() < Duration::from_secs(10));
    // The default `info` log says why it stopped.
    assert!(s.stderr_text().contains("stopping"), "{}", s.stderr_text());
    drop(s);

    let s = start(&examples(), db.path());
    let events = s.replay_to_end(&http, "term-1").await;
    let end = events.last().expect("end");
    assert_eq!(end["data"]["status"], "cancelled", "{end}");
    assert_eq!(end["data"]["run_id"], json!(run_id));
    let (_, state) = s.get(&http, "/threads/term-1/state?graph=counter").await;
    assert_eq!(state["next"], json!(["bump"]), "{state}");
    // The cancelled run's checkpoints carry the id the POST returned.
    assert_eq!(state["metadata"]["run_id"], json!(run_id), "{state}");
    let count = state["values"]["count"].as_i64().expect("count");
    resume_makes_progress(&s, &http, "term-1", count).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn after_sigkill_a_restart_ends_the_log_as_interrupted_and_the_thread_resumes() {
    let db = tempfile::tempdir().expect("tempdir");
    let http = reqwest::Client::new();
    let mut s = start(&examples(), db.path());
    let run_id = start_long_run(&s, &http, "kill-1").await;
    // sled writes its pages out every 500 ms; give the event log time to reach the disk.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.signal(libc::SIGKILL);
    s.wait_exit(Duration::from_secs(10));
    drop(s);

    let s = start(&examples(), db.path());
    let events = s.replay_to_end(&http, "kill-1").await;
    let end = events.last().expect("end");
    assert_eq!(end["data"]["status"], "interrupted", "{end}");
    assert_eq!(end["data"]["run_id"], json!(run_id), "{end}");
    assert!(
        end["data"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("resume")),
        "{end}"
    );
    // The restart logged which thread it closed.
    assert!(s.stderr_text().contains("kill-1"), "{}", s.stderr_text());
    let (_, state) = s.get(&http, "/threads/kill-1/state?graph=counter").await;
    let count = state["values"]["count"].as_i64().expect("count");
    assert!(count >= 5, "{state}");
    resume_makes_progress(&s, &http, "kill-1", count).await;
}

/// Reads SSE blocks from `resp` until `done` says stop; returns `(id, data)` of each event
/// (gap blocks included, with their data).
async fn read_events(
    resp: &mut reqwest::Response,
    mut done: impl FnMut(&[(u64, Value)]) -> bool,
) -> Vec<(u64, Value)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (mut buf, mut out) = (String::new(), Vec::new());
    loop {
        while let Some(i) = buf.find("\n\n") {
            let block: String = buf.drain(..i + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .and_then(|v| v.trim().parse::<u64>().ok());
            let data = block.lines().find_map(|l| l.strip_prefix("data:"));
            if let (Some(id), Some(data)) = (id, data) {
                out.push((id, serde_json::from_str(data.trim()).expect("json event")));
                if done(&out) {
                    return out;
                }
            }
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .unwrap_or_else(|_| panic!("no more events after {out:?}"))
            .expect("sse chunk")
            .unwrap_or_else(|| panic!("stream ended after {out:?}"));
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// The replay is exact across a SIGKILL: an event reaches clients only once it is on disk, so
/// the `interrupted` event a restart appends gets an id above every id a client saw, and a
/// client reconnecting with the last id it received sees the run end (before events were
/// published only after they were durable, the restart reused an id the client already had).
#[tokio::test(flavor = "multi_thread")]
async fn a_client_reconnecting_after_a_sigkill_sees_the_run_end() {
    let db = tempfile::tempdir().expect("tempdir");
    let http = reqwest::Client::new();
    for round in 0..3 {
        let thread = format!("kill-replay-{round}");
        let mut s = start(&examples(), db.path());
        let body: Value = serde_json::from_str(LONG_RUN).expect("json");
        let mut resp = http
            .get(format!("{}/threads/{thread}/events?lastEventId=0", s.base))
            .send()
            .await
            .expect("sse");
        let (st, v) = s
            .post(&http, &format!("/threads/{thread}/runs"), body)
            .await;
        assert_eq!(st, 202, "{v}");
        // Kill it as soon as the client has some events: no time for a background flush.
        let seen = read_events(&mut resp, |evs| evs.len() >= 10 + round).await;
        s.signal(libc::SIGKILL);
        s.wait_exit(Duration::from_secs(10));
        drop(s);
        let last = seen.iter().map(|(id, _)| *id).max().expect("events");

        let s = start(&examples(), db.path());
        let mut resp = http
            .get(format!("{}/threads/{thread}/events", s.base))
            .header("Last-Event-ID", last.to_string())
            .send()
            .await
            .expect("sse");
        assert_eq!(resp.status().as_u16(), 200);
        let after = read_events(&mut resp, |evs| {
            evs.iter()
                .any(|(_, v)| v["mode"] == "run" && v["data"]["status"] == "interrupted")
        })
        .await;
        for (id, v) in &after {
            assert!(
                *id > last,
                "round {round}: id {id} after Last-Event-ID {last}: {v}"
            );
        }
    }
}

/// Twenty SIGKILLs at pseudo-random moments of one thread's runs: after each, a restart, a
/// client reconnecting with the last id it received sees the run end (`interrupted`), the
/// thread is resumed, and the next kill comes after a random number of its events. Over all
/// connections the client sees every id once, in increasing order.
#[tokio::test(flavor = "multi_thread")]
async fn twenty_sigkills_at_random_moments_replay_every_event_once() {
    const KILLS: usize = 20;
    let db = tempfile::tempdir().expect("tempdir");
    let http = reqwest::Client::new();
    let thread = "kill-twenty";
    // A fixed-seed generator: the moments vary from round to round, the same in every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next_moment = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        1 + (seed >> 33) as usize % 25
    };
    let mut seen: Vec<u64> = Vec::new();
    let mut ends = 0;
    for round in 0..=KILLS {
        let mut s = start(&examples(), db.path());
        if let Some(&last) = seen.last() {
            // The run the previous round killed ends, with an id above every id seen.
            let mut resp = http
                .get(format!("{}/threads/{thread}/events", s.base))
                .header("Last-Event-ID", last.to_string())
                .send()
                .await
                .expect("sse");
            let after = read_events(&mut resp, |evs| {
                evs.iter()
                    .any(|(_, v)| v["mode"] == "run" && v["data"]["status"] == "interrupted")
            })
            .await;
            seen.extend(after.iter().map(|(id, _)| *id));
            ends += 1;
        }
        if round == KILLS {
            break;
        }
        let from = seen.last().copied().unwrap_or(0);
        let mut resp = http
            .get(format!("{}/threads/{thread}/events", s.base))
            .header("Last-Event-ID", from.to_string())
            .send()
            .await
            .expect("sse");
        let (st, v) = if round == 0 {
            let body: Value = serde_json::from_str(LONG_RUN).expect("json");
            s.post(&http, &format!("/threads/{thread}/runs"), body)
                .await
        } else {
            s.post(&http, &format!("/threads/{thread}/resume"), json!({}))
                .await
        };
        assert_eq!(st, 202, "round {round}: {v}");
        let moment = next_moment();
        let got = read_events(&mut resp, |evs| evs.len() >= moment).await;
        s.signal(libc::SIGKILL);
        s.wait_exit(Duration::from_secs(10));
        drop(s);
        seen.extend(got.iter().map(|(id, _)| *id));
    }
    assert_eq!(ends, KILLS, "every kill's run end was seen");
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "an id came twice or out of order: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_graph_edit_is_reported_on_stderr() {
    let db = tempfile::tempdir().expect("tempdir");
    let graphs = tempfile::tempdir().expect("tempdir");
    let file = graphs.path().join("counter.ag");
    std::fs::copy(examples().join("counter.ag"), &file).expect("copy");
    let http = reqwest::Client::new();
    let s = start(graphs.path(), db.path());
    // Compiling the graph (a first run) makes the server watch its file.
    let (st, v) = s
        .post(
            &http,
            "/threads/edit-1/runs",
            json!({"graph": "counter", "input": {"limit": 1}}),
        )
        .await;
    assert_eq!(st, 202, "{v}");
    std::fs::write(
        &file,
        "graph counter {\n  state { count: int = 0 }\n  START -> nowhere\n}\n",
    )
    .expect("edit");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = s.stderr_text();
        if text.contains("graph edit rejected") && text.contains("nowhere") {
            assert!(text.contains("WARN"), "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "no report on stderr:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `agentgraph threads` names the graph of a thread the server ran (the server's graph name),
/// once the server has stopped.
#[tokio::test(flavor = "multi_thread")]
async fn threads_name_the_graph_of_served_threads() {
    let db = tempfile::tempdir().unwrap();
    let mut server = start(&examples(), db.path());
    let http = reqwest::Client::new();
    let (code, body) = server
        .post(
            &http,
            "/threads/served/runs",
            json!({"graph": "counter", "input": {"limit": 2}}),
        )
        .await;
    assert_eq!(code, 202, "{body}");
    server
        .wait_state(&http, "served", |st| {
            st["values"]["count"] == json!(2) && st["next"] == json!([])
        })
        .await;
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit(Duration::from_secs(30)).success());
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .args(["threads", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&rows[0]["thread_id"], &rows[0]["graph"], &rows[0]["status"]),
        (&json!("served"), &json!("counter"), &json!("done"))
    );
}
