//! Serialization in the reference shape, then each operation: happy path, errors,
//! batch atomicity and the workflow helpers.

use super::*;

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
