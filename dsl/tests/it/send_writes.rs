//! W0305 says what the runtime does: the tasks of a `send` writing one replace channel fail the
//! run once two of them run, while reducers and `overwrite(…)` combine their writes.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{CompiledGraph, Input, RunConfig};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixture(path: &str) -> Project {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    Project::load(&path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

/// Compiles a project whose only findings are warnings.
fn compile(project: &Project, reg: &Registry) -> CompiledGraph {
    match project.compile(reg) {
        Ok(g) => g,
        Err(ds) => panic!("does not compile: {ds:?}"),
    }
}

#[tokio::test]
async fn the_warned_graph_fails_with_two_items_and_runs_with_one() {
    let project = fixture("err/send_writes_replace_channel.ag");
    let reg = Registry::default();
    let found: Vec<&str> = project.check(&reg).iter().map(|d| d.code).collect();
    assert_eq!(found, [codes::SEND_SHARED_WRITE.id]);
    let g = compile(&project, &reg);
    let err = g
        .invoke(
            Input::values(json!({"items": [2, 3]})),
            RunConfig::default(),
        )
        .await
        .expect_err("two tasks write `squares` in one step");
    assert!(
        err.to_string()
            .contains("channel `squares` got two values in step"),
        "{err}"
    );
    let out = g
        .invoke(Input::values(json!({"items": [3]})), RunConfig::default())
        .await
        .unwrap_or_else(|e| panic!("one task: {e}"));
    assert_eq!(out.values["total"], json!(9));
}

#[tokio::test]
async fn reducers_and_overwrite_combine_the_tasks_writes() {
    let project = fixture("ok/send_writes.ag");
    let g = compile(&project, &Registry::default());
    let out = g
        .invoke(
            Input::values(json!({"items": ["a", "bcd", "ef"]})),
            RunConfig::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("the run failed: {e}"));
    assert_eq!(out.values["longest"], json!(3));
    assert_eq!(out.values["count"], json!(3));
    assert_eq!(out.values["latest"], json!("ef"));
    assert_eq!(
        out.values["log"],
        json!(["visited a", "visited bcd", "visited ef"])
    );
    assert_eq!(out.values["summary"], json!("3 items, the last one ef"));
}

/// The writes a registered kind declares (`output:`, `summary:`) count, its other entries do not.
#[test]
fn an_llm_send_target_writing_its_output_to_a_replace_channel_is_warned() {
    let text = r#"graph grade {
  state {
    essays: list<string> = []
    messages: messages
    grade: json = {}
    grades: list<json> = [] reduce append
    notes: string? = null
  }
  model m = scripted { script: "none.json" }
  node judge: llm {
    model: m
    system: ["Grade this essay: {{ essay }}"]
    output_schema: { type: "object" }
    output: grade
    summary: notes
  }
  node keep { set { grades: [grade] } }
  START -> send judge for e in essays { essay: e }
  judge -> keep -> END
}
"#;
    let root = PathBuf::from("/virtual/grade.ag");
    let files = BTreeMap::from([(root.clone(), text.to_string())]);
    let project = Project::from_files(&root, &files).unwrap_or_else(|e| panic!("{e:?}"));
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, Default::default());
    let diags = project.check(&reg);
    let warned: Vec<String> = diags
        .iter()
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    assert_eq!(
        warned,
        [
            "W0305 the parallel `judge` tasks of a `send` all write `grade`, which has no reducer",
            "W0305 the parallel `judge` tasks of a `send` all write `notes`, which has no reducer",
        ]
    );
    assert_eq!(
        diags[1].help.as_deref(),
        Some(
            "give `notes` a reducer that combines the tasks' writes: make it a `list<string>` \
             with `reduce append`, each task writing a one-item list; or write it from a node \
             after the fan-out"
        )
    );
}
