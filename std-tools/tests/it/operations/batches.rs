//! Batches of parallel tool calls: duplicates, removals with connections, positions and
//! unique names, the report to the agent, and failing batches.

use super::*;

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
