//! Checkpoints: counts, history, update_state, fork, pending writes, durability, storage growth.

use crate::common;
use agentgraph_runtime::checkpoint::{ChannelEntry, MemoryStore};
use agentgraph_runtime::*;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn two_node_chain() -> GraphBuilder {
    logged_chain("chain2", &["a", "b"]).edge("b", END)
}

/// [`two_node_chain`], compiled, on a fresh memory checkpointer.
fn stored_two_node_chain() -> CompiledGraph {
    two_node_chain()
        .compile()
        .unwrap()
        .with_checkpointer(memory())
}

#[tokio::test]
async fn checkpoint_counts_of_a_two_node_chain_match_langgraph() {
    let g = stored_two_node_chain();
    run_on(&g, "t").await;
    let h = g.history("t", ListQuery::default()).await.unwrap();
    let shape: Vec<(Source, i64, Vec<String>)> = h
        .iter()
        .rev()
        .map(|e| (e.source, e.step, e.next.clone()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (Source::Input, -1, vec!["__start__".to_string()]),
            (Source::Loop, 0, vec!["a".to_string()]),
            (Source::Loop, 1, vec!["b".to_string()]),
            (Source::Loop, 2, vec![]),
        ]
    );
    // A second run on the thread continues the numbering: 8 checkpoints, steps 3..=6.
    run_on(&g, "t").await;
    let h = g.history("t", ListQuery::default()).await.unwrap();
    assert_eq!(h.len(), 8);
    assert_eq!(h[0].step, 6);
    assert_eq!(h[3].source, Source::Input);
    assert_eq!(h[3].step, 3);
    // Parent links form one chain, newest to oldest.
    for w in h.windows(2) {
        assert_eq!(w[0].parent_id, Some(w[1].checkpoint_id));
    }
    // durability=exit stores exactly one checkpoint for a run.
    let g = stored_two_node_chain();
    let out = g
        .invoke(
            values(json!({})),
            RunConfig::thread("e").durability(Durability::Exit),
        )
        .await
        .unwrap();
    assert_eq!(out.stats.checkpoints_written, 1);
    let h = g.history("e", ListQuery::default()).await.unwrap();
    assert_eq!(h.len(), 1);
    assert_eq!((h[0].source, h[0].step), (Source::Loop, 2));
    assert_eq!(state_of(&g, "e").await.values["log"], json!(["a", "b"]));
    // async durability stores them all, like sync.
    let out = g
        .invoke(
            values(json!({})),
            RunConfig::thread("a").durability(Durability::Async),
        )
        .await
        .unwrap();
    assert_eq!(out.stats.checkpoints_written, 4);
}

#[tokio::test]
async fn pending_writes_survive_a_siblings_failure_and_resume_skips_the_succeeded_task() {
    let ok_runs = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let f2 = fail.clone();
    let g = log_graph("pending")
        .node("good", counted("good", ok_runs.clone()))
        .node(
            "flaky",
            node_fn(move |_| {
                let fail = f2.clone();
                async move {
                    if fail.load(Ordering::SeqCst) {
                        Err(NodeError::fatal("boom"))
                    } else {
                        Ok(Update::new().set("log", json!(["flaky"])))
                    }
                }
            }),
        )
        .node("after", logger("after"))
        .edge(START, "good")
        .edge(START, "flaky")
        .join(&["good", "flaky"], "after")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let err = g
        .invoke(values(json!({})), RunConfig::thread("p"))
        .await
        .unwrap_err();
    match &err {
        RunError::NodeFailed {
            node,
            step,
            thread,
            message,
            ..
        } => {
            assert_eq!(
                (node.as_str(), *step, thread.as_str(), message.as_str()),
                ("flaky", 1, "p", "boom")
            );
        }
        other => panic!("expected NodeFailed, got {other}"),
    }
    assert_eq!(ok_runs.load(Ordering::SeqCst), 1);
    let state = state_of(&g, "p").await;
    assert_eq!(state.next, ["flaky", "good"]);
    assert_eq!(state.step, 0);
    fail.store(false, Ordering::SeqCst);
    let out = continue_on(&g, "p").await;
    assert_eq!(
        ok_runs.load(Ordering::SeqCst),
        1,
        "the succeeded task must not run again"
    );
    assert_eq!(log_of(&out), ["flaky", "good", "after"]);
}

#[tokio::test]
async fn update_state_as_a_node_then_continue() {
    let g = logged_chain("upd", &["a", "b", "c"])
        .interrupt_before("b")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let out = run_on(&g, "u").await;
    assert_eq!(out.status, paused_before(&["b"]));
    // Act as b: the update goes through the reducer and b's edge plans c.
    let id = g
        .update_state("u", None, json!({"log": ["manual"]}), Some("b"))
        .await
        .unwrap();
    let s = state_of(&g, "u").await;
    assert_eq!(s.checkpoint_id, id);
    assert_eq!(s.source, Source::Update);
    assert_eq!(s.values["log"], json!(["a", "manual"]));
    assert_eq!(s.next, ["c"]);
    let out = continue_on(&g, "u").await;
    assert_eq!(log_of(&out), ["a", "manual", "c"]);
    // Without as_node, the last writer is used; an ambiguous one is an error.
    let id2 = g
        .update_state("u", None, json!({"log": ["again"]}), None)
        .await
        .unwrap();
    assert_ne!(id, id2);
    assert_eq!(state_of(&g, "u").await.next, Vec::<String>::new());
}

