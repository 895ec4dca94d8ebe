//! Reachability rules: unconnected sub-nodes, unreachable nodes, triggers, expressions
//! referencing missing nodes.

use super::*;

#[test]
fn sub_node_not_connected() {
    let bad = wf(vec![trigger(), model("Model")], json!({}));
    let r = all(&bad);
    assert!(on(&r, codes::SUB_NODE_NOT_CONNECTED, "Model"));
    assert!(
        !on(&r, codes::UNREACHABLE_NODE, "Model"),
        "sub-nodes are not reachability targets"
    );
    let good = wf(
        vec![trigger(), agent("Agent", json!({})), model("Model")],
        json!({"Start": main_to("Agent"), "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}}),
    );
    assert_eq!(count(&all(&good), codes::SUB_NODE_NOT_CONNECTED), 0);
}

#[test]
fn unreachable_nodes() {
    let sticky = node(
        "Note",
        "n8n-nodes-base.stickyNote",
        1.0,
        json!({"content": "hi"}),
    );
    let bad = wf(
        vec![
            trigger(),
            set("A"),
            set("Island"),
            set("Tail"),
            sticky.clone(),
        ],
        json!({"Start": main_to("A"), "Island": main_to("Tail")}),
    );
    let r = all(&bad);
    assert!(on(&r, codes::UNREACHABLE_NODE, "Island"));
    assert!(on(&r, codes::UNREACHABLE_NODE, "Tail"));
    assert!(!on(&r, codes::UNREACHABLE_NODE, "A"));
    assert!(
        !on(&r, codes::UNREACHABLE_NODE, "Note"),
        "sticky notes are never findings"
    );
    let good = wf(
        vec![trigger(), set("A"), set("Island"), sticky],
        json!({"Start": main_to("A"), "A": main_to("Island")}),
    );
    assert_eq!(count(&all(&good), codes::UNREACHABLE_NODE), 0);
}

#[test]
fn trigger_not_connected() {
    let hook = node("Hook", "n8n-nodes-base.webhook", 2.0, json!({"path": "p"}));
    let bad = wf(
        vec![trigger(), hook.clone(), set("A")],
        json!({"Start": main_to("A")}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::TRIGGER_NOT_CONNECTED, "Hook"),
        "{}",
        r.render_text("")
    );
    assert!(!on(&r, codes::TRIGGER_NOT_CONNECTED, "Start"));
    let good = wf(
        vec![trigger(), hook, set("A")],
        json!({"Start": main_to("A"), "Hook": main_to("A")}),
    );
    assert_eq!(count(&all(&good), codes::TRIGGER_NOT_CONNECTED), 0);
    // a lone trigger is a workflow being started, not a dangling node
    assert_eq!(
        count(
            &all(&wf(vec![trigger()], json!({}))),
            codes::TRIGGER_NOT_CONNECTED
        ),
        0
    );
}

#[test]
fn expressions_referencing_missing_nodes() {
    let with = |expr: &str| {
        wf(
            vec![
                trigger(),
                node(
                    "A",
                    "n8n-nodes-base.set",
                    3.4,
                    json!({"assignments": {"assignments": [{"name": "x", "value": expr, "type": "string"}]}}),
                ),
            ],
            json!({"Start": main_to("A")}),
        )
    };
    for expr in [
        "={{ $('Ghost').item.json.x }}",
        "={{ $node[\"Ghost\"].json.x }}",
        "={{ $node.Ghost.json.x }}",
    ] {
        let r = all(&with(expr));
        let f = r.with_code(codes::EXPRESSION_MISSING_NODE).next();
        assert!(f.is_some(), "{expr}");
        assert_eq!(
            f.and_then(|f| f.path.clone()).as_deref(),
            Some("assignments.assignments[0].value")
        );
    }
    let r = all(&with(
        "={{ $('Start').item.json.x }} {{ $node[\"A\"].json }}",
    ));
    assert_eq!(count(&r, codes::EXPRESSION_MISSING_NODE), 0);
    // plain text is not evaluated
    assert_eq!(
        count(&all(&with("$('Ghost')")), codes::EXPRESSION_MISSING_NODE),
        0
    );
}
