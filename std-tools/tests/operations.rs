//! Workflow operations: each operation's happy path and errors, atomicity, the reducer, the
//! apply node in a graph, and properties (order, idempotent merge, no dangling connections).

use agentgraph_runtime::reducer::Reducer;
use agentgraph_runtime::{
    ChannelSpec, GraphBuilder, Input, NodeError, ReducerRegistry, RunConfig, ValueType, END, START,
};
use agentgraph_std_tools::operations::{
    apply_operations, parse_operations, register, rename_in_expression, ApplyOperationsNode,
    Operation, OperationErrorKind, OperationsReducer,
};
use agentgraph_std_tools::workflow::{Connection, Connections, Workflow, WorkflowNode};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn node(id: &str, name: &str) -> WorkflowNode {
    WorkflowNode::new(id, name, "n8n-nodes-base.set", 3.4, [0.0, 0.0])
}

/// Trigger → HTTP Request → Set, and a chat model feeding an agent (ai_languageModel).
fn sample() -> Workflow {
    let wf = json!({
        "name": "Sample",
        "nodes": [
            {"id": "1", "name": "Trigger", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"id": "2", "name": "HTTP Request", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {"url": "https://example.com"}},
            {"id": "3", "name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 0.5],
             "parameters": {"value": "={{ $('HTTP Request').item.json.x }} {{ $node[\"HTTP Request\"].json.y }}"}},
            {"id": "4", "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1, "position": [0, 200], "parameters": {}},
            {"id": "5", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 200],
             "parameters": {"text": "={{ $node.Set.json.z }} {{ $node.Settings.json }}"}}
        ],
        "connections": {
            "Trigger": {"main": [[{"node": "HTTP Request", "type": "main", "index": 0}]]},
            "HTTP Request": {"main": [[{"node": "Set", "type": "main", "index": 0}], null]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"},
        "pinData": {"HTTP Request": [{"json": {"x": 1}}]}
    });
    Workflow::from_value(wf).expect("sample loads")
}

fn ops(v: Value) -> Vec<Operation> {
    parse_operations(&v).expect("valid operations")
}

// ---------------------------------------------------------------------------------------------
// Serialization
// ---------------------------------------------------------------------------------------------

#[test]
fn operations_serialize_in_the_reference_shape() {
    let all = json!([
        {"type": "clear"},
        {"type": "addNodes", "nodes": [{"id": "9", "name": "X", "type": "t", "typeVersion": 1, "position": [1, 2], "parameters": {}}]},
        {"type": "removeNode", "nodeIds": ["9"]},
        {"type": "updateNode", "nodeId": "1", "updates": {"parameters": {"a": 1}}},
        {"type": "setConnections", "connections": {}},
        {"type": "mergeConnections", "connections": {"A": {"main": [[{"node": "B", "type": "main", "index": 0}]]}}},
        {"type": "removeConnection", "sourceNode": "A", "targetNode": "B", "connectionType": "main", "sourceOutputIndex": 0, "targetInputIndex": 0},
        {"type": "setName", "name": "N"},
        {"type": "renameNode", "nodeId": "1", "newName": "Y"}
    ]);
    let parsed = ops(all.clone());
    assert_eq!(parsed.len(), 9);
    let back: Vec<Value> = parsed.iter().map(Operation::to_value).collect();
    assert_eq!(Value::Array(back), all);
    let names: Vec<&str> = parsed.iter().map(Operation::type_name).collect();
    assert_eq!(
        names,
        [
            "clear",
            "addNodes",
            "removeNode",
            "updateNode",
            "setConnections",
            "mergeConnections",
            "removeConnection",
            "setName",
            "renameNode"
        ]
    );
}

#[test]
fn remove_connection_defaults_and_bad_operations() {
    let op = Operation::from_value(
        &json!({"type": "removeConnection", "sourceNode": "A", "targetNode": "B"}),
    )
    .expect("defaults");
    assert_eq!(
        op,
        Operation::RemoveConnection {
            source_node: "A".into(),
            target_node: "B".into(),
            connection_type: "main".into(),
            source_output_index: 0,
            target_input_index: 0
        }
    );
    let err = parse_operations(&json!([{"type": "clear"}, {"type": "explode"}])).expect_err("bad");
    assert_eq!(err.index, 1);
    assert!(err.to_string().contains("explode"), "{err}");
    let err = parse_operations(&json!([{"type": "setName"}])).expect_err("no name");
    assert!(err.to_string().contains("name"), "{err}");
    assert!(parse_operations(&json!(3)).is_err());
    assert_eq!(parse_operations(&Value::Null).expect("null"), vec![]);
}

// ---------------------------------------------------------------------------------------------
// Each operation
// ---------------------------------------------------------------------------------------------

#[test]
fn clear_empties_everything() {
    let wf = apply_operations(&sample(), &ops(json!([{"type": "clear"}]))).expect("clear");
    assert!(wf.nodes.is_empty() && wf.connections.is_empty() && wf.extra.is_empty());
    assert_eq!(wf.name.as_deref(), Some(""));
}

#[test]
fn add_nodes_appends_and_upserts_by_id() {
    let mut replaced = node("2", "HTTP Request");
    replaced.node_type = "n8n-nodes-base.httpRequest".into();
    replaced
        .parameters
        .insert("url".into(), json!("https://other.example"));
    let wf = apply_operations(
        &sample(),
        &[Operation::AddNodes {
            nodes: vec![node("6", "Code"), replaced],
        }],
    )
    .expect("add");
    assert_eq!(wf.nodes.len(), 6);
    assert_eq!(wf.nodes[5].name, "Code");
    assert_eq!(
        wf.nodes[1].parameters["url"],
        json!("https://other.example")
    );
}

#[test]
fn add_nodes_errors() {
    let mut no_id = node("x", "No Id");
    no_id.id = None;
    let err = apply_operations(&sample(), &[Operation::AddNodes { nodes: vec![no_id] }])
        .expect_err("no id");
    assert_eq!(err.kind, OperationErrorKind::MissingNodeId("No Id".into()));
    // A name used by a node with another id is made unique (parallel add_nodes calls).
    let wf = apply_operations(
        &sample(),
        &[Operation::AddNodes {
            nodes: vec![node("77", "Set"), node("78", "Set")],
        }],
    )
    .expect("duplicate names are made unique");
    assert_eq!(wf.node_by_id("77").expect("77").name, "Set1");
    assert_eq!(wf.node_by_id("78").expect("78").name, "Set2");
    let names: std::collections::BTreeSet<&str> = wf.node_names().collect();
    assert_eq!(names.len(), wf.nodes.len(), "names stay unique");
    let err = apply_operations(
        &sample(),
        &[Operation::AddNodes {
            nodes: vec![node("77", "")],
        }],
    )
    .expect_err("empty name");
    assert_eq!(err.kind, OperationErrorKind::EmptyName);
}

#[test]
fn remove_node_cleans_connections_both_ways() {
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "removeNode", "nodeIds": ["2"]}])),
    )
    .expect("remove");
    assert!(wf.node_by_name("HTTP Request").is_none());
    assert!(!wf.references_name("HTTP Request"));
    // Trigger keeps its (now empty) output slot.
    assert_eq!(wf.connections["Trigger"]["main"], vec![Some(vec![])]);
    assert_eq!(wf.nodes.len(), 4);
}

