//! `chat --n8n` against the real n8n: create, update, undo, resume; a refused key.

use super::*;

/// Three sessions on one thread: turn 1 creates the n8n workflow, turn 2 (a new session with
/// `--thread`) updates the same one, `/undo` (a third) puts turn 1's workflow back. After each,
/// n8n holds what the thread holds.
#[test]
fn chat_deploys_updates_and_undoes_into_one_n8n_workflow() {
    let Some(inst) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let n8n = RealN8n::new(&inst);
    let db = tempfile::tempdir().expect("tempdir");
    let script = scripts("deploy");
    let args = ["--thread", "deploy-1", "--n8n"];

    let text = chat(
        db.path(),
        &script,
        n8n.env(),
        &args,
        &format!("{TURN1}\n/open\n/quit\n"),
    );
    let id = workflow_id(&text, "created").unwrap_or_else(|| panic!("no create:\n{text}"));
    n8n.track(&id);
    let url = format!("{}/workflow/{id}", n8n.url);
    assert!(text.contains(&format!("open {url}")), "{text}");
    let values = thread_values(db.path(), "deploy-1");
    assert_eq!(
        values["n8n_workflow_id"],
        json!(id),
        "the id is in the state"
    );
    assert_eq!(greeting(&values["workflow"]), json!("hello"));
    let remote = n8n.workflow(&id);
    assert_eq!(remote["name"], "Hourly Greeting");
    assert_eq!(kept(&remote), kept(&values["workflow"]));

    // A later session on the thread deploys into the same n8n workflow.
    let text = chat(
        db.path(),
        &script,
        n8n.env(),
        &args,
        &format!("{TURN2}\n/quit\n"),
    );
    assert!(
        text.contains(&format!("n8n: this thread deploys to workflow {id}: {url}")),
        "{text}"
    );
    assert_eq!(
        workflow_id(&text, "updated").as_deref(),
        Some(id.as_str()),
        "{text}"
    );
    assert_eq!(workflow_id(&text, "created"), None, "{text}");
    let values = thread_values(db.path(), "deploy-1");
    assert_eq!(greeting(&values["workflow"]), json!("goodbye"));
    assert_eq!(kept(&n8n.workflow(&id)), kept(&values["workflow"]));

    // `/undo` puts turn 1's workflow back, in the thread and in n8n; the id stays.
    let text = chat(db.path(), &script, n8n.env(), &args, "/undo\n/quit\n");
    assert!(text.contains("undone: back to checkpoint"), "{text}");
    assert_eq!(
        workflow_id(&text, "updated").as_deref(),
        Some(id.as_str()),
        "{text}"
    );
    let values = thread_values(db.path(), "deploy-1");
    assert_eq!(values["n8n_workflow_id"], json!(id));
    assert_eq!(greeting(&values["workflow"]), json!("hello"));
    let remote = n8n.workflow(&id);
    assert_eq!(greeting(&remote), json!("hello"));
    assert_eq!(kept(&remote), kept(&values["workflow"]));
}

