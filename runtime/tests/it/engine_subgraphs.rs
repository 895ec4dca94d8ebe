//! Subgraphs: namespaces, written-keys-only returns, interrupts inside, commands to the parent.

use crate::common;
use agentgraph_runtime::*;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn child(c1_runs: Arc<AtomicUsize>) -> CompiledGraph {
    log_graph("child")
        .channel(ChannelSpec::new("bar", ValueType::String).default_value(json!("")))
        .node("c1", counted("c1", c1_runs))
        .node(
            "c2",
            node_fn(|_| async {
                Ok(Update::new()
                    .set("log", json!(["c2"]))
                    .set("bar", json!("private")))
            }),
        )
        .chain(&[START, "c1", "c2"])
        .compile()
        .unwrap()
}

fn parent(child: CompiledGraph) -> GraphBuilder {
    log_graph("parent")
        .channel(int("untouched"))
        .node("p1", logger("p1"))
        .subgraph("sub", Subgraph::new(child))
        .node("p2", logger("p2"))
        .chain(&[START, "p1", "sub", "p2"])
}

#[tokio::test]
async fn subgraph_returns_only_written_keys() {
    let g = parent(child(Arc::new(AtomicUsize::new(0))))
        .compile()
        .unwrap();
    let out = g
        .invoke(values(json!({"untouched": 7})), RunConfig::default())
        .await
        .unwrap();
    // No duplicated appends (LangGraph gives p1, p1, c1, c2), child-private keys stay inside.
    assert_eq!(log_of(&out), ["p1", "c1", "c2", "p2"]);
    assert_eq!(out.values["untouched"], json!(7));
    assert!(out.values.get("bar").is_none());
}

#[tokio::test]
async fn subgraph_namespace_in_events_and_checkpoints() {
    let cp = memory();
    let g = parent(child(Arc::new(AtomicUsize::new(0))))
        .compile()
        .unwrap()
        .with_checkpointer(cp.clone());
    let (events, out) = g
        .stream(
            values(json!({})),
            RunConfig::thread("ns").modes(Modes::of(&[Mode::Updates])),
        )
        .collect()
        .await;
    out.unwrap();
    let child_events: Vec<&Event> = events.iter().filter(|e| !e.ns.is_empty()).collect();
    assert_eq!(child_events.len(), 2, "{events:?}");
    let ns = &child_events[0].ns;
    assert_eq!(ns.len(), 1);
    assert!(ns[0].starts_with("sub:"), "{ns:?}");
    assert_eq!(child_events[0].node.as_deref(), Some("c1"));
    // seq rises by one across root and child events.
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (seqs[0]..seqs[0] + seqs.len() as u64).collect::<Vec<_>>()
    );
    // The child's checkpoints live in the same thread under that namespace.
    let in_ns = |ns: &str| ListQuery {
        ns: Some(ns.to_string()),
        ..ListQuery::default()
    };
    let child_history = cp.list("ns", &in_ns(&ns[0])).await.unwrap();
    assert_eq!(child_history.len(), 4);
    assert!(child_history.iter().all(|t| t.ns == ns[0]));
    let root = cp.list("ns", &in_ns("")).await.unwrap();
    assert_eq!(root.len(), 5);
}

#[tokio::test]
async fn interrupt_inside_a_subgraph_surfaces_at_the_root_and_resumes_into_it() {
    let c1_runs = Arc::new(AtomicUsize::new(0));
    let inner = log_graph("approval")
        .node("c1", counted("c1", c1_runs.clone()))
        .node(
            "ask",
            node_fn(|ctx| async move {
                let ok = ctx.interrupt(json!("approve?"))?;
                Ok(Update::new().set("log", json!([format!("approved={ok}")])))
            }),
        )
        .chain(&[START, "c1", "ask"])
        .compile()
        .unwrap();
    let g = parent(inner).compile().unwrap().with_checkpointer(memory());
    let out = run_on(&g, "i").await;
    let RunStatus::Interrupted { interrupts, next } = out.status else {
        panic!("not interrupted")
    };
    assert_eq!(next, ["sub"]);
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].node, "ask");
    assert!(interrupts[0].ns[0].starts_with("sub:"));
    assert_eq!(state_of(&g, "i").await.interrupts.len(), 1);
    let out = resume(&g, "i", json!(true)).await;
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(log_of(&out), ["p1", "c1", "approved=true", "p2"]);
    assert_eq!(
        c1_runs.load(Ordering::SeqCst),
        1,
        "finished child nodes are not re-run"
    );
}

