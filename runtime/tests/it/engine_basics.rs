//! Super-step semantics: edges, joins, sends, commands, routes, conflicts, types.

use crate::common;
use agentgraph_runtime::*;
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn fan_in_node_runs_once_when_branches_arrive_in_one_step() {
    let c_runs = Arc::new(AtomicUsize::new(0));
    let g = log_graph("fanin")
        .node("a", logger("a"))
        .node("b", logger("b"))
        .node("c", counted("c", c_runs.clone()))
        .edge(START, "a")
        .edge(START, "b")
        .edge("a", "c")
        .edge("b", "c")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(c_runs.load(Ordering::SeqCst), 1);
    assert_eq!(log_of(&out), ["a", "b", "c"]);
    assert_eq!(out.stats.steps, 2);
}

#[tokio::test]
async fn fan_in_from_different_steps_runs_twice_but_waiting_edge_runs_once() {
    // a -> c and b1 -> b2 -> c: plain edges fire c once per arrival step (LangGraph behaviour).
    // START -> a and START -> b1 -> b2, with a counted `c` left for the caller to wire.
    fn branches(name: &str, c_runs: Arc<AtomicUsize>) -> GraphBuilder {
        log_graph(name)
            .node("a", logger("a"))
            .node("b1", logger("b1"))
            .node("b2", logger("b2"))
            .node("c", counted("c", c_runs))
            .edge(START, "a")
            .edge(START, "b1")
            .edge("b1", "b2")
    }
    let plain_runs = Arc::new(AtomicUsize::new(0));
    let g = branches("plain", plain_runs.clone())
        .edge("b2", "c")
        .edge("a", "c")
        .compile()
        .unwrap();
    run(&g).await;
    assert_eq!(plain_runs.load(Ordering::SeqCst), 2);

    let join_runs = Arc::new(AtomicUsize::new(0));
    let g = branches("join", join_runs.clone())
        .join(&["a", "b2"], "c")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(join_runs.load(Ordering::SeqCst), 1);
    assert_eq!(log_of(&out), ["a", "b1", "b2", "c"]);
}

#[tokio::test]
async fn merge_order_independent_of_completion_order() {
    let slow = node_fn(|_| async {
        tokio::time::sleep(Duration::from_millis(60)).await;
        Ok(Update::new().set("log", json!(["a_slow"])))
    });
    let g = log_graph("order")
        .node("a_slow", slow)
        .node("z_fast", logger("z_fast"))
        .edge(START, "a_slow")
        .edge(START, "z_fast")
        .compile()
        .unwrap();
    for _ in 0..3 {
        let out = run(&g).await;
        assert_eq!(log_of(&out), ["a_slow", "z_fast"]);
    }
}

#[tokio::test]
async fn sends_run_in_one_step_and_reduce_in_send_order() {
    let g = GraphBuilder::new("mapreduce")
        .channel(
            ChannelSpec::new("results", "list<int>".parse().unwrap())
                .reducer(Arc::new(Append))
                .default_value(json!([])),
        )
        .channel(int("total"))
        .channel(int("n"))
        .node("split", node_fn(|_| async { Ok(Update::new()) }))
        .node(
            "work",
            node_fn(|ctx| async move {
                let i = ctx.payload().and_then(|p| p["i"].as_i64()).unwrap_or(-1);
                // later sends finish first
                tokio::time::sleep(Duration::from_millis((10 - i as u64) * 3)).await;
                Ok(Update::new().set("results", json!([i * i])))
            }),
        )
        .node(
            "reduce",
            node_fn(|ctx| async move {
                let total: i64 = ctx
                    .state()
                    .list("results")
                    .iter()
                    .filter_map(|v| v.as_i64())
                    .sum();
                Ok(Update::new().set("total", json!(total)))
            }),
        )
        .edge(START, "split")
        .route("split", |s| {
            (0..s.i64("n"))
                .map(|i| Send {
                    node: "work".into(),
                    payload: json!({ "i": i }),
                })
                .collect::<Vec<_>>()
        })
        .edge("work", "reduce")
        .compile()
        .unwrap();
    let out = g
        .invoke(values(json!({"n": 5})), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.values["results"], json!([0, 1, 4, 9, 16]));
    assert_eq!(out.values["total"], json!(30));
    assert_eq!(out.stats.steps, 3);
    assert_eq!(out.stats.tasks, 7);
}

#[tokio::test]
async fn unknown_route_fails_the_run() {
    let g = log_graph("bad-route")
        .node("a", logger("a"))
        .edge(START, "a")
        .route("a", |_| "nowhere")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    match err {
        RunError::UnknownTarget { from, target, .. } => {
            assert_eq!(from, "a");
            assert_eq!(target, "nowhere");
        }
        other => panic!("expected UnknownTarget, got {other}"),
    }
}