#[test]
fn remove_node_by_name_for_nodes_without_id_and_unknown_id() {
    let mut base = sample();
    base.node_mut("1").expect("trigger").id = None;
    let wf = apply_operations(
        &base,
        &ops(json!([{"type": "removeNode", "nodeIds": ["Trigger"]}])),
    )
    .expect("remove by name");
    assert!(wf.node_by_name("Trigger").is_none());
    assert!(!wf.connections.contains_key("Trigger"));
    let err = apply_operations(
        &base,
        &ops(json!([{"type": "removeNode", "nodeIds": ["nope"]}])),
    )
    .expect_err("unknown");
    assert_eq!(err.kind, OperationErrorKind::NodeNotFound("nope".into()));
}

#[test]
fn update_node_merges_shallowly() {
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "2", "updates": {"parameters": {"method": "POST"}, "disabled": true}}])),
    )
    .expect("update");
    let n = wf.node_by_id("2").expect("node");
    assert_eq!(n.parameters.len(), 1);
    assert_eq!(n.parameters["method"], json!("POST"));
    assert!(n.is_disabled());
    assert_eq!(n.name, "HTTP Request");
}

#[test]
fn update_node_name_change_is_a_rename() {
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "2", "updates": {"name": "Fetch"}}])),
    )
    .expect("update");
    assert!(!wf.references_name("HTTP Request"));
    assert!(wf.connections.contains_key("Fetch"));
}

