//! `agentgraph chat` piped (no terminal) from a folder without `graphs/`: the built-in graphs,
//! no escape codes, the offline demo declining what it has no script for; and the order in
//! which shipped graphs are looked up (a folder on disk before the built-in copy).

use crate::chat_tty::{Place, CHANGE, DEMO_NODES, PROMPT};
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn piped_chat_from_a_folder_without_graphs_uses_the_built_in_ones_without_escape_codes() {
    let place = Place::new();
    let out_file = place.dir.path().join("workflow.json");
    let db = place.db().display().to_string();
    let out_s = out_file.display().to_string();
    let o = place.piped(
        &["--db", &db, "chat", "--out", &out_s],
        &format!("{PROMPT}\nAdd a Slack message too\n{CHANGE}\n{CHANGE}\n"),
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // TERM is set, but nothing is a terminal: no escape code anywhere.
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("thread: t-")
            && first.ends_with(" (graph graphs/workflow-builder/single-agent.ag, built in)"),
        "{stdout}"
    );
    assert!(stdout.contains("\ndemo: this is the offline demo: a fixed script, not a model."));
    // Tool progress as plain lines, the answer as written, the diff after the summary.
    assert!(stdout.contains("\n  · Running add_nodes\n"), "{stdout}");
    assert!(
        stdout.contains("I built **Weekly Email Summary**"),
        "{stdout}"
    );
    assert!(
        stdout.contains("changes: +6 nodes, +5 connections\n"),
        "{stdout}"
    );
    for node in DEMO_NODES {
        assert!(
            stdout.contains(&format!("  + {node}\n")),
            "{node}:\n{stdout}"
        );
    }
    // A request the demo has no script for is declined plainly, before running and after
    // (the second Tuesday move: its answers were used); no script error reaches the user.
    let declined = "The offline demo has no scripted answer for that";
    assert_eq!(stdout.matches(declined).count(), 2, "{stdout}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(!stdout.contains("no pending response"), "{stdout}");
    assert!(stdout.contains("now runs on Tuesdays"), "{stdout}");
    // The workflow is the Tuesday one, six nodes: the declined requests changed nothing.
    let wf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(wf["nodes"].as_array().map(Vec::len), Some(6));
    let trigger = wf["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "n8n-nodes-base.scheduleTrigger")
        .unwrap();
    assert_eq!(
        trigger["parameters"]["rule"]["interval"][0]["triggerAtDay"],
        serde_json::json!([2])
    );
}

/// A graphs folder on disk wins over the built-in copy, so users can edit theirs.
#[test]
fn a_graphs_folder_on_disk_wins_over_the_built_in_graphs() {
    let place = Place::new();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/workflow-builder");
    let local = place.cwd().join("graphs/workflow-builder");
    copy_dir(&shipped, &local);
    let o = place.piped(
        &["--db", &place.db().display().to_string(), "chat"],
        "/quit\n",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .next()
            .is_some_and(|l| l.ends_with(" (graph graphs/workflow-builder/single-agent.ag)")),
        "{stdout}"
    );
}

/// The graphs folder of the settings (`$AGENTGRAPH_GRAPHS`) comes before the built-in copy.
#[test]
fn the_configured_graphs_folder_comes_before_the_built_in_graphs() {
    let place = Place::new();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/workflow-builder");
    let folder = place.dir.path().join("my-graphs");
    copy_dir(&shipped, &folder.join("workflow-builder"));
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    c.current_dir(place.cwd()).env_clear();
    for (k, v) in place.env() {
        c.env(k, v);
    }
    let o = c
        .env("AGENTGRAPH_GRAPHS", &folder)
        .args([
            "--db",
            &place.db().display().to_string(),
            "chat",
            "--graph",
            "multi",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    let expected = format!(
        " (graph {})",
        folder.join("workflow-builder/multi-agent.ag").display()
    );
    assert!(
        stdout
            .lines()
            .next()
            .is_some_and(|l| l.ends_with(&expected)),
        "{stdout}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
