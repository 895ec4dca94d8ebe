//! Properties: a batch equals sequential application, idempotent merges, no dangling
//! connections.

use super::*;

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