#[test]
fn update_node_errors() {
    let err = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "zz", "updates": {}}])),
    )
    .expect_err("unknown");
    assert_eq!(err.kind, OperationErrorKind::NodeNotFound("zz".into()));
    let err = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "2", "updates": {"position": "here"}}])),
    )
    .expect_err("bad position");
    assert!(
        matches!(err.kind, OperationErrorKind::InvalidUpdate { .. }),
        "{err}"
    );
    let err = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "2", "updates": {"name": "Set"}}])),
    )
    .expect_err("name clash");
    assert_eq!(
        err.kind,
        OperationErrorKind::DuplicateNodeName("Set".into())
    );
    let err = apply_operations(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "2", "updates": {"id": "3"}}])),
    )
    .expect_err("id clash");
    assert!(err.to_string().contains("id `3`"), "{err}");
}

#[test]
fn set_and_merge_connections() {
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "setConnections", "connections": {"Set": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]}}}])),
    )
    .expect("set");
    assert_eq!(wf.edges().len(), 1);

    let merge = json!({"type": "mergeConnections", "connections": {
        "HTTP Request": {"main": [[{"node": "Set", "type": "main", "index": 0}], [{"node": "Agent", "type": "main", "index": 0}]]},
        "Set": {"main": [[{"node": "Agent", "type": "main", "index": 0}, {"node": "Agent", "type": "main", "index": 0}]]}
    }});
    let wf = apply_operations(&sample(), &ops(json!([merge]))).expect("merge");
    // The null slot is filled, the existing connection is not duplicated, in-batch duplicates
    // are dropped.
    assert_eq!(
        wf.connections["HTTP Request"]["main"],
        vec![
            Some(vec![Connection::new("Set", "main", 0)]),
            Some(vec![Connection::new("Agent", "main", 0)])
        ]
    );
    assert_eq!(
        wf.connections["Set"]["main"],
        vec![Some(vec![Connection::new("Agent", "main", 0)])]
    );
    assert_eq!(wf.edges().len(), 5);
}

#[test]
fn remove_connection_happy_and_missing() {
    let op = json!({"type": "removeConnection", "sourceNode": "Model", "targetNode": "Agent",
                    "connectionType": "ai_languageModel", "sourceOutputIndex": 0, "targetInputIndex": 0});
    let wf = apply_operations(&sample(), &ops(json!([op.clone()]))).expect("remove");
    assert!(wf.incoming("Agent", None).is_empty());
    let err = apply_operations(&wf, &ops(json!([op]))).expect_err("gone");
    assert!(matches!(
        err.kind,
        OperationErrorKind::ConnectionNotFound { .. }
    ));
    assert!(
        err.to_string()
            .contains("Model[ai_languageModel][0] → Agent[0]"),
        "{err}"
    );
    let wrong_type =
        json!({"type": "removeConnection", "sourceNode": "Model", "targetNode": "Agent"});
    assert!(apply_operations(&sample(), &ops(json!([wrong_type]))).is_err());
}

#[test]
fn set_name() {
    let wf = apply_operations(&sample(), &ops(json!([{"type": "setName", "name": "New"}])))
        .expect("name");
    assert_eq!(wf.name.as_deref(), Some("New"));
}

