//! The example graphs of graphs/examples check clean and run with the documented results.

use agentgraph_dsl::diagnostic::codes::MISSING_PROMPT_FILE;
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::*;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn example(name: &str) -> CompiledGraph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../graphs/examples")
        .join(name);
    let project = Project::load(&path).unwrap();
    let reg = Registry::default();
    let diags = project.check(&reg);
    for d in &diags {
        eprintln!("{}", project.render(d, false, 100));
    }
    assert!(diags.is_empty(), "{name} has diagnostics");
    project
        .compile(&reg)
        .unwrap_or_else(|_| panic!("{name} does not compile"))
}

#[tokio::test]
async fn counter_loops_to_the_limit() {
    let g = example("counter.ag");
    let out = g
        .invoke(Input::values(json!({"limit": 5})), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.values,
        json!({"count": 5, "trace": ["bump", "bump", "bump", "bump", "bump"], "limit": 5})
    );
}

#[tokio::test]
async fn map_reduce_sends_one_task_per_item() {
    let g = example("map_reduce.ag");
    let out = g
        .invoke(
            Input::values(json!({"items": [1, 2, 3, 4]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.values["squares"], json!([1, 4, 9, 16]));
    assert_eq!(out.values["total"], json!(30));
    assert_eq!(out.stats.steps, 3);
}

#[tokio::test]
async fn parallel_branches_join_once() {
    let g = example("parallel_join.ag");
    let out = g
        .invoke(
            Input::values(json!({"topic": "sled"})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    // Writes of one step apply in node-name order: fetch before search.
    assert_eq!(
        out.values["summary"],
        json!("fetched sled; searched sled; extracted sled")
    );
}

#[tokio::test]
async fn approval_stops_and_resumes() {
    let g = example("approval.ag").with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let out = g
        .invoke(
            Input::values(json!({"draft": "Hello"})),
            RunConfig::thread("a"),
        )
        .await
        .unwrap();
    let RunStatus::Interrupted { interrupts, .. } = out.status else {
        panic!("no interrupt")
    };
    assert_eq!(
        interrupts[0].value,
        json!({"question": "Publish this draft?", "draft": "Hello"})
    );
    let out = g
        .invoke(Input::resume(json!("yes")), RunConfig::thread("a"))
        .await
        .unwrap();
    assert_eq!(
        out.values,
        json!({"draft": "Hello", "decision": "yes", "published": true})
    );
}

#[tokio::test]
async fn subgraph_runs_in_its_namespace() {
    let g = example("research.ag");
    let (events, out) = g
        .stream(
            Input::values(json!({"question": "why sled?"})),
            RunConfig::default().modes(Modes::of(&[Mode::Updates])),
        )
        .collect()
        .await;
    let out = out.unwrap();
    assert_eq!(
        out.values["answer"],
        json!("A 9-character question: WHY SLED?")
    );
    assert_eq!(out.values["log"], json!(["planned: why sled?", "answered"]));
    assert!(events
        .iter()
        .any(|e| e.ns.first().is_some_and(|ns| ns.starts_with("research:"))));
}

/// A project rebuilt from its snapshot (`Project::files`) compiles and runs after every file is
/// gone from disk, and it is the snapshot's text that counts, not what is on disk now.
#[tokio::test]
async fn a_snapshot_compiles_without_the_files() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples");
    let dir = tempfile::tempdir().unwrap();
    for f in ["research.ag", "summarize.ag"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("extra.ag"),
        "use \"research.ag\" as r\ngraph extra {\n  state { x: int = 0 }\n  prompt p = file(\"p.md\")\n  node a { set { x: 1 } }\n  START -> a\n  a -> END\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("p.md"), "the prompt").unwrap();
    let root = dir.path().join("research.ag");
    let project = Project::load(&root).unwrap();
    let files = project.files();
    assert_eq!(files.len(), 2, "research.ag and summarize.ag: {files:?}");
    let extra = Project::load(dir.path().join("extra.ag")).unwrap().files();
    assert_eq!(extra.len(), 4, "extra, research, summarize and the prompt");
    assert!(extra.values().any(|t| t == "the prompt"));
    let root_key = project.root.clone();
    let extra_key = std::fs::canonicalize(dir.path().join("extra.ag")).unwrap();
    drop(dir);
    assert!(!root_key.exists());

    let reg = Registry::default();
    let again = Project::from_files(&root_key, &files).unwrap();
    assert!(again.check(&reg).is_empty());
    let g = again
        .compile(&reg)
        .unwrap_or_else(|_| panic!("does not compile"));
    let out = g
        .invoke(
            Input::values(json!({"question": "why sled?"})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.values["answer"],
        json!("A 9-character question: WHY SLED?")
    );
    // The prompt file comes from the snapshot too.
    let extra_again = Project::from_files(&extra_key, &extra).unwrap();
    assert!(extra_again.check(&reg).is_empty());
    assert_eq!(extra_again.files(), extra);
    // Without the prompt file in the snapshot, the check says so.
    let mut missing = extra.clone();
    missing.retain(|_, t| t != "the prompt");
    let diags = Project::from_files(&extra_key, &missing)
        .unwrap()
        .check(&reg);
    assert!(diags.iter().any(|d| d.is(MISSING_PROMPT_FILE)), "{diags:?}");
    // A root that is not in the snapshot is a load error.
    assert!(Project::from_files(&PathBuf::from("/nowhere.ag"), &files).is_err());
}

#[tokio::test]
async fn code_map_reduce_counts_words_in_javascript() {
    let g = example("code_map_reduce.ag");
    let out = g
        .invoke(
            Input::values(json!({"docs": ["The cat sat.", "The cat ran, the dog sat."]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    // 3 + 6 words; "the" 3 times, then "cat" and "sat" twice (ties in alphabetical order).
    assert_eq!(out.values["words"], json!(9));
    assert_eq!(
        out.values["top"],
        json!([{"word": "the", "n": 3}, {"word": "cat", "n": 2}, {"word": "sat", "n": 2}])
    );
    assert_eq!(
        out.values["counts"],
        json!([{"the": 1, "cat": 1, "sat": 1}, {"the": 2, "cat": 1, "ran": 1, "dog": 1, "sat": 1}])
    );
}

/// `config { keep_checkpoints: N }`: a 100-step loop keeps fewer than 2 N checkpoints, a run
/// setting overrides it, and a value that is not a positive integer is a diagnostic naming
/// the key.
#[tokio::test]
async fn config_keep_checkpoints_bounds_the_history() {
    let src = |keep: &str| {
        format!(
            "graph retained {{\n  state {{\n    n: int = 0\n  }}\n  config {{ keep_checkpoints: {keep} }}\n\n  node bump {{\n    set {{ n: n + 1 }}\n  }}\n\n  START -> bump\n  bump -> route {{\n    n < 100 => bump\n    else    => END\n  }}\n}}\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::default();
    let project = Project::from_source(&dir.path().join("retained.ag"), src("20"));
    assert!(project.check(&reg).is_empty());
    let g = project
        .compile(&reg)
        .unwrap()
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
    let out = g
        .invoke(Input::values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(out.values["n"], json!(100));
    let kept = g.history("t", ListQuery::default()).await.unwrap().len();
    assert!((20..40).contains(&kept), "{kept} checkpoints kept");
    // The run's own setting wins.
    g.invoke(
        Input::values(json!({})),
        RunConfig::thread("u").keep_checkpoints(1000),
    )
    .await
    .unwrap();
    assert_eq!(
        g.history("u", ListQuery::default()).await.unwrap().len(),
        102
    );

    let bad = Project::from_source(&dir.path().join("bad.ag"), src("0"));
    let diags = bad.check(&reg);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(
        diags[0]
            .message
            .contains("keep_checkpoints must be a positive integer"),
        "{}",
        diags[0].message
    );
}
