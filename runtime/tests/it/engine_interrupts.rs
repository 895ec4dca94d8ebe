//! Human in the loop: static and dynamic interrupts, resume by value and by id.

use crate::common;
use agentgraph_runtime::*;
use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::test]
async fn static_interrupt_then_resume() {
    let b_runs = Arc::new(AtomicUsize::new(0));
    let g = log_graph("static")
        .node("a", logger("a"))
        .node("b", counted("b", b_runs.clone()))
        .node("c", logger("c"))
        .chain(&[START, "a", "b", "c"])
        .interrupt_before("b")
        .interrupt_after("b")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let out = run_on(&g, "s").await;
    assert_eq!(out.status, paused_before(&["b"]));
    assert_eq!(b_runs.load(Ordering::SeqCst), 0);
    let s = state_of(&g, "s").await;
    assert_eq!(s.next, ["b"]);
    assert!(s.interrupts.is_empty());
    let out = continue_on(&g, "s").await;
    assert_eq!(out.status, paused_before(&["c"]));
    assert_eq!(log_of(&out), ["a", "b"]);
    let out = continue_on(&g, "s").await;
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(log_of(&out), ["a", "b", "c"]);
    assert_eq!(b_runs.load(Ordering::SeqCst), 1);
    // A resume value on a static interrupt is refused: there is nothing to answer.
    let g2 = g.clone();
    run_on(&g2, "s2").await;
    let err = resume_err(&g2, "s2", json!("x")).await;
    assert!(err.to_string().contains("no pending interrupt"), "{err}");
}

#[tokio::test]
async fn dynamic_interrupt_reruns_the_node_and_returns_the_resume_value() {
    let before = Arc::new(AtomicUsize::new(0));
    let g = GraphBuilder::new("ask")
        .channel(ChannelSpec::new("answer", ValueType::String).default_value(json!("")))
        .node(
            "ask",
            counting(before.clone(), |ctx, _| async move {
                let v = ctx.interrupt(json!({"question": "delete 3 nodes?"}))?;
                Ok(Update::new().set("answer", v))
            }),
        )
        .edge(START, "ask")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let out = run_on(&g, "d").await;
    let RunStatus::Interrupted { interrupts, next } = &out.status else {
        panic!("not interrupted")
    };
    assert_eq!(next, &["ask"]);
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].value, json!({"question": "delete 3 nodes?"}));
    assert_eq!(interrupts[0].id.len(), 32);
    assert_eq!(
        state_of(&g, "d").await.interrupts,
        interrupts.clone(),
        "state shows exactly the pending interrupt"
    );
    // No checkpoint is written for the interrupted step.
    assert_eq!(history_len(&g, "d").await, 2);
    let out = resume(&g, "d", json!("yes")).await;
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(out.values["answer"], json!("yes"));
    assert_eq!(
        before.load(Ordering::SeqCst),
        2,
        "the node re-ran from its start"
    );
}

#[tokio::test]
async fn two_interrupts_in_one_step_resumed_by_id() {
    let ask = |name: &'static str| {
        node_fn(move |ctx| async move {
            let v = ctx.interrupt(json!(format!("ok for {name}?")))?;
            Ok(Update::new().set(
                "log",
                json!([format!("{name}={}", v.as_str().unwrap_or("?"))]),
            ))
        })
    };
    let g = log_graph("two")
        .node("p", ask("p"))
        .node("q", ask("q"))
        .edge(START, "p")
        .edge(START, "q")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let interrupts = interrupts_of(run_on(&g, "t").await.status);
    assert_eq!(interrupts.len(), 2);
    let (p, q) = (interrupts[0].clone(), interrupts[1].clone());
    assert_eq!((p.node.as_str(), q.node.as_str()), ("p", "q"));
    // A bare value is ambiguous.
    let err = resume_err(&g, "t", json!("yes")).await;
    assert!(
        err.to_string().contains("2 interrupts are pending"),
        "{err}"
    );
    // An unknown id is refused.
    let bad = BTreeMap::from([("nope".to_string(), json!(1))]);
    assert!(g
        .invoke(Input::Resume(Resume::ById(bad)), RunConfig::thread("t"))
        .await
        .is_err());
    // Answer q only: p stays pending.
    let only_q = BTreeMap::from([(q.id.clone(), json!("B"))]);
    let out = invoke_on(&g, "t", Input::Resume(Resume::ById(only_q))).await;
    let interrupts = interrupts_of(out.status);
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].id, p.id);
    // Then p, in the other order: both answers are applied.
    let only_p = BTreeMap::from([(p.id.clone(), json!("A"))]);
    let out = invoke_on(&g, "t", Input::Resume(Resume::ById(only_p))).await;
    assert_eq!(out.status, RunStatus::Done);
    assert_eq!(log_of(&out), ["p=A", "q=B"]);
}

#[tokio::test]
async fn finished_sibling_is_not_rerun_when_resuming_an_interrupt() {
    let runs = Arc::new(AtomicUsize::new(0));
    let g = log_graph("sib")
        .node("work", counted("work", runs.clone()))
        .node(
            "ask",
            node_fn(|ctx| async move {
                ctx.interrupt(json!("?"))?;
                Ok(Update::new().set("log", json!(["ask"])))
            }),
        )
        .edge(START, "work")
        .edge(START, "ask")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    run_on(&g, "x").await;
    let out = resume(&g, "x", json!(true)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(log_of(&out), ["ask", "work"]);
}

#[tokio::test]
async fn several_interrupts_in_one_node_resume_in_call_order() {
    let g = log_graph("multi")
        .node(
            "form",
            node_fn(|ctx| async move {
                let name = ctx.interrupt(json!("name?"))?;
                let age = ctx.interrupt_keyed("age", json!("age?"))?;
                Ok(Update::new().set(
                    "log",
                    json!([format!("{}:{}", name.as_str().unwrap_or(""), age)]),
                ))
            }),
        )
        .edge(START, "form")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let interrupts = interrupts_of(run_on(&g, "m").await.status);
    assert_eq!(interrupts[0].value, json!("name?"));
    let interrupts = interrupts_of(resume(&g, "m", json!("ada")).await.status);
    assert_eq!(interrupts[0].value, json!("age?"));
    let out = resume(&g, "m", json!(36)).await;
    assert_eq!(log_of(&out), ["ada:36"]);
    // Intermediate resumes write no checkpoints: input, loop(0), loop(1).
    assert_eq!(history_len(&g, "m").await, 3);
}

#[tokio::test]
async fn without_a_checkpointer_an_interrupt_ends_the_run_and_resume_is_refused() {
    let g = log_graph("nocp")
        .node(
            "ask",
            node_fn(|ctx| async move {
                ctx.interrupt(json!("?"))?;
                Ok(Update::new())
            }),
        )
        .edge(START, "ask")
        .compile()
        .unwrap();
    let out = run_on(&g, "n").await;
    assert!(matches!(out.status, RunStatus::Interrupted { .. }));
    let err = resume_err(&g, "n", json!(1)).await;
    assert!(matches!(err, RunError::NoCheckpointer(_)), "{err}");
}