#[test]
fn rename_node_updates_keys_targets_expressions_and_pin_data() {
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "renameNode", "nodeId": "2", "newName": "Fetch Data"}])),
    )
    .expect("rename");
    assert!(wf.node_by_name("Fetch Data").is_some());
    assert!(!wf.references_name("HTTP Request"));
    assert_eq!(wf.outgoing("Trigger", None)[0].target.node, "Fetch Data");
    assert_eq!(
        wf.outgoing("Fetch Data", Some("main"))[0].target.node,
        "Set"
    );
    assert_eq!(
        wf.node_by_name("Set").expect("set").parameters["value"],
        json!("={{ $('Fetch Data').item.json.x }} {{ $node[\"Fetch Data\"].json.y }}")
    );
    assert!(wf.extra["pinData"].get("Fetch Data").is_some());
    assert!(wf.extra["pinData"].get("HTTP Request").is_none());

    // $node.Set → $node.Renamed, but $node.Settings is left alone; by old name.
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "renameNode", "oldName": "Set", "newName": "Renamed"}])),
    )
    .expect("rename");
    assert_eq!(
        wf.node_by_name("Agent").expect("agent").parameters["text"],
        json!("={{ $node.Renamed.json.z }} {{ $node.Settings.json }}")
    );
    // A new name that is not an identifier switches to the bracket form.
    let wf = apply_operations(
        &sample(),
        &ops(json!([{"type": "renameNode", "oldName": "Set", "newName": "My Set"}])),
    )
    .expect("rename");
    assert_eq!(
        wf.node_by_name("Agent").expect("agent").parameters["text"],
        json!("={{ $node[\"My Set\"].json.z }} {{ $node.Settings.json }}")
    );
}

#[test]
fn rename_node_errors() {
    let base = sample();
    let cases = [
        (
            json!({"type": "renameNode", "nodeId": "nope", "newName": "X"}),
            OperationErrorKind::NodeNotFound("nope".into()),
        ),
        (
            json!({"type": "renameNode", "oldName": "Nope", "newName": "X"}),
            OperationErrorKind::NodeNotFound("Nope".into()),
        ),
        (
            json!({"type": "renameNode", "nodeId": "2", "newName": "Set"}),
            OperationErrorKind::DuplicateNodeName("Set".into()),
        ),
        (
            json!({"type": "renameNode", "nodeId": "2", "newName": ""}),
            OperationErrorKind::EmptyName,
        ),
        (
            json!({"type": "renameNode", "newName": "X"}),
            OperationErrorKind::MissingRenameTarget,
        ),
    ];
    for (op, kind) in cases {
        let err = apply_operations(&base, &ops(json!([op]))).expect_err("error");
        assert_eq!(err.kind, kind);
    }
    // Renaming to the same name is a no-op.
    let same = apply_operations(
        &base,
        &ops(json!([{"type": "renameNode", "nodeId": "2", "newName": "HTTP Request"}])),
    )
    .expect("same");
    assert_eq!(same, base);
}

#[test]
fn rename_in_expression_forms() {
    let r = |s: &str| rename_in_expression(s, "A'b", "C");
    assert_eq!(r("$('A\\'b').item").as_deref(), Some("$('C').item"));
    assert_eq!(r("$(\"A'b\").item").as_deref(), Some("$(\"C\").item"));
    assert_eq!(r("$items(\"A'b\")").as_deref(), Some("$items(\"C\")"));
    assert_eq!(r("nothing here"), None);
    assert_eq!(
        rename_in_expression("$node[\"Say \\\"hi\\\"\"].json", "Say \"hi\"", "Hi").as_deref(),
        Some("$node[\"Hi\"].json")
    );
    assert_eq!(
        rename_in_expression("$node.Ab.x $node.Abc", "Ab", "Z").as_deref(),
        Some("$node.Z.x $node.Abc")
    );
}