/// A key n8n refuses: one line saying so, the turn's workflow kept, no id; the next turn (with
/// the right key) deploys.
#[test]
fn a_refused_key_is_reported_and_the_next_turn_deploys() {
    let Some(inst) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let n8n = RealN8n::new(&inst);
    let db = tempfile::tempdir().expect("tempdir");
    let script = scripts("deploy");
    let args = ["--thread", "deploy-key", "--n8n"];

    let bad = (n8n.url.as_str(), "not-a-key");
    let text = chat(db.path(), &script, bad, &args, &format!("{TURN1}\n/quit\n"));
    let line = text
        .lines()
        .find(|l| l.contains("refused the API key"))
        .unwrap_or_else(|| panic!("no key error:\n{text}"));
    assert!(
        line.contains("401") && line.contains("N8N_API_KEY"),
        "{line}"
    );
    assert!(line.contains("the thread is intact"), "{line}");
    assert!(
        text.contains("workflow: Hourly Greeting (2 nodes)"),
        "{text}"
    );
    let values = thread_values(db.path(), "deploy-key");
    assert_eq!(
        values["workflow"]["nodes"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(
        values["n8n_workflow_id"].is_null(),
        "{}",
        values["n8n_workflow_id"]
    );

    let text = chat(
        db.path(),
        &script,
        n8n.env(),
        &args,
        &format!("{TURN2}\n/quit\n"),
    );
    let id = workflow_id(&text, "created").unwrap_or_else(|| panic!("no create:\n{text}"));
    n8n.track(&id);
    let values = thread_values(db.path(), "deploy-key");
    assert_eq!(values["n8n_workflow_id"], json!(id));
    assert_eq!(kept(&n8n.workflow(&id)), kept(&values["workflow"]));
}

/// A closed loopback port: one line saying n8n cannot be reached, the thread intact.
#[test]
fn an_unreachable_n8n_is_reported_and_the_thread_stays_intact() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let db = tempfile::tempdir().expect("tempdir");
    let args = ["--thread", "deploy-closed", "--n8n"];
    let text = chat(
        db.path(),
        &scripts("deploy"),
        (&url, "some-key"),
        &args,
        &format!("{TURN1}\n/quit\n"),
    );
    let line = text
        .lines()
        .find(|l| l.contains("cannot reach n8n"))
        .unwrap_or_else(|| panic!("no transport error:\n{text}"));
    assert!(line.contains(&url), "{line}");
    assert!(line.contains("the thread is intact"), "{line}");
    // The built-in catalogue is not this instance's node types: a hint says how to use them.
    assert!(
        text.contains(&format!("agentgraph catalogue from-n8n {url}")),
        "no catalogue hint:\n{text}"
    );
    let values = thread_values(db.path(), "deploy-closed");
    assert_eq!(greeting(&values["workflow"]), json!("hello"));
    assert!(values["n8n_workflow_id"].is_null());
}

/// Without `--n8n` nothing is deployed and the n8n commands say how to turn it on.
#[test]
fn without_n8n_the_commands_say_how_to_turn_it_on() {
    let db = tempfile::tempdir().expect("tempdir");
    let text = chat(
        db.path(),
        &scripts("deploy"),
        ("http://127.0.0.1:9", "k"),
        &["--thread", "no-n8n"],
        &format!("{TURN1}\n/deploy\n/open\n/help\n/quit\n"),
    );
    assert!(!text.contains("n8n: created"), "{text}");
    assert_eq!(
        text.matches("n8n is off: start chat with --n8n").count(),
        2,
        "{text}"
    );
    assert!(
        text.contains("/deploy (send the workflow to n8n now)"),
        "{text}"
    );
    assert!(thread_values(db.path(), "no-n8n")["n8n_workflow_id"].is_null());
}

/// `--n8n` without a key stops before the first turn, saying which variable to set.
#[test]
fn a_missing_key_stops_chat_at_once() {
    let db = tempfile::tempdir().expect("tempdir");
    let o = command(
        db.path(),
        &scripts("deploy"),
        "http://127.0.0.1:9",
        " ",
        &["chat", "--n8n"],
    )
    .stdin(Stdio::null())
    .output()
    .expect("the agentgraph binary runs");
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    assert!(
        both(&o).contains("no n8n API key: set N8N_API_KEY"),
        "{}",
        both(&o)
    );
}

/// With the instance's own node types saved for this address, no catalogue hint.
#[test]
fn the_instances_own_catalogue_needs_no_hint() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let db = tempfile::tempdir().expect("tempdir");
    let data = tempfile::tempdir().expect("tempdir");
    let instance = data.path().join("catalogue/instance");
    std::fs::create_dir_all(&instance).expect("mkdir");
    std::fs::write(instance.join("nodes.json"), "[]").expect("nodes.json");
    std::fs::write(
        instance.join("SOURCE.json"),
        json!({"url": format!("{url}/"), "node_types": 0, "fetched_at": "2026-01-01T00:00:00Z"})
            .to_string(),
    )
    .expect("SOURCE.json");
    let o = command(
        db.path(),
        &scripts("deploy"),
        &url,
        "some-key",
        &["chat", "--n8n"],
    )
    .env("AGENTGRAPH_DATA_DIR", data.path())
    .stdin(Stdio::piped())
    .output()
    .expect("runs");
    let text = both(&o);
    assert!(text.contains("catalogue: "), "no start line:\n{text}");
    assert!(
        text.contains("instance"),
        "the instance catalogue is used:\n{text}"
    );
    assert!(
        !text.contains("catalogue from-n8n"),
        "a hint although the catalogue is the instance's:\n{text}"
    );
}
