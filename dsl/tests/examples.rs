//! The example graphs of graphs/examples check clean and run with the documented results.

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
