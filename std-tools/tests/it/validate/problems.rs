//! `unfinished` (the DSL's `structure_problems(workflow)`, which the single-agent builder asks
//! before it lets a build turn end): what leaves a workflow unfinished, nothing for a finished
//! one.

use super::*;
use agentgraph_std_tools::validate::unfinished;

fn problems(workflow: Value) -> Vec<String> {
    match Workflow::from_value(workflow) {
        Ok(w) => unfinished(&w, builtin()),
        Err(_) => Vec::new(),
    }
}

fn codes_of(list: &[String]) -> Vec<&str> {
    list.iter()
        .map(|p| p.split(':').next().unwrap_or(""))
        .collect()
}

#[test]
fn a_lone_action_node_has_no_trigger() {
    let p = problems(json!({"nodes": [set("Mark")], "connections": {}}));
    assert_eq!(codes_of(&p), ["NO_TRIGGER"], "{p:?}");
}

#[test]
fn a_trigger_and_a_node_it_does_not_reach_are_reported() {
    let p = problems(json!({"nodes": [trigger(), set("Mark")], "connections": {}}));
    let c = codes_of(&p);
    assert!(c.contains(&"TRIGGER_NOT_CONNECTED"), "{p:?}");
    assert!(c.contains(&"UNREACHABLE_NODE"), "{p:?}");
    // Each line names the node concerned, for the agent to act on.
    assert!(p.iter().any(|l| l.contains("Mark")), "{p:?}");
}

#[test]
fn a_connected_workflow_has_none() {
    let done =
        json!({"nodes": [trigger(), set("Mark")], "connections": {"Start": main_to("Mark")}});
    assert_eq!(problems(done), Vec::<String>::new());
}

#[test]
fn an_unknown_type_is_a_problem() {
    let ghost = node("Ghost", "n8n-nodes-base.doesNotExist", 1.0, json!({}));
    let p =
        problems(json!({"nodes": [trigger(), ghost], "connections": {"Start": main_to("Ghost")}}));
    assert!(codes_of(&p).contains(&"NODE_TYPE_NOT_FOUND"), "{p:?}");
}