#[tokio::test]
async fn fork_from_an_old_checkpoint_branches_history() {
    let g = stored_two_node_chain();
    run_on(&g, "f").await;
    let h = g.history("f", ListQuery::default()).await.unwrap();
    let after_a = h.iter().find(|e| e.step == 1).unwrap().checkpoint_id;
    // Time travel: continue from the checkpoint after `a`; b runs again on a new branch.
    let out = g
        .invoke(Input::Continue, RunConfig::thread("f").at(after_a))
        .await
        .unwrap();
    assert_eq!(log_of(&out), ["a", "b"]);
    let h2 = g.history("f", ListQuery::default()).await.unwrap();
    assert_eq!(
        h2.len(),
        4 + 2,
        "a fork checkpoint and one loop checkpoint are added"
    );
    let fork = h2.iter().find(|e| e.source == Source::Fork).unwrap();
    assert_eq!(fork.parent_id, Some(after_a));
    assert_eq!(fork.step, 2);
    assert_eq!(h2[0].parent_id, Some(fork.checkpoint_id));
    // The old branch is intact.
    let old_end = h.iter().find(|e| e.step == 2).unwrap().checkpoint_id;
    let old = g.get_state("f", Some(old_end)).await.unwrap().unwrap();
    assert_eq!(old.values["log"], json!(["a", "b"]));
    // Forking with different values via update_state on an old checkpoint.
    let branch = g
        .update_state("f", Some(after_a), json!({"log": ["x"]}), Some("a"))
        .await
        .unwrap();
    let out = continue_on(&g, "f").await;
    assert_eq!(log_of(&out), ["a", "x", "b"]);
    assert_eq!(
        g.get_state("f", Some(branch))
            .await
            .unwrap()
            .unwrap()
            .parent_id,
        Some(after_a)
    );
    // Unknown checkpoint ids are a clear error.
    let err = g
        .invoke(Input::Continue, RunConfig::thread("f").at(CheckpointId(7)))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::CheckpointNotFound { .. }), "{err}");
}

/// A loop appending one message per step to a long history.
fn message_loop(n: i64) -> CompiledGraph {
    GraphBuilder::new("msgloop")
        .channel(message_list("messages"))
        .channel(int("i"))
        .node(
            "agent",
            node_fn(|ctx| async move {
                let i = ctx.state().i64("i");
                Ok(Update::new()
                    .set(
                        "messages",
                        messages::message("ai", format!("m{i}"), "x".repeat(200)),
                    )
                    .set("i", json!(i + 1)))
            }),
        )
        .edge(START, "agent")
        .route("agent", move |s| if s.i64("i") < n { "agent" } else { END })
        .compile()
        .unwrap()
}

#[tokio::test]
async fn storage_grows_with_what_changed_not_with_the_state() {
    let mut sizes = Vec::new();
    for n in [100, 200, 400] {
        let cp = Arc::new(MemoryCheckpointer::new());
        let g = message_loop(n).with_checkpointer(cp.clone());
        run_on(&g, "s").await;
        sizes.push(cp.store().bytes() as f64);
        // Each step's blob for `messages` is one delta holding one message.
        let state = state_of(&g, "s").await;
        assert_eq!(
            state.values["messages"].as_array().unwrap().len(),
            n as usize
        );
        let version = cp
            .get("s", "", None)
            .await
            .unwrap()
            .unwrap()
            .checkpoint
            .channel_versions["messages"];
        let entries = cp
            .channel_entries("s", "", "messages", version)
            .await
            .unwrap();
        assert_eq!(entries.len(), n as usize);
        assert!(entries
            .iter()
            .all(|(_, e)| matches!(e, ChannelEntry::Delta { writes, .. } if writes.len() == 1)));
    }
    // Linear: doubling the steps about doubles the bytes (quadratic growth would quadruple).
    let r1 = sizes[1] / sizes[0];
    let r2 = sizes[2] / sizes[1];
    assert!(
        (1.8..2.2).contains(&r1) && (1.8..2.2).contains(&r2),
        "sizes {sizes:?}"
    );
    // Per step: about one message (~250 bytes) plus bookkeeping, far below the 400-message state.
    let per_step = (sizes[2] - sizes[1]) / 200.0;
    assert!(per_step < 1500.0, "{per_step} bytes per step");
    let _ = MemoryStore::default();
}

