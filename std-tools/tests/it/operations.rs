//! Workflow operations: each operation's happy path and errors, atomicity, the reducer, the
//! apply node in a graph, and properties (order, idempotent merge, no dangling connections).

use agentgraph_runtime::reducer::Reducer;
use agentgraph_runtime::{
    ChannelSpec, GraphBuilder, Input, ReducerRegistry, RunConfig, ValueType, END, START,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{
    apply_operations, apply_operations_with, parse_operations, register, rename_in_expression,
    ApplyNote, ApplyOperationsNode, Operation, OperationErrorKind, OperationsReducer,
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
    // An unknown id is skipped and reported; the other ids are removed.
    let applied = apply_operations_with(
        &base,
        &ops(json!([{"type": "removeNode", "nodeIds": ["nope", "2"]}])),
        None,
    )
    .expect("unknown ids are skipped");
    assert!(applied.workflow.node_by_id("2").is_none());
    assert_eq!(
        applied.notes,
        [ApplyNote::Skipped {
            index: 0,
            op: "removeNode",
            reason: OperationErrorKind::NodeNotFound("nope".into())
        }]
    );
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
    let applied = apply_operations_with(
        &sample(),
        &ops(json!([{"type": "updateNode", "nodeId": "zz", "updates": {}}])),
        None,
    )
    .expect("an unknown node is skipped");
    assert_eq!(applied.workflow, sample());
    assert!(
        matches!(&applied.notes[..], [ApplyNote::Skipped { reason: OperationErrorKind::NodeNotFound(k), .. }] if k == "zz")
    );
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
    // A connection that is not there is skipped and reported.
    let applied = apply_operations_with(&wf, &ops(json!([op])), None).expect("gone");
    assert_eq!(applied.workflow, wf);
    assert_eq!(applied.notes.len(), 1);
    assert!(matches!(
        &applied.notes[0],
        ApplyNote::Skipped {
            op: "removeConnection",
            reason: OperationErrorKind::ConnectionNotFound { .. },
            ..
        }
    ));
    let note = applied.notes[0].to_string();
    assert!(
        note.contains("Model[ai_languageModel][0] → Agent[0]"),
        "{note}"
    );
    let wrong_type =
        json!({"type": "removeConnection", "sourceNode": "Model", "targetNode": "Agent"});
    let applied =
        apply_operations_with(&sample(), &ops(json!([wrong_type])), None).expect("skipped");
    assert_eq!(applied.workflow, sample());
    assert_eq!(applied.notes.len(), 1);
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
    // A node that is gone is skipped and reported.
    for (op, key) in [
        (
            json!({"type": "renameNode", "nodeId": "nope", "newName": "X"}),
            "nope",
        ),
        (
            json!({"type": "renameNode", "oldName": "Nope", "newName": "X"}),
            "Nope",
        ),
    ] {
        let applied = apply_operations_with(&base, &ops(json!([op])), None).expect("skipped");
        assert_eq!(applied.workflow, base);
        assert_eq!(
            applied.notes,
            [ApplyNote::Skipped {
                index: 0,
                op: "renameNode",
                reason: OperationErrorKind::NodeNotFound(key.into())
            }]
        );
    }
    let cases = [
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
        {"type": "updateNode", "nodeId": "2", "updates": {"position": "here"}}
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
        // Removals of nodes that may be gone already (parallel tool calls).
        prop::collection::vec(0..8usize, 1..3).prop_map(|ids| Operation::RemoveNode {
            node_ids: ids.iter().map(|i| format!("id{i}")).collect(),
        }),
        (0..6usize, 0..6usize).prop_map(|(s, t)| Operation::RemoveConnection {
            source_node: NAMES[s].to_string(),
            target_node: NAMES[t].to_string(),
            connection_type: "main".into(),
            source_output_index: 0,
            target_input_index: 0,
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
            (Ok(a), Ok(b)) => {
                // No connection is left from or to a missing node.
                for e in a.edges() {
                    prop_assert!(a.node_by_name(&e.source).is_some() && a.node_by_name(&e.target.node).is_some());
                }
                prop_assert_eq!(a, b)
            }
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

// ---------------------------------------------------------------------------------------------
// Batches of parallel tool calls
// ---------------------------------------------------------------------------------------------

fn typed(id: &str, name: &str, node_type: &str, version: f64, position: [f64; 2]) -> Value {
    serde_json::to_value(WorkflowNode::new(id, name, node_type, version, position))
        .expect("node json")
}

#[test]
fn duplicate_remove_node_in_one_batch_applies_cleanly() {
    let applied = apply_operations_with(
        &sample(),
        &ops(json!([
            {"type": "removeNode", "nodeIds": ["2"]},
            {"type": "removeNode", "nodeIds": ["2"]}
        ])),
        None,
    )
    .expect("the second removal is skipped");
    assert!(applied.workflow.node_by_name("HTTP Request").is_none());
    assert!(!applied.workflow.references_name("HTTP Request"));
    assert_eq!(applied.workflow.nodes.len(), 4);
    assert_eq!(
        applied.notes,
        [ApplyNote::Skipped {
            index: 1,
            op: "removeNode",
            reason: OperationErrorKind::NodeNotFound("2".into())
        }]
    );
    assert!(applied.notes[0].to_string().contains("`2`"));
}

#[test]
fn update_and_remove_of_the_same_node_in_one_batch() {
    for batch in [
        json!([
            {"type": "updateNode", "nodeId": "2", "updates": {"parameters": {"url": "https://x"}}},
            {"type": "removeNode", "nodeIds": ["2"]}
        ]),
        json!([
            {"type": "removeNode", "nodeIds": ["2"]},
            {"type": "updateNode", "nodeId": "2", "updates": {"parameters": {"url": "https://x"}}}
        ]),
    ] {
        let applied = apply_operations_with(&sample(), &ops(batch), None).expect("applies");
        assert!(applied.workflow.node_by_id("2").is_none());
        assert!(!applied.workflow.references_name("HTTP Request"));
        assert!(applied.notes.len() <= 1);
    }
}

#[test]
fn duplicate_remove_connection_in_one_batch() {
    let op =
        json!({"type": "removeConnection", "sourceNode": "Trigger", "targetNode": "HTTP Request"});
    let applied =
        apply_operations_with(&sample(), &ops(json!([op.clone(), op])), None).expect("applies");
    assert!(applied.workflow.incoming("HTTP Request", None).is_empty());
    assert_eq!(applied.workflow.edges().len(), sample().edges().len() - 1);
    assert_eq!(applied.notes.len(), 1);
    assert!(matches!(
        applied.notes[0],
        ApplyNote::Skipped {
            index: 1,
            op: "removeConnection",
            ..
        }
    ));
}

#[test]
fn remove_and_connect_in_one_batch_leaves_no_dangling_connection() {
    let applied = apply_operations_with(
        &sample(),
        &ops(json!([
            {"type": "removeNode", "nodeIds": ["3"]},
            {"type": "mergeConnections", "connections": {
                "Set": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
                "Agent": {"main": [[{"node": "Set", "type": "main", "index": 0}, {"node": "Trigger", "type": "main", "index": 0}]]}
            }}
        ])),
        None,
    )
    .expect("applies");
    let wf = &applied.workflow;
    assert!(!wf.references_name("Set"));
    for e in wf.edges() {
        assert!(wf.node_by_name(&e.source).is_some() && wf.node_by_name(&e.target.node).is_some());
    }
    assert_eq!(
        wf.outgoing("Agent", Some("main")).len(),
        1,
        "Agent → Trigger stays"
    );
    let dropped: Vec<(&str, &str, &str)> = applied
        .notes
        .iter()
        .filter_map(|n| match n {
            ApplyNote::DroppedConnection {
                source,
                target,
                missing,
                ..
            } => Some((source.as_str(), target.as_str(), missing.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, [("Agent", "Set", "Set"), ("Set", "Agent", "Set")]);
    assert!(applied.notes[0].to_string().contains("\"Agent\" → \"Set\""));
}

/// The six nodes of the demo ("every Monday, summarize my unread Gmail with AI and email me"),
/// queued by one batch of add_nodes calls: each placed in the empty workflow, at [240, 300].
fn demo_batch() -> Vec<Operation> {
    let at = FIRST;
    let nodes = [
        (
            "t",
            "Schedule Trigger",
            "n8n-nodes-base.scheduleTrigger",
            1.2,
        ),
        ("g", "Get Unread", "n8n-nodes-base.gmail", 2.1),
        ("a", "AI Agent", "@n8n/n8n-nodes-langchain.agent", 2.2),
        (
            "m",
            "OpenAI Chat Model",
            "@n8n/n8n-nodes-langchain.lmChatOpenAi",
            1.2,
        ),
        (
            "k",
            "Memory",
            "@n8n/n8n-nodes-langchain.memoryBufferWindow",
            1.3,
        ),
        ("s", "Send Summary", "n8n-nodes-base.gmail", 2.1),
    ];
    nodes
        .iter()
        .map(|(id, name, t, v)| {
            ops(json!({"type": "addNodes", "nodes": [typed(id, name, t, *v, at)]})).remove(0)
        })
        .collect()
}

const FIRST: [f64; 2] = [240.0, 300.0];

#[test]
fn nodes_added_in_one_batch_get_distinct_positions_by_the_spacing_rule() {
    let catalogue = Catalogue::builtin().expect("builtin catalogue");
    let applied = apply_operations_with(&Workflow::default(), &demo_batch(), Some(&catalogue))
        .expect("applies");
    assert!(applied.notes.is_empty(), "{:?}", applied.notes);
    let positions: Vec<(&str, (f64, f64))> = applied
        .workflow
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.xy()))
        .collect();
    // Main nodes left to right, 240 apart; sub-nodes 200 below the agent, 160 apart.
    assert_eq!(
        positions,
        [
            ("Schedule Trigger", (240.0, 300.0)),
            ("Get Unread", (480.0, 300.0)),
            ("AI Agent", (720.0, 300.0)),
            ("OpenAI Chat Model", (720.0, 500.0)),
            ("Memory", (880.0, 500.0)),
            ("Send Summary", (960.0, 300.0)),
        ]
    );
    // The same positions as when the nodes are applied one batch at a time.
    let mut seq = Workflow::default();
    for op in demo_batch() {
        seq = apply_operations_with(&seq, &[op], Some(&catalogue))
            .expect("applies")
            .workflow;
    }
    assert_eq!(seq, applied.workflow);

    // Without a catalogue, a node on a taken slot moves right until the slot is free.
    let wf = apply_operations(&Workflow::default(), &demo_batch()).expect("applies");
    let xs: Vec<(f64, f64)> = wf.nodes.iter().map(|n| n.xy()).collect();
    let expected: Vec<(f64, f64)> = (0..6).map(|i| (240.0 + 240.0 * i as f64, 300.0)).collect();
    assert_eq!(xs, expected);
    // An upsert keeps its position; sticky notes may overlap.
    let mut sticky = node("n", "Note");
    sticky.node_type = "n8n-nodes-base.stickyNote".into();
    sticky.set_xy(240.0, 300.0);
    let wf = apply_operations(
        &wf,
        &[Operation::AddNodes {
            nodes: vec![
                WorkflowNode::new(
                    "t",
                    "Schedule Trigger",
                    "n8n-nodes-base.scheduleTrigger",
                    1.2,
                    [480.0, 300.0],
                ),
                sticky,
            ],
        }],
    )
    .expect("applies");
    assert_eq!(wf.node_by_id("t").map(|n| n.xy()), Some((480.0, 300.0)));
    assert_eq!(wf.node_by_id("n").map(|n| n.xy()), Some((240.0, 300.0)));
}

#[test]
fn names_made_unique_in_a_batch_are_reported() {
    let applied = apply_operations_with(
        &Workflow::default(),
        &ops(json!([
            {"type": "addNodes", "nodes": [typed("c1", "Config", "n8n-nodes-base.set", 3.4, FIRST)]},
            {"type": "addNodes", "nodes": [typed("c2", "Config", "n8n-nodes-base.set", 3.4, FIRST)]}
        ])),
        None,
    )
    .expect("applies");
    assert_eq!(
        applied.workflow.node_by_id("c2").expect("c2").name,
        "Config1"
    );
    assert_eq!(
        applied.notes,
        [ApplyNote::Renamed {
            id: "c2".into(),
            requested: "Config".into(),
            name: "Config1".into()
        }]
    );
    let text = applied.notes[0].to_string();
    assert!(
        text.contains("\"Config\"") && text.contains("Refer to it as \"Config1\""),
        "{text}"
    );
}

#[test]
fn apply_node_reports_to_the_agent_in_the_batch_tool_message() {
    let node = ApplyOperationsNode::new().with_messages("messages");
    let wf = sample().to_value();
    let history = json!([
        {"type": "human", "id": "h", "content": "go"},
        {"type": "ai", "id": "ai", "content": "", "tool_calls": []},
        {"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "Successfully removed"},
        {"type": "tool", "id": "t2", "tool_call_id": "c2", "content": "Successfully removed"}
    ]);
    // Applied with a note: the last tool message of the batch gets it appended.
    let q =
        json!([{"type": "removeNode", "nodeIds": ["2"]}, {"type": "removeNode", "nodeIds": ["2"]}]);
    let out = node.outcome(Some(&wf), Some(&q), Some(&history));
    assert_eq!(out.update.writes.len(), 3);
    assert_eq!(
        out.update.writes[1],
        ("operations".to_string(), Value::Null)
    );
    let (channel, write) = &out.update.writes[2];
    assert_eq!(channel, "messages");
    assert_eq!(write[0]["id"], json!("t2"));
    assert_eq!(write[0]["tool_call_id"], json!("c2"));
    let content = write[0]["content"].as_str().expect("text");
    assert!(
        content.starts_with("Successfully removed\n\n[workflow update]"),
        "{content}"
    );
    assert!(content.contains("removeNode of `2` skipped"), "{content}");
    assert_eq!(out.event().expect("event")["status"], json!("note"));
    // Nothing to say: no message.
    let q = json!([{"type": "setName", "name": "N"}]);
    let out = node.outcome(Some(&wf), Some(&q), Some(&history));
    assert_eq!(out.update.writes.len(), 2);
    assert!(out.event().is_none());
    // Not applied: the workflow is not written, the queue is cleared, the agent is told.
    let q = json!([{"type": "setName", "name": "N"}, {"type": "renameNode", "nodeId": "2", "newName": "Set"}]);
    let out = node.outcome(Some(&wf), Some(&q), Some(&history));
    assert_eq!(
        out.update.writes[0],
        ("operations".to_string(), Value::Null)
    );
    let content = out.update.writes[1].1[0]["content"].as_str().expect("text");
    assert!(
        content.contains("NOT applied") && content.contains("operation 1 (renameNode)"),
        "{content}"
    );
    // Without a tool message after the last AI message, the notice is a human message.
    let out = node.outcome(
        Some(&wf),
        Some(&q),
        Some(&json!([{"type": "human", "id": "h", "content": "x"}])),
    );
    assert_eq!(out.update.writes[1].1[0]["type"], json!("human"));
}

#[tokio::test]
async fn a_failing_batch_clears_the_queue_and_the_next_batch_applies() {
    use agentgraph_runtime::reducer::AddMessages;
    // Turn 1 queues a batch that cannot apply; turn 2 a good one. The apply node runs after each.
    let bad = agentgraph_runtime::node_fn(|_| async {
        Ok(agentgraph_runtime::Update::new()
            .set(
                "ops",
                json!([{"type": "addNodes", "nodes": [node_json("1", "A")]},
                       {"type": "updateNode", "nodeId": "1", "updates": {"position": "here"}}]),
            )
            .set(
                "messages",
                json!([{"type": "ai", "id": "ai1", "content": "", "tool_calls": []},
                       {"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "added A"}]),
            ))
    });
    let good = agentgraph_runtime::node_fn(|_| async {
        Ok(agentgraph_runtime::Update::new().set(
            "ops",
            json!([{"type": "addNodes", "nodes": [node_json("2", "B")]},
                   {"type": "removeNode", "nodeIds": ["2"]},
                   {"type": "removeNode", "nodeIds": ["2"]},
                   {"type": "addNodes", "nodes": [node_json("3", "C")]}]),
        ))
    });
    let apply =
        || Arc::new(ApplyOperationsNode::with_channels("wf", "ops").with_messages("messages"));
    let g = GraphBuilder::new("ops")
        .channel(ChannelSpec::new("wf", ValueType::Json))
        .channel(
            ChannelSpec::new("ops", ValueType::Json)
                .reducer(Arc::new(OperationsReducer))
                .default_value(json!([])),
        )
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .node("bad", bad)
        .node("apply1", apply())
        .node("good", good)
        .node("apply2", apply())
        .chain(&[START, "bad", "apply1", "good", "apply2", END])
        .compile()
        .expect("compiles");
    let out = g
        .invoke(
            Input::values(json!({"wf": {"name": "W", "nodes": [], "connections": {}}})),
            RunConfig::default(),
        )
        .await
        .expect("runs: a failing batch is not fatal");
    let wf = Workflow::from_value(out.values["wf"].clone()).expect("workflow");
    assert_eq!(
        wf.node_names().collect::<Vec<_>>(),
        ["C"],
        "A was never added"
    );
    assert_eq!(out.values["ops"], json!([]));
    let messages = out.values["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        2,
        "the notice is appended to the tool message"
    );
    let tool = messages[1]["content"].as_str().expect("text");
    assert!(
        tool.starts_with("added A\n\n[workflow update failed]"),
        "{tool}"
    );
}
