//! Checklist rules, validators and output expectations on fixed workflows.

use crate::fixtures::branching_workflow;
use agentgraph_eval::cases::{Checklist, ConnectionRule, Expect, TypeSpec};
use agentgraph_eval::score::{
    check_expectations, connected, score_checklist, score_workflow, NOT_A_WORKFLOW,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};

const WEBHOOK: &str = "n8n-nodes-base.webhook";
const IF: &str = "n8n-nodes-base.if";
const SET: &str = "n8n-nodes-base.set";
const AGENT: &str = "@n8n/n8n-nodes-langchain.agent";

fn wf() -> Workflow {
    Workflow::from_value_ref(&branching_workflow()).expect("the fixture is a workflow")
}

fn one(t: &str) -> TypeSpec {
    TypeSpec::One(t.into())
}

fn any(ts: &[&str]) -> TypeSpec {
    TypeSpec::Any(ts.iter().map(|t| t.to_string()).collect())
}

fn rule(from: TypeSpec, to: TypeSpec, kind: &str, direct: bool) -> ConnectionRule {
    ConnectionRule {
        from,
        to,
        kind: kind.into(),
        direct,
    }
}

fn passes(checklist: Checklist) -> Vec<bool> {
    score_checklist(&wf(), &checklist)
        .items
        .iter()
        .map(|i| i.pass)
        .collect()
}

#[test]
fn a_trigger_rule_passes_on_its_type_or_an_alternative_and_fails_otherwise() {
    let rule = |t: TypeSpec| Checklist {
        trigger: Some(t),
        ..Checklist::default()
    };
    assert_eq!(passes(rule(one(WEBHOOK))), [true]);
    assert_eq!(passes(rule(one("n8n-nodes-base.scheduleTrigger"))), [false]);
    assert_eq!(
        passes(rule(any(&["n8n-nodes-base.scheduleTrigger", WEBHOOK]))),
        [true]
    );
}

#[test]
fn a_node_rule_matches_exact_types_alternatives_and_prefixes() {
    let nodes = Checklist {
        nodes: vec![
            one(IF),
            one("n8n-nodes-base.switch"),
            any(&["n8n-nodes-base.switch", IF]),
            one("@n8n/n8n-nodes-langchain.lmChat*"),
            one("@n8n/n8n-nodes-langchain.memory*"),
        ],
        ..Checklist::default()
    };
    assert_eq!(passes(nodes), [true, false, true, true, false]);
}

#[test]
fn a_main_connection_follows_data_through_other_nodes_unless_direct() {
    let w = wf();
    // Hook → Check → High: a path, not an edge.
    assert!(connected(&w, &rule(one(WEBHOOK), one(SET), "main", false)));
    assert!(!connected(&w, &rule(one(WEBHOOK), one(SET), "main", true)));
    assert!(connected(&w, &rule(one(WEBHOOK), one(IF), "main", true)));
    // Hook → Check → High → Agent.
    assert!(connected(
        &w,
        &rule(one(WEBHOOK), one(AGENT), "main", false)
    ));
    // Against the flow.
    assert!(!connected(&w, &rule(one(SET), one(WEBHOOK), "main", false)));
    // A node does not reach itself without a loop.
    assert!(!connected(&w, &rule(one(IF), one(IF), "main", false)));
}

#[test]
fn an_ai_connection_must_be_a_direct_edge_of_its_kind() {
    let w = wf();
    let model = one("@n8n/n8n-nodes-langchain.lmChat*");
    assert!(connected(
        &w,
        &rule(model.clone(), one(AGENT), "ai_languageModel", false)
    ));
    assert!(!connected(
        &w,
        &rule(model.clone(), one(AGENT), "ai_tool", false)
    ));
    assert!(!connected(
        &w,
        &rule(one(AGENT), model, "ai_languageModel", false)
    ));
}