#[tokio::test]
async fn command_to_parent_routes_the_parent_graph() {
    let inner = log_graph("escalate")
        .node(
            "decide",
            node_fn(|_| async {
                Ok(Update::new()
                    .set("log", json!(["escalated"]))
                    .goto("manager")
                    .to_parent())
            }),
        )
        .edge(START, "decide")
        .compile()
        .unwrap();
    let g = log_graph("org")
        .subgraph("team", Subgraph::new(inner))
        .node("manager", logger("manager"))
        .edge(START, "team")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(log_of(&out), ["escalated", "manager"]);
}

#[tokio::test]
async fn explicit_mapping_in_and_out() {
    let inner = GraphBuilder::new("summarize")
        .channel(ChannelSpec::new("text", ValueType::String))
        .channel(ChannelSpec::new("result", ValueType::String))
        .node(
            "s",
            node_fn(|ctx| async move {
                Ok(Update::new().set("result", json!(ctx.state().str("text").to_uppercase())))
            }),
        )
        .edge(START, "s")
        .compile()
        .unwrap();
    let sub = Subgraph::new(inner)
        .map_in(|ctx| Ok(json!({"text": ctx.state().str("request")})))
        .map_out(|child| Ok(vec![("summary".to_string(), child["result"].clone())]));
    let g = GraphBuilder::new("outer")
        .channel(ChannelSpec::new("request", ValueType::String))
        .channel(ChannelSpec::new("summary", ValueType::String))
        .subgraph("sum", sub)
        .edge(START, "sum")
        .compile()
        .unwrap();
    let out = g
        .invoke(values(json!({"request": "hi"})), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.values["summary"], json!("HI"));
}

#[tokio::test]
async fn a_panic_inside_a_subgraph_fails_its_node_with_the_panic() {
    let inner = log_graph("inner")
        .node("boom", node_fn(|_| async { panic!("kaboom") }))
        .edge(START, "boom")
        .compile()
        .unwrap();
    let g = log_graph("outer")
        .subgraph("sub", Subgraph::new(inner))
        .edge(START, "sub")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    match &err {
        RunError::NodeFailed { node, message, .. } => {
            assert_eq!(node, "sub");
            assert!(message.contains("`boom` panicked"), "{message}");
            assert!(message.contains("kaboom"), "{message}");
        }
        other => panic!("expected the subgraph node to fail, got {other:?}"),
    }
}

#[tokio::test]
async fn a_subgraph_node_runs_outside_a_graph_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let sub = Subgraph::new(child(runs.clone()));
    let ctx = TaskContext::detached(StateView::from_object(json!({"log": ["x"]})), None);
    let update = sub.run(ctx).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Only the keys the child wrote, as its own writes.
    assert_eq!(
        update.writes,
        vec![
            ("log".to_string(), json!(["c1"])),
            ("log".to_string(), json!(["c2"]))
        ]
    );
}

