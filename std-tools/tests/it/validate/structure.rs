//! Structure rules: triggers, node types and versions, ports, connections to missing nodes.

use super::*;

#[test]
fn no_trigger() {
    let bad = wf(vec![set("A")], json!({}));
    assert_eq!(count(&all(&bad), codes::NO_TRIGGER), 1);
    let good = wf(vec![trigger(), set("A")], json!({"Start": main_to("A")}));
    assert_eq!(count(&all(&good), codes::NO_TRIGGER), 0);
    // a disabled trigger does not count
    let mut t = trigger();
    t["disabled"] = json!(true);
    assert_eq!(count(&all(&wf(vec![t], json!({}))), codes::NO_TRIGGER), 1);
}

#[test]
fn empty_workflow() {
    // no nodes, or sticky notes only: one EMPTY_WORKFLOW error and nothing else
    let sticky = node(
        "Note",
        "n8n-nodes-base.stickyNote",
        1.0,
        json!({"content": "todo"}),
    );
    for w in [Workflow::default(), wf(vec![sticky], json!({}))] {
        let found = all(&w);
        let codes: Vec<&str> = found.findings.iter().map(|f| f.code).collect();
        assert_eq!(codes, ["EMPTY_WORKFLOW"]);
        assert_eq!(found.findings[0].severity, Severity::Error);
    }
}

#[test]
fn node_type_and_version_not_found() {
    let bad = wf(
        vec![
            trigger(),
            node("X", "n8n-nodes-base.doesNotExist", 1.0, json!({})),
            node(
                "H",
                "n8n-nodes-base.httpRequest",
                9.0,
                json!({"url": "https://x.y"}),
            ),
        ],
        json!({"Start": {"main": [[{"node": "X", "type": "main", "index": 0}, {"node": "H", "type": "main", "index": 0}]]}}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::NODE_TYPE_NOT_FOUND, "X"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::NODE_VERSION_NOT_FOUND, "H"));
    let good = wf(
        vec![
            trigger(),
            node(
                "H",
                "n8n-nodes-base.httpRequest",
                4.2,
                json!({"url": "https://x.y"}),
            ),
        ],
        json!({"Start": main_to("H")}),
    );
    let r = all(&good);
    assert_eq!(
        count(&r, codes::NODE_TYPE_NOT_FOUND) + count(&r, codes::NODE_VERSION_NOT_FOUND),
        0
    );
}

#[test]
fn ports_unresolvable() {
    let mut cat = Catalogue::new();
    let desc: NodeTypeDescription = serde_json::from_value(json!({
        "name": "x.broken", "version": 1, "group": ["transform"],
        "inputs": ["main"], "outputs": "={{ 42 }}", "properties": []
    }))
    .expect("description");
    cat.insert(desc);
    let ok: NodeTypeDescription = serde_json::from_value(json!({
        "name": "x.trigger", "version": 1, "group": ["trigger"],
        "inputs": [], "outputs": ["main"], "properties": []
    }))
    .expect("description");
    cat.insert(ok);
    let w = wf(
        vec![
            node("T", "x.trigger", 1.0, json!({})),
            node("B", "x.broken", 1.0, json!({})),
        ],
        json!({"T": main_to("B")}),
    );
    let r = validate_structure(&w, &cat);
    assert!(
        on(&r, codes::PORTS_UNRESOLVABLE, "B"),
        "{}",
        r.render_text("")
    );
    assert!(!on(&r, codes::PORTS_UNRESOLVABLE, "T"));
}

#[test]
fn connection_to_missing_node() {
    let bad = wf(vec![trigger()], json!({"Start": main_to("Ghost")}));
    assert!(on(&all(&bad), codes::CONNECTION_NODE_MISSING, "Start"));
    let good = wf(
        vec![trigger(), set("Ghost")],
        json!({"Start": main_to("Ghost")}),
    );
    assert_eq!(count(&all(&good), codes::CONNECTION_NODE_MISSING), 0);
}