#[tokio::test]
async fn conflicting_replace_writes_fail_with_both_writers_named() {
    let g = GraphBuilder::new("conflict")
        .channel(ChannelSpec::new("x", ValueType::String))
        .node("left", writes("x", json!("L")))
        .node("right", writes("x", json!("R")))
        .edge(START, "left")
        .edge(START, "right")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    let msg = err.to_string();
    match err {
        RunError::ConflictingWrites {
            channel,
            first_writer,
            second_writer,
            first_value,
            second_value,
            ..
        } => {
            assert_eq!(channel, "x");
            assert_eq!(
                (first_writer.as_str(), second_writer.as_str()),
                ("left", "right")
            );
            assert_eq!(
                (first_value.as_str(), second_value.as_str()),
                ("\"L\"", "\"R\"")
            );
        }
        other => panic!("expected ConflictingWrites, got {other}"),
    }
    assert!(
        msg.contains("left") && msg.contains("right") && msg.contains("reduce"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_write_of_the_wrong_type_names_node_channel_and_value() {
    let g = GraphBuilder::new("types")
        .channel(int("count"))
        .node("a", writes("count", json!("three")))
        .edge(START, "a")
        .compile()
        .unwrap();
    let err = run_err(&g).await;
    match &err {
        RunError::TypeMismatch {
            node,
            channel,
            value,
            ty,
            ..
        } => {
            assert_eq!(
                (node.as_str(), channel.as_str(), value.as_str(), ty.as_str()),
                ("a", "count", "\"three\"", "int")
            );
        }
        other => panic!("expected TypeMismatch, got {other}"),
    }
    // A badly typed input is refused before anything is written: the thread stays empty,
    // so nothing is left that would fail again on resume.
    let cp = memory();
    let saved = g.clone().with_checkpointer(cp.clone());
    let bad_input = saved
        .invoke(values(json!({"count": 1.5})), RunConfig::thread("typed"))
        .await
        .unwrap_err();
    assert!(
        matches!(&bad_input, RunError::InvalidInput(m) if m.contains("input `count`") && m.contains("must be int")),
        "{bad_input}"
    );
    assert!(cp
        .list("typed", &ListQuery::default())
        .await
        .unwrap()
        .is_empty());
    let unknown = g
        .invoke(values(json!({"cnt": 1})), RunConfig::default())
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("accepts: count"), "{unknown}");
}

#[tokio::test]
async fn command_goto_adds_to_static_edges_and_unknown_goto_fails() {
    let g = log_graph("cmd")
        .node(
            "a",
            node_fn(|_| async { Ok(Update::new().set("log", json!(["a"])).goto("c")) }),
        )
        .node("b", logger("b"))
        .node("c", logger("c"))
        .edge(START, "a")
        .edge("a", "b")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(log_of(&out), ["a", "b", "c"]);

    let g = log_graph("cmd-bad")
        .node("a", node_fn(|_| async { Ok(Update::new().goto("zzz")) }))
        .edge(START, "a")
        .compile()
        .unwrap();
    assert!(matches!(run_err(&g).await, RunError::UnknownTarget { .. }));
}

#[tokio::test]
async fn recursion_limit_names_the_looping_nodes() {
    let g = GraphBuilder::new("forever")
        .channel(int("n"))
        .node(
            "spin",
            node_fn(
                |ctx| async move { Ok(Update::new().set("n", json!(ctx.state().i64("n") + 1))) },
            ),
        )
        .edge(START, "spin")
        .edge("spin", "spin")
        .recursion_limit(5)
        .compile()
        .unwrap()
        .with_checkpointer(memory());
    let err = g
        .invoke(values(json!({})), RunConfig::thread("r"))
        .await
        .unwrap_err();
    match &err {
        RunError::RecursionLimit { limit, nodes, .. } => {
            assert_eq!(*limit, 5);
            assert_eq!(nodes, "spin ×5");
        }
        other => panic!("expected RecursionLimit, got {other}"),
    }
    // The run keeps its checkpoints: the node ran exactly 5 times (steps -1..=5, as LangGraph).
    assert_eq!(state_of(&g, "r").await.values["n"], json!(5));
    assert_eq!(history_len(&g, "r").await, 7);
    // A per-run override lifts it.
    let g2 = g.clone();
    let out = g2
        .invoke(
            values(json!({})),
            RunConfig::thread("r2").recursion_limit(3),
        )
        .await
        .unwrap_err();
    assert!(out.to_string().contains("recursion limit of 3"));
}

#[tokio::test]
async fn ephemeral_channel_is_visible_for_one_step_only() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let observe = move |name: &'static str| {
        let seen = s2.clone();
        node_fn(move |ctx| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push((name, ctx.state().get("flash").cloned()));
                Ok(Update::new())
            }
        })
    };
    let g = GraphBuilder::new("eph")
        .channel(ChannelSpec::new("flash", "string?".parse().unwrap()).ephemeral())
        .node("w", writes("flash", json!("hi")))
        .node("r1", observe("r1"))
        .node("r2", observe("r2"))
        .chain(&[START, "w", "r1", "r2"])
        .compile()
        .unwrap();
    run(&g).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![("r1", Some(json!("hi"))), ("r2", None)]);
}