/// A child that records two finished steps, then hangs in its third.
fn slow_child() -> CompiledGraph {
    GraphBuilder::new("slow")
        .channel(list("done"))
        .node(
            "first",
            node_fn(|_| async { Ok(Update::new().set("done", json!(["first"]))) }),
        )
        .node(
            "second",
            node_fn(|_| async { Ok(Update::new().set("done", json!(["second"]))) }),
        )
        .node(
            "hang",
            node_fn(|_| async {
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                Ok(Update::new().set("done", json!(["never"])))
            }),
        )
        .chain(&[START, "first", "second", "hang"])
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_timed_out_subgraph_whose_failure_is_caught_hands_back_its_finished_steps() {
    let options = NodeOptions {
        timeout: Some(std::time::Duration::from_millis(300)),
        catch: Some("error".into()),
        ..Default::default()
    };
    let sub = Subgraph::new(slow_child())
        .map_out(|child| Ok(vec![("kept".to_string(), child["done"].clone())]));
    let cp = memory();
    let g = GraphBuilder::new("parent")
        .channel(ChannelSpec::new("kept", ValueType::Json))
        .channel(ChannelSpec::new("error", ValueType::Json))
        .subgraph_with("phase", sub, options)
        .chain(&[START, "phase"])
        .compile()
        .unwrap()
        .with_checkpointer(cp.clone());
    let out = g
        .invoke(values(json!({})), RunConfig::thread("slow"))
        .await
        .unwrap();
    // The cancelled step's work is lost; the two finished steps are kept, with the error.
    assert_eq!(out.values["kept"], json!(["first", "second"]));
    assert_eq!(out.values["error"]["code"], "TIMEOUT");
    assert_eq!(out.values["error"]["node"], "phase");
    let state = g.get_state("slow", None).await.unwrap().unwrap();
    assert_eq!(state.values["kept"], json!(["first", "second"]));
}

#[tokio::test]
async fn a_resumed_subgraph_that_fails_before_a_step_ends_hands_back_its_earlier_steps() {
    let reached = Arc::new(tokio::sync::Notify::new());
    let hang = {
        let reached = reached.clone();
        node_fn(move |_| {
            let reached = reached.clone();
            async move {
                reached.notify_one();
                std::future::pending::<()>().await;
                Ok(Update::new())
            }
        })
    };
    let child = GraphBuilder::new("slow")
        .channel(list("done"))
        .node(
            "first",
            node_fn(|_| async { Ok(Update::new().set("done", json!(["first"]))) }),
        )
        .node(
            "second",
            node_fn(|_| async { Ok(Update::new().set("done", json!(["second"]))) }),
        )
        .node("hang", hang)
        .chain(&[START, "first", "second", "hang"])
        .compile()
        .unwrap();
    let options = NodeOptions {
        timeout: Some(std::time::Duration::from_millis(300)),
        catch: Some("error".into()),
        ..Default::default()
    };
    let sub =
        Subgraph::new(child).map_out(|child| Ok(vec![("kept".to_string(), child["done"].clone())]));
    let g = GraphBuilder::new("parent")
        .channel(ChannelSpec::new("kept", ValueType::Json))
        .channel(ChannelSpec::new("error", ValueType::Json))
        .subgraph_with("phase", sub, options)
        .chain(&[START, "phase"])
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    // The process "dies" once the child's two steps are saved and its third runs.
    tokio::select! {
        r = g.invoke(values(json!({})), RunConfig::thread("resumed")) => panic!("ended: {r:?}"),
        _ = reached.notified() => {}
    }
    // Resumed, the child times out before any step of this run ends: what it did before the
    // crash is still handed back with the error.
    let out = g
        .invoke(Input::Continue, RunConfig::thread("resumed"))
        .await
        .unwrap();
    assert_eq!(out.values["kept"], json!(["first", "second"]));
    assert_eq!(out.values["error"]["code"], "TIMEOUT");
}

#[tokio::test]
async fn a_failing_subgraph_without_catch_hands_back_nothing() {
    let options = NodeOptions {
        timeout: Some(std::time::Duration::from_millis(300)),
        ..Default::default()
    };
    let sub = Subgraph::new(slow_child())
        .map_out(|child| Ok(vec![("kept".to_string(), child["done"].clone())]));
    let g = GraphBuilder::new("parent")
        .channel(ChannelSpec::new("kept", ValueType::Json))
        .subgraph_with("phase", sub, options)
        .chain(&[START, "phase"])
        .compile()
        .unwrap();
    let e = g
        .invoke(values(json!({})), RunConfig::default())
        .await
        .expect_err("the timeout fails the run");
    assert!(e.to_string().contains("timeout"), "{e}");
}