#[test]
fn the_checklist_score_is_items_met_over_items_with_labels() {
    let checklist = Checklist {
        trigger: Some(one(WEBHOOK)),
        nodes: vec![any(&["n8n-nodes-base.switch", "n8n-nodes-base.filter"])],
        connections: vec![
            rule(one(WEBHOOK), one(SET), "main", false),
            rule(one(SET), one(WEBHOOK), "main", false),
        ],
    };
    let s = score_checklist(&wf(), &checklist);
    assert_eq!((s.passed, s.total, s.score), (2, 4, Some(0.5)));
    assert!(!s.all_pass());
    let labels: Vec<&str> = s.items.iter().map(|i| i.item.as_str()).collect();
    assert_eq!(
        labels,
        [
            "trigger webhook",
            "node switch|filter",
            "webhook → set",
            "set → webhook"
        ]
    );
    let empty = score_checklist(&wf(), &Checklist::default());
    assert_eq!((empty.score, empty.total), (None, 0));
    assert!(empty.all_pass());
}

#[test]
fn the_validators_report_findings_by_rule() {
    let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
    // A Code node alone: no trigger, so the workflow can never start.
    let untriggered = json!({"name": "x", "nodes": [
        {"name": "Code", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [0, 0],
         "parameters": {"jsCode": "return [];"}}
    ], "connections": {}});
    let s = score_workflow(&untriggered, &Checklist::default(), &catalogue);
    assert!(s.non_empty);
    assert_eq!(s.nodes, 1);
    assert!(!s.structure.valid);
    assert_eq!(s.structure.findings.get("NO_TRIGGER"), Some(&1));
    // The same Code node after a Manual trigger is a complete workflow.
    let triggered = json!({"name": "x", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Code", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [200, 0],
         "parameters": {"jsCode": "return [];"}}
    ], "connections": {"Start": {"main": [[{"node": "Code", "type": "main", "index": 0}]]}}});
    let s = score_workflow(&triggered, &Checklist::default(), &catalogue);
    assert!(s.structure.valid, "{:?}", s.structure);
    assert_eq!(s.structure.errors, 0);
}

#[test]
fn a_lone_trigger_is_not_structure_valid() {
    let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
    let lone = json!({"name": "x", "nodes": [
        {"name": "Every morning", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2,
         "position": [0, 0], "parameters": {}},
        {"name": "Note", "type": "n8n-nodes-base.stickyNote", "typeVersion": 1, "position": [0, 200],
         "parameters": {"content": "does nothing yet"}}
    ], "connections": {}});
    let s = score_workflow(&lone, &Checklist::default(), &catalogue);
    assert!(s.non_empty);
    assert!(!s.structure.valid, "{:?}", s.structure);
    assert_eq!(s.structure.findings.get("ONLY_TRIGGER"), Some(&1));
}

#[test]
fn an_empty_workflow_and_a_non_workflow_are_never_valid() {
    let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
    let empty = score_workflow(
        &json!({"nodes": [], "connections": {}}),
        &Checklist::default(),
        &catalogue,
    );
    assert!(!empty.non_empty);
    assert!(!empty.structure.valid && !empty.configuration.valid);
    let broken = score_workflow(
        &json!({"nodes": "not a list"}),
        &Checklist::default(),
        &catalogue,
    );
    assert!(!broken.non_empty);
    assert_eq!(broken.structure.findings.get(NOT_A_WORKFLOW), Some(&1));
}

#[test]
fn expectations_match_items_values_and_alternatives() {
    let a = json!({"orderId": "A-1", "priority": "high", "n": "55"});
    let b = json!({"nested": {"list": [1, 2]}});
    let items: Vec<&Value> = vec![&a, &b];
    let expect = vec![
        Expect::Item(json!({"priority": "high", "orderId": "A-1"})),
        Expect::Item(json!({"priority": "High"})),
        Expect::Item(json!({"n": 55})),
        Expect::Item(json!({"nested": {"list": [1]}})),
        Expect::Value(json!(2)),
        Expect::Value(json!("normal")),
        Expect::OneOf(vec![json!("low"), json!("high")]),
    ];
    let met: Vec<bool> = check_expectations(&expect, &items)
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    assert_eq!(met, [true, false, true, false, true, false, true]);
}
