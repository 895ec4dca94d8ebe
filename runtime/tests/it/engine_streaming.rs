//! Streaming, retries, timeouts and cancellation.

use crate::common;
use agentgraph_runtime::*;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn stream_modes_are_views_over_one_sequence() {
    let g = log_graph("s")
        .node(
            "a",
            node_fn(|ctx| async move {
                ctx.emit_custom(json!({"tool": "t", "status": "running", "title": "working"}))
                    .await;
                ctx.emit_message(json!({"id": "m1", "delta": "he"})).await;
                Ok(Update::new().set("log", json!(["a"])))
            }),
        )
        .edge(START, "a")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let (events, out) = g
        .stream(values(json!({})), RunConfig::thread("s"))
        .collect()
        .await;
    out.unwrap();
    let modes: Vec<&str> = events.iter().map(|e| e.mode().as_str()).collect();
    assert!(modes.contains(&"values") && modes.contains(&"updates") && modes.contains(&"custom"));
    assert!(modes.contains(&"messages") && modes.contains(&"debug"));
    // custom and messages come while the task runs, before its update.
    let pos = |m: &str| modes.iter().position(|x| *x == m).unwrap();
    assert!(pos("custom") < pos("updates"));
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    let custom = events.iter().find(|e| e.mode() == Mode::Custom).unwrap();
    let env = serde_json::to_value(custom).unwrap();
    assert_eq!(
        env,
        json!({"seq": custom.seq, "ns": [], "mode": "custom", "node": "a",
        "data": {"tool": "t", "status": "running", "title": "working"}})
    );
    // Only the requested modes are produced, and seq continues on the thread.
    let (events2, _) = g
        .stream(
            values(json!({})),
            RunConfig::thread("s").modes(Modes::of(&[Mode::Updates])),
        )
        .collect()
        .await;
    assert!(events2.iter().all(|e| e.mode() == Mode::Updates));
    assert_eq!(events2[0].seq, events.len() as u64);
}

#[tokio::test]
async fn a_slow_consumer_gets_every_event_through_a_bounded_buffer() {
    let g = log_graph("burst")
        .node(
            "a",
            node_fn(|ctx| async move {
                for i in 0..200 {
                    ctx.emit_custom(json!(i)).await;
                }
                Ok(Update::new())
            }),
        )
        .edge(START, "a")
        .compile()
        .unwrap();
    let mut cfg = RunConfig::default().modes(Modes::of(&[Mode::Custom]));
    cfg.stream_buffer = 4;
    let mut s = g.stream(values(json!({})), cfg);
    let mut got = Vec::new();
    while let Some(e) = s.next().await {
        tokio::time::sleep(Duration::from_micros(200)).await;
        got.push(e.data());
    }
    s.finish().await.unwrap();
    assert_eq!(got, (0..200).map(|i| json!(i)).collect::<Vec<_>>());
}

#[tokio::test]
async fn retry_policy_retries_transient_failures_then_succeeds() {
    let calls = Arc::new(AtomicUsize::new(0));
    let policy = RetryPolicy {
        max_attempts: 3,
        initial_interval: Duration::from_millis(5),
        jitter: false,
        ..RetryPolicy::default()
    };
    let g = log_graph("retry")
        .node_with(
            "flaky",
            counting(calls.clone(), |_, before| async move {
                if before < 2 {
                    Err(NodeError::transient("503"))
                } else {
                    Ok(Update::new().set("log", json!(["ok"])))
                }
            }),
            NodeOptions {
                retry: Some(policy.clone()),
                timeout: None,
                catch: None,
                cache: None,
            },
        )
        .edge(START, "flaky")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(log_of(&out), ["ok"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // A fatal error is not retried by the default `retry_on`.
    let fatal_calls = Arc::new(AtomicUsize::new(0));
    let g = log_graph("fatal")
        .node_with(
            "bad",
            counting(fatal_calls.clone(), |_, _| async {
                Err(NodeError::fatal("bad input").with_code("E_INPUT"))
            }),
            NodeOptions {
                retry: Some(policy),
                timeout: None,
                catch: None,
                cache: None,
            },
        )
        .edge(START, "bad")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    assert_eq!(fatal_calls.load(Ordering::SeqCst), 1);
    assert!(matches!(err, RunError::NodeFailed { code: Some(ref c), .. } if c == "E_INPUT"));
}

#[tokio::test]
async fn node_timeout_fails_the_node() {
    let g = log_graph("slow")
        .node_with(
            "slow",
            node_fn(|_| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(Update::new())
            }),
            NodeOptions {
                retry: None,
                timeout: Some(Duration::from_millis(20)),
                catch: None,
                cache: None,
            },
        )
        .edge(START, "slow")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    assert!(err.to_string().contains("timeout"), "{err}");
}

#[tokio::test]
async fn cancellation_stops_the_run_and_leaves_a_resumable_checkpoint() {
    let token = CancellationToken::new();
    let t2 = token.clone();
    // The node cancels the run's token once, at n == 3, then hangs; resuming uses a new token.
    let g = GraphBuilder::new("cancel")
        .channel(int("n"))
        .node(
            "step",
            node_fn(move |ctx| {
                let t = t2.clone();
                async move {
                    let n = ctx.state().i64("n");
                    if n == 3 && !t.is_cancelled() {
                        t.cancel();
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                    Ok(Update::new().set("n", json!(n + 1)))
                }
            }),
        )
        .edge(START, "step")
        .route("step", |s| if s.i64("n") < 6 { "step" } else { END })
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let err = g
        .invoke(values(json!({})), RunConfig::thread("c").cancel_with(token))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Cancelled(_)), "{err}");
    let s = state_of(&g, "c").await;
    assert_eq!(s.values["n"], json!(3));
    assert_eq!(s.next, ["step"]);
    let out = continue_on(&g, "c").await;
    assert_eq!(out.values["n"], json!(6));
}

