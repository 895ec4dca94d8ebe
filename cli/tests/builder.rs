//! The workflow builder end to end with the scripted model, through the CLI and through the
//! Rust API, on the real n8n catalogue (`../shared/data/n8n`; the tests skip with a printed
//! reason without it).
//!
//! Each folder of `tests/scenarios/` holds one prompt: `expect.json` (the prompt, the node
//! types and the typed connections the final workflow must have) and one script per
//! architecture (`single.json`, `multi.json`). The final workflow must also pass every check
//! of validate_structure and validate_configuration (no finding at all). The scenario helpers
//! live in `scenario/mod.rs`, shared with `builder_wire.rs` (the same scenarios over the real
//! provider wire formats).

mod scenario;

use agentgraph_runtime::{Input, RunConfig};
use scenario::{catalogue, catalogue_dir, check, graph, human, prompt, root, scenarios};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Runs one turn through the CLI with the scripted model; returns the final state.
fn cli_turn(db: &Path, arch: &str, scripts: &Path, thread: &str, text: &str) -> Value {
    let o = scenario::cli_turn_output(
        db,
        arch,
        thread,
        text,
        &[
            ("AGENTGRAPH_PROVIDER", "scripted".as_ref()),
            ("AGENTGRAPH_SCRIPT_DIR", scripts.as_os_str()),
        ],
    );
    scenario::final_state(&o, &format!("{arch} on {}", scripts.display()))
}

#[test]
fn every_scenario_through_the_cli_on_both_architectures() {
    if catalogue_dir().is_none() {
        eprintln!("skipped: ../shared/data/n8n (the real n8n catalogue) is absent");
        return;
    }
    let mut problems = Vec::new();
    let mut ran = 0;
    for s in scenarios() {
        for arch in ["single", "multi"] {
            if !s.join(format!("{arch}.json")).exists() {
                problems.push(format!("{}: no {arch}.json", s.display()));
                continue;
            }
            let db = tempfile::tempdir().unwrap();
            let out = cli_turn(db.path(), arch, &s, "t", &prompt(&s));
            problems.extend(check(&s, arch, &out["workflow"]));
            ran += 1;
        }
    }
    assert!(ran >= 2, "no scenario ran");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Graph compilation reads `AGENTGRAPH_SCRIPT_DIR`: tests that set it take turns.
static ENV: Mutex<()> = Mutex::new(());

/// Compiles a builder graph with the scripts of `scenario`, through the Rust API.
fn compile(arch: &str, scripts: &Path) -> agentgraph_runtime::CompiledGraph {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("AGENTGRAPH_PROVIDER", "scripted");
    std::env::set_var("AGENTGRAPH_SCRIPT_DIR", scripts);
    std::env::remove_var("AGENTGRAPH_SCRIPT_STATE");
    let mut reg = agentgraph_dsl::Registry::default();
    agentgraph_std_tools::dsl::register(&mut reg, catalogue().unwrap());
    let project = agentgraph_dsl::Project::load(graph(arch)).expect("the graph loads");
    let g = project
        .compile(&reg)
        .unwrap_or_else(|d| panic!("{arch}: {d:?}"));
    std::env::remove_var("AGENTGRAPH_SCRIPT_DIR");
    g.with_checkpointer(Arc::new(agentgraph_runtime::MemoryCheckpointer::new()))
}

#[tokio::test]
async fn every_scenario_through_the_rust_api_on_both_architectures() {
    if catalogue().is_none() {
        eprintln!("skipped: ../shared/data/n8n (the real n8n catalogue) is absent");
        return;
    }
    let mut problems = Vec::new();
    for s in scenarios() {
        for arch in ["single", "multi"] {
            if !s.join(format!("{arch}.json")).exists() {
                continue;
            }
            let g = compile(arch, &s);
            let thread = format!("api-{}-{arch}", s.file_name().unwrap().to_string_lossy());
            let out = g
                .invoke(Input::values(human(&prompt(&s))), RunConfig::thread(thread))
                .await
                .unwrap_or_else(|e| panic!("{}/{arch}: {e}", s.display()));
            problems.extend(check(&s, arch, &out.values["workflow"]));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn a_failing_phase_is_explained_by_the_responder() {
    if catalogue().is_none() {
        eprintln!("skipped: ../shared/data/n8n (the real n8n catalogue) is absent");
        return;
    }
    // The builder's model call fails (its script answer is meant for another node): the error
    // boundary catches it, the coordination log records it, and the responder answers.
    let fixture = root().join("cli/tests/fixtures/phase-error");
    let g = compile("multi", &fixture);
    let out = g
        .invoke(
            Input::values(human("Every Monday, summarize my unread Gmail")),
            RunConfig::thread("phase-error"),
        )
        .await
        .expect("the run ends normally despite the failed phase");
    let state = g.get_state("phase-error", None).await.unwrap().unwrap();
    let log = state.values["coordination_log"].clone();
    let entries = log.as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["phase"] == "builder" && e["status"] == "error"),
        "{log}"
    );
    assert_eq!(state.values["error"]["node"], "builder");
    let messages = out.values["messages"].as_array().unwrap();
    let answer = messages.last().unwrap();
    assert_eq!(answer["type"], "ai");
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("builder step failed"));
    // Nothing half-built leaked into the workflow.
    assert_eq!(out.values["workflow"]["nodes"], json!([]));
}

#[tokio::test]
async fn both_architectures_share_one_state_schema() {
    if catalogue().is_none() {
        eprintln!("skipped: ../shared/data/n8n (the real n8n catalogue) is absent");
        return;
    }
    let dir = root().join("tests/scenarios/weekly-email-summary");
    let single = compile("single", &dir);
    let multi = compile("multi", &dir);
    assert_eq!(single.schema().version(), multi.schema().version());
    // One thread: a turn with the single agent, then one with the multi-agent graph, which
    // sees the first turn's messages and workflow.
    let store = Arc::new(agentgraph_runtime::MemoryCheckpointer::new());
    let single = single.with_checkpointer(store.clone());
    let multi = multi.with_checkpointer(store);
    single
        .invoke(
            Input::values(human(&prompt(&dir))),
            RunConfig::thread("swap"),
        )
        .await
        .unwrap();
    let before = single
        .get_state("swap", None)
        .await
        .unwrap()
        .unwrap()
        .values;
    assert_eq!(before["workflow"]["nodes"].as_array().unwrap().len(), 6);
    let state = multi.get_state("swap", None).await.unwrap().unwrap();
    assert_eq!(state.values["workflow"], before["workflow"]);
    assert_eq!(state.values["messages"], before["messages"]);
}