#[test]
fn batches_are_atomic() {
    let base = sample();
    let batch = ops(json!([
        {"type": "setName", "name": "Changed"},
        {"type": "removeNode", "nodeIds": ["1"]},
        {"type": "updateNode", "nodeId": "missing", "updates": {}}
    ]));
    let err = apply_operations(&base, &batch).expect_err("third fails");
    assert_eq!(err.index, 2);
    assert_eq!(err.op, "updateNode");
    let mut in_place = base.clone();
    let err2 = agentgraph_std_tools::operations::apply_operations_in_place(&mut in_place, &batch)
        .expect_err("fails");
    assert_eq!(err, err2);
    assert_eq!(in_place, base);
}

#[test]
fn workflow_helpers() {
    let wf = sample();
    assert_eq!(wf.unique_name("Set"), "Set1");
    assert_eq!(wf.unique_name("Code"), "Code");
    let mut wf2 = wf.clone();
    wf2.add_node(node("9", "Set1"));
    wf2.add_node(node("10", "Set3"));
    assert_eq!(wf2.unique_name("Set"), "Set2");
    assert_eq!(wf2.unique_name("Set3"), "Set4");
    assert_eq!(wf.node_by_id("4").map(|n| n.name.as_str()), Some("Model"));
    assert_eq!(wf.incoming("Agent", Some("ai_languageModel")).len(), 1);
    assert!(wf.incoming("Agent", Some("main")).is_empty());
    assert_eq!(
        wf.connected_nodes("HTTP Request")
            .into_iter()
            .collect::<Vec<_>>(),
        ["Set", "Trigger"]
    );
    assert!(wf.is_connected("Set") && !wf.is_connected("Nobody"));
    assert_eq!(wf.node_by_id("2").map(|n| n.version()), Some(4.2));
}

