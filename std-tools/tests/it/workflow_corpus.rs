//! The real n8n workflow corpus (`$AGENTGRAPH_N8N_WORKFLOWS`): all 340 workflows load and
//! round-trip to identical JSON; the 7 broken files give a located error each.

use agentgraph_std_tools::workflow::{Workflow, WorkflowError};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The corpus folder; `None` records a skip of the current test.
fn data_dir() -> Option<PathBuf> {
    agentgraph_test_support::n8n_workflows()
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn corpus(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "_invalid-json" || name == "manifest.json" {
            continue;
        }
        if path.is_dir() {
            json_files(&path, &mut files);
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn all_340_workflows_load_and_round_trip() {
    let Some(dir) = data_dir() else { return };
    let files = corpus(&dir);
    assert_eq!(files.len(), 340, "expected 340 workflow files");
    let mut failures = Vec::new();
    let (mut nodes, mut without_id) = (0usize, 0usize);
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable corpus file");
        let original: Value = serde_json::from_str(&text).expect("corpus file is JSON");
        let wf = match Workflow::from_json_str(&text) {
            Ok(wf) => wf,
            Err(e) => {
                failures.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        nodes += wf.nodes.len();
        without_id += wf.nodes.iter().filter(|n| n.id.is_none()).count();
        if wf.to_value() != original {
            failures.push(format!("{}: to_value differs", path.display()));
            continue;
        }
        let again: Value = serde_json::from_str(&wf.to_json_string()).expect("own output parses");
        if again != original {
            failures.push(format!("{}: to_json_string differs", path.display()));
            continue;
        }
        match Workflow::from_value(original.clone()) {
            Ok(w) if w == wf => {}
            Ok(_) => failures.push(format!("{}: from_value differs", path.display())),
            Err(e) => failures.push(format!("{}: from_value: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(nodes, 6103, "node count of the corpus");
    assert_eq!(without_id, 99, "nodes without id");
}

#[test]
fn corpus_connections_resolve_to_node_names() {
    let Some(dir) = data_dir() else { return };
    let mut dangling = 0usize;
    let mut edges = 0usize;
    for path in corpus(&dir) {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let wf = Workflow::from_json_str(&text).expect("loads");
        for e in wf.edges() {
            edges += 1;
            if wf.node_by_name(&e.target.node).is_none() || wf.node_by_name(&e.source).is_none() {
                dangling += 1;
            }
        }
    }
    assert_eq!(edges, 4334, "connections in the corpus");
    eprintln!("corpus: {edges} connections, {dangling} naming a missing node");
}

#[test]
fn the_7_invalid_files_give_located_errors() {
    let Some(dir) = data_dir() else { return };
    let mut files = Vec::new();
    json_files(&dir.join("_invalid-json"), &mut files);
    assert_eq!(files.len(), 7, "expected 7 invalid files");
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable file");
        let err = Workflow::from_json_str(&text).expect_err("must not load");
        let msg = err.to_string();
        match &err {
            WorkflowError::Syntax { line, column, .. } => {
                assert!(*line > 0 && *column > 0, "{}: {msg}", path.display());
                assert!(
                    msg.contains(&format!("line {line}"))
                        && msg.contains(&format!("column {column}")),
                    "{}: {msg}",
                    path.display()
                );
            }
            other => panic!("{}: expected a syntax error, got {other:?}", path.display()),
        }
        eprintln!("{}: {msg}", path.display());
    }
}

#[test]
fn shape_errors_are_clear() {
    let err = Workflow::from_json_str("{\"nodes\": [{\"name\": \"A\"}], \"connections\": {}}")
        .expect_err("node without type");
    let msg = err.to_string();
    assert!(matches!(err, WorkflowError::Shape { .. }), "{msg}");
    assert!(msg.contains("type") && msg.contains("line 1"), "{msg}");

    let err = Workflow::from_json_str("{\"connections\": {}}").expect_err("no nodes");
    assert!(err.to_string().contains("nodes"), "{err}");

    let err = Workflow::from_value(serde_json::json!([1, 2])).expect_err("not an object");
    assert!(err.to_string().contains("an array"), "{err}");
}