#[tokio::test]
async fn reducers_sum_merge_and_add_messages_fold_parallel_writes() {
    let g = GraphBuilder::new("reducers")
        .channel(
            ChannelSpec::new("total", ValueType::Int)
                .reducer(Arc::new(Numeric::sum()))
                .default_value(json!(0)),
        )
        .channel(
            ChannelSpec::new("seen", "map<bool>".parse().unwrap())
                .reducer(Arc::new(Merge))
                .default_value(json!({})),
        )
        .channel(message_list("messages"))
        .node(
            "a",
            node_fn(|_| async {
                Ok(Update::new()
                    .set("total", json!(2))
                    .set("seen", json!({"a": true}))
                    .set("messages", messages::message("ai", "m1", "from a")))
            }),
        )
        .node(
            "b",
            node_fn(|_| async {
                Ok(Update::new()
                    .set("total", json!(3))
                    .set("seen", json!({"b": true}))
                    .set("messages", json!([{"type": "ai", "content": "no id"}])))
            }),
        )
        .node(
            "c",
            node_fn(|_| async {
                Ok(Update::new().set(
                    "messages",
                    json!([
                        messages::message("ai", "m1", "edited"),
                        messages::remove("h")
                    ]),
                ))
            }),
        )
        .edge(START, "a")
        .edge(START, "b")
        .join(&["a", "b"], "c")
        .compile()
        .unwrap();
    let out = g
        .invoke(
            values(json!({"total": 1, "messages": [messages::message("human", "h", "hi")]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.values["total"], json!(6));
    assert_eq!(out.values["seen"], json!({"a": true, "b": true}));
    let msgs = out.values["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["content"], json!("edited"));
    assert!(msgs[1]["id"].as_str().is_some_and(|id| !id.is_empty()));
}

#[tokio::test]
async fn custom_reducer_registered_by_name() {
    let mut registry = ReducerRegistry::default();
    registry.register(Arc::new(FnReducer::new("concat", |cur, w| {
        let s = format!(
            "{}{}",
            cur.as_ref().and_then(|v| v.as_str()).unwrap_or(""),
            w.as_str().unwrap_or("")
        );
        *cur = Some(json!(s));
        Ok(())
    })));
    let g = GraphBuilder::new("custom")
        .channel(
            ChannelSpec::new("s", ValueType::String)
                .reducer(registry.get("concat").unwrap())
                .default_value(json!("")),
        )
        .node("a", writes("s", json!("x")))
        .node("b", writes("s", json!("y")))
        .edge(START, "a")
        .edge(START, "b")
        .compile()
        .unwrap();
    let out = run(&g).await;
    assert_eq!(out.values["s"], json!("xy"));
    assert!(registry.names().any(|n| n == "add_messages"));
}

#[test]
fn compile_rejects_unknown_nodes_and_missing_entry() {
    let e = GraphBuilder::new("g")
        .node("a", logger("a"))
        .edge("a", "b")
        .edge(START, "a")
        .compile()
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown node `b`"), "{e}");
    let e = GraphBuilder::new("g")
        .node("a", logger("a"))
        .compile()
        .err()
        .unwrap();
    assert!(matches!(e, GraphError::NoEntry(_)));
    let e = GraphBuilder::new("g")
        .node("a", logger("a"))
        .node("a", logger("a"))
        .edge(START, "a")
        .compile()
        .err()
        .unwrap();
    assert!(matches!(e, GraphError::DuplicateNode(_)));
}

#[tokio::test]
async fn a_catching_node_turns_its_failure_into_a_write_and_the_run_goes_on() {
    let options = NodeOptions {
        catch: Some("error".into()),
        ..Default::default()
    };
    let g = GraphBuilder::new("catch")
        .channel(list("log"))
        .channel(ChannelSpec::new("error", ValueType::Json))
        .node_with(
            "fragile",
            node_fn(|_| async {
                Err(NodeError::fatal("the model is down").with_code("MODEL_SERVER"))
            }),
            options,
        )
        .node("explain", logger("explain"))
        .node("happy", logger("happy"))
        .edge(START, "fragile")
        .route("fragile", |s| {
            if s.get("error").is_some() {
                "explain"
            } else {
                "happy"
            }
        })
        .edge("explain", END)
        .edge("happy", END)
        .compile()
        .unwrap();
    let out = g
        .invoke(values(json!({})), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.values["log"], json!(["explain"]));
    assert_eq!(
        out.values["error"],
        json!({"node": "fragile", "code": "MODEL_SERVER", "message": "the model is down"})
    );
}
