//! What the builder tests share: the scenarios of `tests/scenarios/` (a prompt, the expected
//! node types and typed connections, one script per architecture), the real n8n catalogue
//! (`AGENTGRAPH_N8N_CATALOGUE`; without it tests skip through `agentgraph-test-support`), the checks a final
//! workflow must pass, and running one turn of a builder graph through the CLI.

#![allow(dead_code)] // each test file uses its own part of this module

use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::validate;
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

/// Environment variables that choose or configure a model provider; a CLI run clears them all
/// and sets only its own, so nothing from the outer environment leaks in.
pub const PROVIDER_VARS: [&str; 12] = [
    "AGENTGRAPH_PROVIDER",
    "AGENTGRAPH_SCRIPT_DIR",
    "AGENTGRAPH_SCRIPT_STATE",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "AGENTGRAPH_N8N_CATALOGUE",
    "OPENAI_NAMED_TOOL_CHOICE",
    "AGENTGRAPH_PARALLEL_TOOL_CALLS",
];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real n8n catalogue's folder (`$AGENTGRAPH_N8N_CATALOGUE`); `None` records a skip of the
/// current test.
pub fn catalogue_dir() -> Option<PathBuf> {
    agentgraph_test_support::n8n_catalogue()
}

/// The real n8n catalogue, loaded once; `None` records a skip of the current test.
pub fn catalogue() -> Option<Arc<Catalogue>> {
    let dir = catalogue_dir()?;
    static C: OnceLock<Arc<Catalogue>> = OnceLock::new();
    Some(
        C.get_or_init(|| Arc::new(Catalogue::load_n8n_dir(dir).expect("the catalogue loads")))
            .clone(),
    )
}

/// Graph compilation reads `AGENTGRAPH_SCRIPT_DIR`: tests that set it take turns.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Compiles a builder graph with the scripts in `scripts`, through the Rust API, over
/// `catalogue`, on an in-memory checkpointer.
pub fn compile_with(
    arch: &str,
    scripts: &Path,
    catalogue: Arc<Catalogue>,
) -> agentgraph_runtime::CompiledGraph {
    let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("AGENTGRAPH_PROVIDER", "scripted");
    std::env::set_var("AGENTGRAPH_SCRIPT_DIR", scripts);
    std::env::remove_var("AGENTGRAPH_SCRIPT_STATE");
    let mut reg = agentgraph_dsl::Registry::default();
    agentgraph_std_tools::dsl::register(&mut reg, catalogue);
    let project = agentgraph_dsl::Project::load(graph(arch)).expect("the graph loads");
    let g = project
        .compile(&reg)
        .unwrap_or_else(|d| panic!("{arch}: {d:?}"));
    std::env::remove_var("AGENTGRAPH_SCRIPT_DIR");
    g.with_checkpointer(Arc::new(agentgraph_runtime::MemoryCheckpointer::new()))
}

pub fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/scenarios"))
        .expect("tests/scenarios exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expect.json").exists())
        .collect();
    dirs.sort();
    dirs
}

/// The folder of one scenario, by its slug.
pub fn scenario(slug: &str) -> PathBuf {
    root().join("tests/scenarios").join(slug)
}

pub fn graph(arch: &str) -> PathBuf {
    root().join(format!("graphs/workflow-builder/{arch}-agent.ag"))
}

pub fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Checks a final workflow against a scenario's expectations; returns the problems.
pub fn check(scenario: &Path, arch: &str, workflow: &Value) -> Vec<String> {
    let expect = read_json(&scenario.join("expect.json"));
    let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
    let mut problems = Vec::new();
    let wf = match Workflow::from_value_ref(workflow) {
        Ok(w) => w,
        Err(e) => return vec![format!("{name}/{arch}: not a workflow: {e}")],
    };
    if let Some(n) = expect.get("name").and_then(Value::as_str) {
        if wf.name.as_deref() != Some(n) {
            problems.push(format!("{name}/{arch}: name {:?}, expected {n:?}", wf.name));
        }
    }
    let mut types: Vec<String> = wf.nodes.iter().map(|n| n.node_type.clone()).collect();
    types.sort();
    let mut want: Vec<String> = serde_json::from_value(expect["nodes"].clone()).unwrap();
    want.sort();
    if types != want {
        problems.push(format!(
            "{name}/{arch}: node types {types:?}, expected {want:?}"
        ));
    }
    let type_of: BTreeMap<&str, &str> = wf
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.node_type.as_str()))
        .collect();
    let mut edges: Vec<[String; 3]> = wf
        .edges()
        .iter()
        .map(|e| {
            [
                type_of.get(e.source.as_str()).unwrap_or(&"?").to_string(),
                e.kind.clone(),
                type_of
                    .get(e.target.node.as_str())
                    .unwrap_or(&"?")
                    .to_string(),
            ]
        })
        .collect();
    edges.sort();
    let mut want_edges: Vec<[String; 3]> =
        serde_json::from_value(expect["connections"].clone()).unwrap();
    want_edges.sort();
    if edges != want_edges {
        problems.push(format!(
            "{name}/{arch}: connections {edges:?}, expected {want_edges:?}"
        ));
    }
    if let Some(c) = catalogue() {
        let report = validate(&wf, &c);
        if !report.findings.is_empty() {
            problems.push(format!(
                "{name}/{arch}: validation findings:\n{}",
                report.render_text("  ")
            ));
        }
    }
    problems
}

pub fn prompt(scenario: &Path) -> String {
    read_json(&scenario.join("expect.json"))["prompt"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn human(text: &str) -> Value {
    json!({"messages": [{"type": "human", "content": text}]})
}

/// Runs one turn of the `arch` builder through the CLI with the real catalogue and only the
/// provider settings in `env` (every variable of [`PROVIDER_VARS`] is cleared first).
pub fn cli_turn_output(
    db: &Path,
    arch: &str,
    thread: &str,
    text: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> Output {
    let cat = catalogue_dir().expect("the n8n catalogue is present");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.arg("--db").arg(db).arg("run").arg(graph(arch)).args([
        "--thread",
        thread,
        "--json",
        "--stream",
        "custom",
        "--input",
        &human(text).to_string(),
    ]);
    for v in PROVIDER_VARS {
        cmd.env_remove(v);
    }
    cmd.env("AGENTGRAPH_N8N_CATALOGUE", cat);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the agentgraph binary runs")
}

/// The tool calls that failed in a run, from the `custom` events a `run --json --stream custom`
/// printed (every namespace): `tool: title` each.
pub fn tool_errors(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["mode"] == "custom" && e["data"]["status"] == "error")
        .map(|e| format!("{}: {}", e["data"]["tool"], e["data"]["title"]))
        .collect()
}

/// The tool calls that failed in a run, from its stream events (every namespace).
pub fn tool_errors_in(events: &[agentgraph_runtime::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            agentgraph_runtime::EventKind::Custom(d) if d["status"] == "error" => {
                Some(format!("{}: {}", d["tool"], d["title"]))
            }
            _ => None,
        })
        .collect()
}

/// The final state a successful `run --json` printed (its last non-empty line); `what` names
/// the run in the failure message.
pub fn final_state(o: &Output, what: &str) -> Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{what}: exit {:?}\n{}\n{}",
        o.status.code(),
        stdout,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(
        stdout
            .lines()
            .rev()
            .find(|l| !l.is_empty())
            .unwrap_or("null"),
    )
    .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