#[tokio::test]
async fn resume_after_reopening_sled_rebuilds_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    {
        let cp = Arc::new(SledCheckpointer::open(dir.path()).unwrap());
        let g = message_loop(20).with_checkpointer(cp);
        let out = g
            .invoke(
                values(json!({})),
                RunConfig::thread("r").interrupt_before(&["agent"]),
            )
            .await
            .unwrap();
        assert!(matches!(out.status, RunStatus::Interrupted { .. }));
        let mut last = out;
        for _ in 0..5 {
            last = g
                .invoke(
                    Input::Continue,
                    RunConfig::thread("r").interrupt_after(&["agent"]),
                )
                .await
                .unwrap();
        }
        assert_eq!(last.values["i"], json!(5));
    }
    let cp = Arc::new(SledCheckpointer::open(dir.path()).unwrap());
    let g = message_loop(20).with_checkpointer(cp);
    let out = continue_on(&g, "r").await;
    assert_eq!(out.values["i"], json!(20));
    let ids: Vec<&str> = out.values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn a_changed_schema_is_a_clear_error() {
    let cp = memory();
    let g = two_node_chain()
        .compile()
        .unwrap()
        .with_checkpointer(cp.clone());
    run_on(&g, "s").await;
    let changed = two_node_chain()
        .channel(int("extra"))
        .compile()
        .unwrap()
        .with_checkpointer(cp);
    let err = changed
        .invoke(Input::Continue, RunConfig::thread("s"))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::SchemaMismatch { .. }), "{err}");
}

#[tokio::test]
async fn threads_list_delete_and_prune() {
    let cp = Arc::new(MemoryCheckpointer::new());
    let g = message_loop(10).with_checkpointer(cp.clone());
    for t in ["t1", "t2"] {
        run_on(&g, t).await;
    }
    assert_eq!(g.list_threads().await.unwrap(), ["t1", "t2"]);
    let stats = g.prune(Some("t1"), 2).await.unwrap();
    assert_eq!(stats.checkpoints, 12 - 2);
    // What resuming needs is kept: the latest state still loads in full.
    let s = state_of(&g, "t1").await;
    assert_eq!(s.values["messages"].as_array().unwrap().len(), 10);
    assert_eq!(history_len(&g, "t1").await, 2);
    g.delete_thread("t2").await.unwrap();
    assert_eq!(g.list_threads().await.unwrap(), ["t1"]);
    assert!(g.get_state("t2", None).await.unwrap().is_none());
}

/// `keep_checkpoints`: a 200-step run on sled stores at most twice the kept number of
/// checkpoints at any time and ends with at most that; its state is whole (every message of
/// every step, through the incremental channel storage), and reopening the store resumes it.
#[tokio::test]
async fn a_run_keeping_few_checkpoints_prunes_as_it_goes_and_keeps_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let keep = 20;
    {
        let cp = Arc::new(SledCheckpointer::open(dir.path()).unwrap());
        let g = message_loop(200).with_checkpointer(cp);
        let out = g
            .invoke(
                values(json!({})),
                RunConfig::thread("k").keep_checkpoints(keep),
            )
            .await
            .unwrap();
        // 1 input checkpoint + 201 loop checkpoints were written.
        assert_eq!(out.stats.checkpoints_written, 202);
        let h = g.history("k", ListQuery::default()).await.unwrap();
        assert!(
            (keep..2 * keep).contains(&h.len()),
            "{} checkpoints stored",
            h.len()
        );
        assert_eq!(h[0].step, 200, "the newest is kept");
        for w in h.windows(2) {
            assert_eq!(w[0].parent_id, Some(w[1].checkpoint_id));
        }
    }
    let cp = Arc::new(SledCheckpointer::open(dir.path()).unwrap());
    let g = message_loop(200).with_checkpointer(cp);
    let st = state_of(&g, "k").await;
    assert_eq!(st.values["i"], json!(200));
    let ids: Vec<String> = st.values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    assert_eq!(ids, expected);
    // Without the setting, every checkpoint stays.
    let g = message_loop(30).with_checkpointer(memory());
    g.invoke(values(json!({})), RunConfig::thread("all"))
        .await
        .unwrap();
    assert_eq!(
        g.history("all", ListQuery::default()).await.unwrap().len(),
        32
    );
}

/// A task reaches its run's checkpointer (to keep a detached run's checkpoints beside the
/// thread's): the same store the graph writes to, none without one.
#[tokio::test]
async fn a_task_sees_its_runs_checkpointer() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let graph = |seen: Arc<std::sync::Mutex<Vec<bool>>>| {
        GraphBuilder::new("probe")
            .channel(list("log"))
            .node(
                "probe",
                node_fn(move |ctx| {
                    let seen = seen.clone();
                    async move {
                        let cp = ctx.checkpointer();
                        if let Some(cp) = &cp {
                            // The thread's first checkpoint, written before this step, is there.
                            let listed = cp
                                .list(ctx.thread_id(), &ListQuery::default())
                                .await
                                .map_err(|e| NodeError::fatal(e.to_string()))?;
                            assert!(!listed.is_empty());
                        }
                        seen.lock().unwrap().push(cp.is_some());
                        Ok(Update::new())
                    }
                }),
            )
            .edge(START, "probe")
            .edge("probe", END)
            .compile()
            .unwrap()
    };
    graph(seen.clone())
        .with_checkpointer(memory())
        .invoke(values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap();
    graph(seen.clone())
        .invoke(values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![true, false]);
}
