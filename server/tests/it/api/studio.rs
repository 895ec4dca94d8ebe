//! The studio's routes: the graphs folder listed from disk, a graph's diagram and channels, the
//! state at an older checkpoint, and forking a thread from one; the studio's files served.

use super::*;

#[tokio::test]
async fn graphs_are_listed_from_disk_before_any_run() {
    let s = Server::memory().await;
    let (status, compiled) = s.get("/graphs").await;
    assert_eq!(status, 200);
    assert_eq!(compiled["graphs"], json!([]), "nothing compiled yet");
    let (status, v) = s.get("/studio/graphs").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v,
        json!({"graphs": [
            {"name": "approval", "path": "approval.ag"},
            {"name": "broken", "path": "broken.ag"},
            {"name": "counter", "path": "counter.ag"},
            {"name": "nested/deep", "path": "nested/deep.ag"},
        ]})
    );
    s.stop().await;
}

#[tokio::test]
async fn a_graph_comes_with_its_diagram_and_typed_channels() {
    let s = Server::memory().await;
    let (status, v) = s.get("/studio/graphs/approval").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "approval");
    assert_eq!(v["path"], "approval.ag");
    let items = v["diagram"]["graph"]["items"].as_array().expect("items");
    let names: Vec<&str> = items.iter().filter_map(|i| i["name"].as_str()).collect();
    assert_eq!(names, ["START", "review", "publish", "END"]);
    assert_eq!(items[1]["writes"], "decision");
    let channel = |name: &str| {
        v["channels"]
            .as_array()
            .expect("channels")
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(channel("decision")["type"], "string");
    assert_eq!(channel("published")["type"], "bool");
    assert_eq!(channel("published")["default"], false);
    assert_eq!(channel("decision")["reducer"], "replace");

    // A broken graph is still drawn, with the compile error beside the diagram.
    let (status, v) = s.get("/studio/graphs/broken").await;
    assert_eq!(status, 200, "{v}");
    assert!(v["diagram"]["graph"]["items"].is_array(), "{v}");
    assert_eq!(v["error"]["code"], "GRAPH_INVALID", "{v}");
    assert!(v.get("channels").is_none());
    s.stop().await;
}

#[tokio::test]
async fn only_graph_files_under_the_folder_are_read() {
    let s = Server::memory().await;
    let (status, v) = s.get("/studio/graphs/notes.md").await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(error_code(&v), "GRAPH_NOT_FOUND");
    let (status, v) = s.get("/studio/graphs/nested/..%2F..%2FCargo.toml").await;
    assert!(status == 400 || status == 404, "{status} {v}");
    let (status, _) = s.get("/studio/graphs/%2Fetc%2Fpasswd").await;
    assert!(status == 400 || status == 404, "{status}");
    s.stop().await;
}

#[tokio::test]
async fn the_studio_is_served_when_asked_for() {
    let s = Server::start(
        ServerConfig::new(graphs_dir(), "unused")
            .storage(Storage::Memory)
            .studio(),
    )
    .await;
    for (path, ctype) in [
        ("/", "text/html"),
        ("/studio/app.js", "text/javascript"),
        ("/studio/studio.css", "text/css"),
    ] {
        let r = s.http.get(s.url(path)).send().await.expect("get");
        assert_eq!(r.status().as_u16(), 200, "{path}");
        let t = r.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .to_string();
        assert!(t.starts_with(ctype), "{path}: {t}");
    }
    s.stop().await;
    // Without it, `/` is not served.
    let s = Server::memory().await;
    assert_eq!(s.get("/").await.0, 404);
    s.stop().await;
}