#[tokio::test]
async fn a_panicking_node_fails_the_run_cleanly() {
    let g = log_graph("panic")
        .node("p", node_fn(|_| async { panic!("kaboom") }))
        .edge(START, "p")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    assert!(err.to_string().contains("kaboom"), "{err}");
}

#[tokio::test]
async fn a_panic_is_its_own_error_and_the_thread_keeps_the_step() {
    let g = log_graph("panic")
        .node("ok", logger("ok"))
        .node("p", node_fn(|_| async { panic!("kaboom") }))
        .edge(START, "ok")
        .edge(START, "p")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let err = g
        .invoke(values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap_err();
    match &err {
        RunError::Panicked {
            node,
            step,
            thread,
            message,
            ..
        } => {
            assert_eq!(node, "p");
            assert_eq!(*step, 1);
            assert_eq!(thread, "t");
            assert_eq!(message, "kaboom");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
    assert_eq!(err.kind(), RunErrorKind::Failed);
    assert_eq!(
        err.to_string(),
        r#"node `p` panicked at step 1 of thread "t": kaboom"#
    );
    // Nothing of the step was applied; it runs again on continue (and panics again).
    let s = state_of(&g, "t").await;
    assert_eq!(s.values["log"], json!([]));
    assert_eq!(s.next, ["ok", "p"]);
    let again = g
        .invoke(Input::Continue, RunConfig::thread("t"))
        .await
        .unwrap_err();
    assert!(matches!(again, RunError::Panicked { .. }), "{again}");
}

#[tokio::test]
async fn a_panic_is_retried_only_when_the_policy_retries_any_failure() {
    let policy = |retry_on| RetryPolicy {
        max_attempts: 3,
        initial_interval: Duration::from_millis(1),
        jitter: false,
        retry_on,
        ..RetryPolicy::default()
    };
    for (retry_on, attempts) in [(RetryOn::Transient, 1), (RetryOn::Any, 3)] {
        let calls = Arc::new(AtomicUsize::new(0));
        let g = log_graph("panic-retry")
            .node_with(
                "p",
                counting(calls.clone(), |_, _| async { panic!("kaboom") }),
                NodeOptions {
                    retry: Some(policy(retry_on)),
                    ..Default::default()
                },
            )
            .edge(START, "p")
            .compile()
            .unwrap();
        let err = run_err(&g).await;
        assert!(matches!(err, RunError::Panicked { .. }), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), attempts);
    }
}

#[tokio::test]
async fn a_catching_node_catches_a_panic_as_an_error_write() {
    let g = log_graph("panic-catch")
        .channel(ChannelSpec::new("error", ValueType::Json))
        .node_with(
            "p",
            node_fn(|_| async { panic!("kaboom") }),
            NodeOptions {
                catch: Some("error".into()),
                ..Default::default()
            },
        )
        .edge(START, "p")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(
        out.values["error"],
        json!({"node": "p", "code": null, "message": "node panicked: kaboom"})
    );
}

#[tokio::test]
async fn run_errors_have_the_kind_interfaces_map() {
    let g = logged_chain("kinds", &["a", "b"])
        .interrupt_before("b")
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let caller = g
        .invoke(values(json!({"nope": 1})), RunConfig::thread("k"))
        .await
        .unwrap_err();
    assert!(matches!(caller, RunError::InvalidInput(_)), "{caller}");
    assert_eq!(caller.kind(), RunErrorKind::Caller);
    let nothing = g
        .invoke(Input::Continue, RunConfig::thread("unknown"))
        .await
        .unwrap_err();
    assert_eq!(nothing.kind(), RunErrorKind::Caller);
    run_on(&g, "k").await;
    let no_interrupt = resume_err(&g, "k", json!("yes")).await;
    assert!(
        matches!(no_interrupt, RunError::Resume(_)),
        "{no_interrupt}"
    );
    assert_eq!(no_interrupt.kind(), RunErrorKind::Caller);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cancelled = g
        .invoke(Input::Continue, RunConfig::thread("k").cancel_with(cancel))
        .await
        .unwrap_err();
    assert_eq!(cancelled.kind(), RunErrorKind::Cancelled);
    // Another graph (one more channel) on the same thread: a conflict, not a failure.
    let other = logged_chain("kinds", &["a", "b"])
        .channel(int("n"))
        .compile()
        .unwrap()
        .with_checkpointer(g.checkpointer().unwrap().clone());
    let conflict = other
        .invoke(Input::Continue, RunConfig::thread("k"))
        .await
        .unwrap_err();
    assert!(
        matches!(conflict, RunError::SchemaMismatch { .. }),
        "{conflict}"
    );
    assert_eq!(conflict.kind(), RunErrorKind::Conflict);
}
