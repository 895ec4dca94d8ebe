//! The operations reducer and the apply node, alone and in a graph.

use super::*;

#[test]
fn reducer_appends_resets_and_clears() {
    let r = OperationsReducer;
    let mut cur = None;
    r.apply(&mut cur, json!([{"type": "setName", "name": "a"}]))
        .expect("append");
    r.apply(&mut cur, json!({"type": "setName", "name": "b"}))
        .expect("append one");
    assert_eq!(
        cur.as_ref().and_then(Value::as_array).map(Vec::len),
        Some(2)
    );
    r.apply(
        &mut cur,
        json!([{"type": "clear"}, {"type": "setName", "name": "c"}]),
    )
    .expect("reset");
    assert_eq!(
        cur,
        Some(json!([{"type": "clear"}, {"type": "setName", "name": "c"}]))
    );
    r.apply(&mut cur, Value::Null).expect("clear");
    assert_eq!(cur, Some(json!([])));
    assert!(r.apply(&mut cur, json!(5)).is_err());
    let mut bad = json!([{"type": "nope"}]);
    assert!(r.prepare(&mut bad).is_err());

    let mut reg = ReducerRegistry::default();
    register(&mut reg);
    assert_eq!(
        reg.get("operations").map(|r| r.name().to_string()),
        Some("operations".into())
    );
}

#[test]
fn apply_node_compute() {
    let node = ApplyOperationsNode::new();
    let wf = sample().to_value();
    let up = node.compute(Some(&wf), None);
    assert!(up.writes.is_empty());
    let up = node.compute(Some(&wf), Some(&json!([])));
    assert!(up.writes.is_empty());
    let q = json!([{"type": "setName", "name": "Z"}]);
    let up = node.compute(Some(&wf), Some(&q));
    assert_eq!(up.writes[0].0, "workflow");
    assert_eq!(up.writes[0].1["name"], json!("Z"));
    assert_eq!(up.writes[1], ("operations".to_string(), Value::Null));
    // An empty workflow channel is an empty workflow.
    let q = json!([{"type": "addNodes", "nodes": [node_json("1", "A")]}]);
    let up = node.compute(None, Some(&q));
    assert_eq!(up.writes[0].1["nodes"][0]["name"], json!("A"));
    // A batch that fails leaves the workflow alone and still clears the queue (no messages
    // channel: nothing else is written).
    let bad = json!([{"type": "renameNode", "nodeId": "2", "newName": "Set"}]);
    let out = node.outcome(Some(&wf), Some(&bad), None);
    assert_eq!(out.update.writes, [("operations".to_string(), Value::Null)]);
    let error = out.error.clone().expect("an error");
    assert!(error.starts_with("operation_failed: "), "{error}");
    assert_eq!(out.event().expect("an event")["status"], json!("error"));
    let out = node.outcome(Some(&json!({"nodes": 1})), Some(&q), None);
    assert_eq!(out.update.writes, [("operations".to_string(), Value::Null)]);
    assert!(out
        .error
        .expect("an error")
        .starts_with("invalid_workflow: "));
    let out = node.outcome(Some(&wf), Some(&json!([{"type": "explode"}])), None);
    assert_eq!(out.update.writes, [("operations".to_string(), Value::Null)]);
    assert!(out
        .error
        .expect("an error")
        .starts_with("invalid_operations: "));
}

#[tokio::test]
async fn apply_node_in_a_graph_with_the_reducer() {
    // Two "tools" queue operations in parallel; the apply node folds them into the workflow.
    let tool_a = agentgraph_runtime::node_fn(|_| async {
        Ok(agentgraph_runtime::Update::new().set(
            "ops",
            json!([{"type": "addNodes", "nodes": [node_json("1", "A")]}]),
        ))
    });
    let tool_b = agentgraph_runtime::node_fn(|_| async {
        Ok(agentgraph_runtime::Update::new().set(
            "ops",
            json!([{"type": "addNodes", "nodes": [node_json("2", "B")]},
                   {"type": "mergeConnections", "connections": {"A": {"main": [[{"node": "B", "type": "main", "index": 0}]]}}}]),
        ))
    });
    let g = GraphBuilder::new("ops")
        .channel(ChannelSpec::new("wf", ValueType::Json))
        .channel(
            ChannelSpec::new("ops", ValueType::Json)
                .reducer(Arc::new(OperationsReducer))
                .default_value(json!([])),
        )
        .node("a", tool_a)
        .node("b", tool_b)
        .node(
            "apply",
            Arc::new(ApplyOperationsNode::with_channels("wf", "ops")),
        )
        .edge(START, "a")
        .edge(START, "b")
        .join(&["a", "b"], "apply")
        .edge("apply", END)
        .compile()
        .expect("compiles");
    let out = g
        .invoke(
            Input::values(json!({"wf": {"name": "W", "nodes": [], "connections": {}}})),
            RunConfig::default(),
        )
        .await
        .expect("runs");
    let wf = Workflow::from_value(out.values["wf"].clone()).expect("workflow");
    assert_eq!(wf.node_names().collect::<Vec<_>>(), ["A", "B"]);
    assert_eq!(wf.edges().len(), 1);
    assert_eq!(out.values["ops"], json!([]));
}