/// Runs `approval` on `thread` to its interrupt and answers `yes`; returns the history.
async fn approved(s: &Server, thread: &str) -> Vec<Value> {
    let (status, v) = s
        .post(
            &format!("/threads/{thread}/runs"),
            json!({"graph": "approval", "input": {"draft": "Hello"}}),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    s.wait_idle(thread).await;
    let (status, v) = s
        .post(
            &format!("/threads/{thread}/resume"),
            json!({"value": "yes"}),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    s.wait_idle(thread).await;
    let (_, h) = s.get(&format!("/threads/{thread}/history")).await;
    h["history"].as_array().expect("history").clone()
}

#[tokio::test]
async fn state_at_an_older_checkpoint() {
    let s = Server::memory().await;
    let history = approved(&s, "cp-1").await;
    // Newest first: the last step set `published`; the one before had not.
    let (newest, before) = (&history[0], &history[1]);
    let (_, now) = s.get("/threads/cp-1/state").await;
    assert_eq!(now["values"]["published"], true);
    let (status, old) = s
        .get(&format!(
            "/threads/cp-1/state?checkpoint_id={}",
            before["checkpoint_id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(status, 200, "{old}");
    assert_eq!(old["values"]["published"], false);
    assert_eq!(old["values"]["decision"], "yes");
    assert_eq!(old["checkpoint_id"], before["checkpoint_id"]);
    assert_ne!(old["checkpoint_id"], newest["checkpoint_id"]);
    let (status, v) = s.get("/threads/cp-1/state?checkpoint_id=nope").await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(error_code(&v), "BAD_CHECKPOINT_ID");
    s.stop().await;
}

#[tokio::test]
async fn fork_continues_from_an_older_checkpoint_on_a_branch() {
    let s = Server::memory().await;
    let history = approved(&s, "fork-1").await;
    // The checkpoint that waited for the answer: `review` next, an interrupt pending.
    let waiting = history
        .iter()
        .find(|e| e["next"] == json!(["review"]) && e["source"] == "loop")
        .expect("the checkpoint before review")
        .clone();
    let id = waiting["checkpoint_id"].as_str().expect("id");
    let (status, v) = s
        .post("/threads/fork-1/fork", json!({"checkpoint_id": id}))
        .await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["thread_id"], "fork-1");
    s.wait_idle("fork-1").await;
    // The fork asks again; answering `no` this time leaves the draft unpublished.
    let (_, st) = s.get("/threads/fork-1/state").await;
    assert_eq!(st["interrupts"].as_array().map(Vec::len), Some(1), "{st}");
    let (status, _) = s
        .post("/threads/fork-1/resume", json!({"value": "no"}))
        .await;
    assert_eq!(status, 202);
    s.wait_idle("fork-1").await;
    let (_, st) = s.get("/threads/fork-1/state").await;
    assert_eq!(st["values"]["decision"], "no");
    assert_eq!(st["values"]["published"], false);
    // Two children of the forked-from checkpoint: the first run's and the fork's.
    let (_, h) = s.get("/threads/fork-1/history").await;
    let children = h["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|e| e["parent_id"].as_str() == Some(id))
        .count();
    assert_eq!(children, 2, "{h}");

    // With values: written at the checkpoint first.
    let first_loop = history
        .iter()
        .find(|e| e["next"] == json!(["review"]) && e["source"] == "loop")
        .expect("checkpoint");
    let (status, v) = s
        .post(
            "/threads/fork-1/fork",
            json!({"checkpoint_id": first_loop["checkpoint_id"], "values": {"draft": "Changed"}}),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    s.wait_idle("fork-1").await;
    let (_, st) = s.get("/threads/fork-1/state").await;
    assert_eq!(st["values"]["draft"], "Changed", "{st}");

    // Errors.
    let (status, v) = s
        .post("/threads/fork-1/fork", json!({"checkpoint_id": "bad"}))
        .await;
    assert_eq!((status, error_code(&v)), (400, "BAD_CHECKPOINT_ID"));
    let (status, v) = s
        .post(
            "/threads/fork-1/fork",
            json!({"checkpoint_id": "00000000000000000000000000000001"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&v)),
        (404, "CHECKPOINT_NOT_FOUND"),
        "{v}"
    );
    let (status, v) = s
        .post("/threads/nobody/fork", json!({"checkpoint_id": id}))
        .await;
    assert_eq!((status, error_code(&v)), (404, "THREAD_NOT_FOUND"), "{v}");
    s.stop().await;
}

#[tokio::test]
async fn a_diagram_reads_no_file_outside_the_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let graphs = dir.path().join("graphs");
    std::fs::create_dir_all(&graphs).expect("mkdir");
    std::fs::write(
        dir.path().join("secret.ag"),
        "graph secret {\n  state {\n    n: int = 0\n  }\n  node hidden_step {\n    set { n: 1 }\n  }\n  START -> hidden_step -> END\n}\n",
    )
    .expect("write");
    std::fs::write(
        graphs.join("outer.ag"),
        "graph outer {\n  state {\n    n: int = 0\n  }\n  node inner: subgraph \"../secret.ag\"\n  START -> inner -> END\n}\n",
    )
    .expect("write");
    let s = Server::start(ServerConfig::new(&graphs, "unused").storage(Storage::Memory)).await;
    let (status, v) = s.get("/studio/graphs/outer").await;
    assert_eq!(status, 200, "{v}");
    let text = v["diagram"].to_string();
    assert!(text.contains("inner"), "{text}");
    assert!(
        !text.contains("hidden_step"),
        "the outside file was read: {text}"
    );
    s.stop().await;
}
