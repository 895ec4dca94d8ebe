//! `agentgraph validate`: located, coded findings, JSON output, exit codes, catalogue choice
//! and clear errors for broken files.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn ag(args: &[&str], env_catalogue: Option<&Path>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("AGENTGRAPH_N8N_CATALOGUE")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR);
    if let Some(dir) = env_catalogue {
        cmd.env("AGENTGRAPH_N8N_CATALOGUE", dir);
    }
    let o = cmd.output().expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({"id": name, "name": name, "type": ty, "typeVersion": version, "position": [0, 0], "parameters": params})
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).expect("json")).expect("write");
    p.display().to_string()
}

fn broken_workflow() -> Value {
    json!({
        "nodes": [
            node("Model", "@n8n/n8n-nodes-langchain.lmChatOpenAi", 1.2, json!({})),
            node("Fetch", "n8n-nodes-base.httpRequest", 4.2, json!({}))
        ],
        "connections": {}
    })
}

fn good_workflow() -> Value {
    json!({
        "nodes": [
            node("Start", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
            node("Fetch", "n8n-nodes-base.httpRequest", 4.2, json!({"url": "https://example.com"}))
        ],
        "connections": {"Start": {"main": [[{"node": "Fetch", "type": "main", "index": 0}]]}}
    })
}

#[test]
fn findings_are_located_and_coded_and_errors_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "wf.json", &broken_workflow());
    let o = ag(&["validate", &file], None);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.starts_with("catalogue: built-in"), "{}", o.stdout);
    assert!(
        o.stdout.contains(&format!("{file}: [NO_TRIGGER] error: ")),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains(&format!(
            "{file}: node \"Model\" [SUB_NODE_NOT_CONNECTED] error: "
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("node \"Fetch\" [MISSING_REQUIRED_PARAMETER] error: ")
            && o.stdout.contains("(at parameters.url)"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .trim_end()
            .ends_with("3 errors, 0 warnings, 0 infos"),
        "{}",
        o.stdout
    );
}

#[test]
fn a_valid_workflow_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "ok.json", &good_workflow());
    let o = ag(&["validate", &file], None);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout
            .trim_end()
            .ends_with(&format!("{file}: no problems found")),
        "{}",
        o.stdout
    );
}

#[test]
fn json_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "wf.json", &broken_workflow());
    let o = ag(&["validate", &file, "--json"], None);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("JSON output");
    assert_eq!(v["valid"], json!(false));
    assert_eq!(v["errors"], json!(3));
    assert_eq!(v["catalogue"]["source"], json!("builtin"));
    assert_eq!(v["counts"]["NO_TRIGGER"], json!(1));
    assert_eq!(v["file"], json!(file));
    let f = v["findings"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|f| f["code"] == json!("MISSING_REQUIRED_PARAMETER"))
        })
        .cloned()
        .expect("a finding");
    assert_eq!(f["node"], json!("Fetch"));
    assert_eq!(f["path"], json!("url"));
    assert_eq!(f["severity"], json!("error"));
    assert_eq!(f["rule_group"], json!("configuration"));
}

#[test]
fn bad_input_exits_2_with_a_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "{\n  \"nodes\": [\n    {,\n  ]\n}").expect("write");
    let o = ag(&["validate", &p.display().to_string()], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("invalid JSON at line 3, column"),
        "{}",
        o.stderr
    );
    let o = ag(
        &[
            "validate",
            &dir.path().join("missing.json").display().to_string(),
        ],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot read the file"), "{}", o.stderr);
    let shape = write(dir.path(), "shape.json", &json!({"nodes": 3}));
    let o = ag(&["validate", &shape], None);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not an n8n workflow"), "{}", o.stderr);
    let good = write(dir.path(), "ok.json", &good_workflow());
    let o = ag(
        &[
            "validate",
            &good,
            "--catalogue",
            &dir.path().display().to_string(),
        ],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("cannot load the n8n catalogue"),
        "{}",
        o.stderr
    );
}

#[test]
fn the_real_catalogue_from_the_flag_or_the_environment() {
    let Some(cat) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "ok.json", &good_workflow());
    let o = ag(
        &["validate", &file, "--catalogue", &cat.display().to_string()],
        None,
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.starts_with("catalogue: n8n node types from"),
        "{}",
        o.stdout
    );
    let o = ag(&["validate", &file, "--json"], Some(&cat));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("JSON output");
    assert_eq!(v["catalogue"]["source"], json!("n8n"));
    assert!(v["catalogue"]["types"].as_u64().unwrap_or(0) > 500);
}

#[test]
fn the_broken_corpus_files_give_a_clear_error_each() {
    let Some(corpus) = agentgraph_test_support::n8n_workflows() else {
        return;
    };
    let dir = corpus.join("_invalid-json");
    let mut files = Vec::new();
    for sub in std::fs::read_dir(&dir).expect("dir").flatten() {
        for f in std::fs::read_dir(sub.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "json") {
                files.push(f.path());
            }
        }
    }
    assert_eq!(files.len(), 7);
    for f in files {
        let o = ag(&["validate", &f.display().to_string()], None);
        assert_eq!(o.code, 2, "{}", f.display());
        assert!(o.stderr.starts_with("error: "), "{}", o.stderr);
        assert!(
            o.stderr.contains(" at line "),
            "{}: {}",
            f.display(),
            o.stderr
        );
        assert!(o.stderr.contains(", column "), "{}", o.stderr);
    }
}