// ---------------------------------------------------------------------------------------------
// Reducer and node
// ---------------------------------------------------------------------------------------------

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
    let up = node.compute(Some(&wf), None).expect("nothing queued");
    assert!(up.writes.is_empty());
    let q = json!([{"type": "setName", "name": "Z"}]);
    let up = node.compute(Some(&wf), Some(&q)).expect("apply");
    assert_eq!(up.writes[0].0, "workflow");
    assert_eq!(up.writes[0].1["name"], json!("Z"));
    assert_eq!(up.writes[1], ("operations".to_string(), Value::Null));
    // An empty workflow channel is an empty workflow.
    let q = json!([{"type": "addNodes", "nodes": [node_json("1", "A")]}]);
    let up = node.compute(None, Some(&q)).expect("from empty");
    assert_eq!(up.writes[0].1["nodes"][0]["name"], json!("A"));
    let bad = json!([{"type": "removeNode", "nodeIds": ["x"]}]);
    match node.compute(Some(&wf), Some(&bad)) {
        Err(NodeError::Failed { code, .. }) => {
            assert_eq!(code.as_deref(), Some("operation_failed"))
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    match node.compute(Some(&json!({"nodes": 1})), Some(&q)) {
        Err(NodeError::Failed { code, .. }) => {
            assert_eq!(code.as_deref(), Some("invalid_workflow"))
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn node_json(id: &str, name: &str) -> Value {
    serde_json::to_value(node(id, name)).expect("node json")
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

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

const NAMES: [&str; 6] = ["A", "B", "C", "D", "E", "F"];

fn arb_connections() -> impl Strategy<Value = Connections> {
    prop::collection::vec(
        (0..6usize, 0..2usize, 0..6usize, 0..2u32, prop::bool::ANY),
        0..12,
    )
    .prop_map(|edges| {
        let mut wf = Workflow::default();
        for (s, out, t, idx, ai) in edges {
            let kind = if ai { "ai_tool" } else { "main" };
            wf.add_connection(NAMES[s], kind, out, Connection::new(NAMES[t], kind, idx));
        }
        wf.connections
    })
}

fn base_workflow(connections: Connections) -> Workflow {
    let mut wf = Workflow::named("P");
    for (i, n) in NAMES.iter().enumerate() {
        let mut nd = node(&format!("id{i}"), n);
        nd.parameters.insert(
            "expr".into(),
            json!(format!("={{{{ $('{n}').item.json }}}}")),
        );
        wf.add_node(nd);
    }
    wf.connections = connections;
    wf
}

fn arb_op() -> impl Strategy<Value = Operation> {
    prop_oneof![
        arb_connections().prop_map(|connections| Operation::MergeConnections { connections }),
        (0..6usize).prop_map(|i| Operation::SetName {
            name: NAMES[i].to_string()
        }),
        (0..6usize, 0..40u32).prop_map(|(i, x)| Operation::UpdateNode {
            node_id: format!("id{i}"),
            updates: serde_json::from_value(json!({"parameters": {"x": x}})).unwrap_or_default(),
        }),
        (0..12usize).prop_map(|i| Operation::AddNodes {
            nodes: vec![node(&format!("id{i}"), &format!("N{i}"))],
        }),
    ]
}

proptest! {
    #[test]
    fn applying_a_batch_equals_sequential_application(conns in arb_connections(), batch in prop::collection::vec(arb_op(), 0..8)) {
        let base = base_workflow(conns);
        let all = apply_operations(&base, &batch);
        let mut seq = Ok(base.clone());
        for op in &batch {
            seq = seq.and_then(|wf| apply_operations(&wf, std::slice::from_ref(op)));
        }
        match (all, seq) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "batch {:?} vs sequential {:?}", a.is_ok(), b.is_ok()),
        }
    }

    #[test]
    fn merge_connections_is_idempotent(conns in arb_connections(), extra in arb_connections()) {
        let base = base_workflow(conns);
        let op = Operation::MergeConnections { connections: extra };
        let once = apply_operations(&base, std::slice::from_ref(&op)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let twice = apply_operations(&once, std::slice::from_ref(&op)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&once, &twice);
        // Every merged connection is present exactly once per slot.
        for e in once.edges() {
            let n = once.edges().iter().filter(|f| **f == e).count();
            prop_assert_eq!(n, 1);
        }
    }

    #[test]
    fn remove_node_leaves_no_dangling_connection(conns in arb_connections(), picks in prop::collection::btree_set(0..6usize, 1..4)) {
        let base = base_workflow(conns);
        let ids: Vec<String> = picks.iter().map(|i| format!("id{i}")).collect();
        let wf = apply_operations(&base, &[Operation::RemoveNode { node_ids: ids }]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for i in &picks {
            prop_assert!(!wf.references_name(NAMES[*i]));
            prop_assert!(wf.node_by_name(NAMES[*i]).is_none());
        }
        for e in wf.edges() {
            prop_assert!(wf.node_by_name(&e.source).is_some() && wf.node_by_name(&e.target.node).is_some());
        }
        prop_assert_eq!(wf.edges().len(), base.edges().iter().filter(|e| {
            !picks.iter().any(|i| e.source == NAMES[*i] || e.target.node == NAMES[*i])
        }).count());
    }

    #[test]
    fn rename_leaves_no_reference_to_the_old_name(conns in arb_connections(), i in 0..6usize, new in "[A-Za-z][A-Za-z0-9 ]{0,8}") {
        let base = base_workflow(conns);
        prop_assume!(!NAMES.contains(&new.as_str()));
        let op = Operation::RenameNode { node_id: Some(format!("id{i}")), old_name: None, new_name: new.clone() };
        let wf = apply_operations(&base, &[op]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!wf.references_name(NAMES[i]));
        prop_assert_eq!(wf.edges().len(), base.edges().len());
        let expr = wf.nodes[i].parameters["expr"].as_str().unwrap_or_default().to_string();
        prop_assert!(expr.contains(&new));
        let renamed_edges = base.edges().iter().filter(|e| e.source == NAMES[i] || e.target.node == NAMES[i]).count();
        let now = wf.edges().iter().filter(|e| e.source == new || e.target.node == new).count();
        prop_assert_eq!(renamed_edges, now);
    }
}
