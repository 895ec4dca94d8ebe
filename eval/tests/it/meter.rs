//! The meter over fixed event sequences: a multi-agent builder run, and Instance AI turns
//! with a sub-agent (its calls counted once, also when the case was cut inside it).

use agentgraph_eval::meter::{Meter, Request};
use agentgraph_eval::row::Scores;
use agentgraph_eval::run::CaseRun;
use agentgraph_eval::Row;
use agentgraph_runtime::{Event, EventKind};
use serde_json::{json, Value};

fn update(ns: &[&str], node: &str, writes: Value) -> Event {
    Event {
        seq: 0,
        ns: ns.iter().map(|s| s.to_string()).collect(),
        node: Some(node.into()),
        kind: EventKind::Updates(json!({ node: writes })),
    }
}

fn usage(calls: u64, input: u64, output: u64, cache_read: u64) -> Value {
    let u = json!({"calls": calls, "input_tokens": input, "output_tokens": output,
                   "cache_read_tokens": cache_read, "cache_creation_tokens": 0});
    json!({"total": u, "nodes": {}, "runs": {}})
}

#[test]
fn requests_tools_and_errors_are_counted_once_and_roll_ups_skipped() {
    let ns = ["builder:3f2a"];
    let ok = json!({"type": "tool", "id": "tool-1", "tool_call_id": "c1", "name": "add_nodes", "content": "ok"});
    let failed = json!({"type": "tool", "id": "tool-2", "tool_call_id": "c2", "name": "add_nodes",
                        "status": "error", "content": {"error": {"code": "INVALID_ARGUMENTS", "message": "x"}}});
    let failed_text = json!({"type": "tool", "id": "tool-3", "tool_call_id": "c3", "name": "connect_nodes",
                             "status": "error", "content": "{\"error\": {\"code\": \"NODE_NOT_FOUND\"}}"});
    let events = [
        update(
            &[],
            "name_workflow",
            json!({"naming": {}, "usage": usage(1, 10, 2, 0)}),
        ),
        update(
            &ns,
            "agent",
            json!({"messages": [{"type": "ai", "id": "a1"}], "usage": usage(1, 100, 20, 30)}),
        ),
        update(
            &ns,
            "tools",
            json!({"messages": [ok.clone(), failed], "usage": usage(2, 40, 4, 0)}),
        ),
        // apply_operations appends a notice to the last tool message, keeping its id.
        update(&ns, "apply", json!({"messages": ok})),
        update(&ns, "tools", json!({"messages": [failed_text]})),
        // The subgraph node hands its children's usage back: not counted again.
        update(
            &[],
            "builder",
            json!({"usage": usage(3, 140, 24, 30), "workflow": {}}),
        ),
        Event {
            seq: 0,
            ns: vec![],
            node: Some("tools".into()),
            kind: EventKind::Custom(
                json!({"tool": "x", "status": "running", "title": "Running x"}),
            ),
        },
    ];
    let mut m = Meter::default();
    events.iter().for_each(|e| m.observe(e));
    let req = |node: &str, calls, prompt, completion| Request {
        node: node.into(),
        calls,
        prompt_tokens: prompt,
        completion_tokens: completion,
    };
    assert_eq!(
        m.requests,
        [
            req("name_workflow", 1, 10, 2),
            req("builder/agent", 1, 130, 20),
            req("builder/tools", 2, 40, 4)
        ]
    );
    assert_eq!(m.model_requests(), 4);
    assert_eq!((m.prompt_tokens(), m.completion_tokens()), (180, 26));
    assert_eq!(m.tokens(), 206);
    assert_eq!(m.tool_calls, 3);
    assert_eq!(
        m.tool_errors.into_iter().collect::<Vec<_>>(),
        [
            ("INVALID_ARGUMENTS".to_string(), 1),
            ("NODE_NOT_FOUND".to_string(), 1)
        ]
    );
}

fn tool_message(id: &str, name: &str) -> Value {
    json!({"type": "tool", "id": id, "tool_call_id": id, "name": name, "content": "ok"})
}

/// An Instance AI turn: the orchestrator's call, a delegate whose sub-agent streams two calls
/// under `tools:<task>`, then (unless the case was cut inside the sub-agent) the executor's
/// step with its tool message and its usage: the sub-agent's calls rolled up, plus `extra`.
fn delegated_turn(finished: bool, extra: Option<(u64, u64, u64)>) -> Vec<Event> {
    let child = ["tools:9c1e"];
    let mut events = vec![
        update(&[], "agent", json!({"usage": usage(1, 100, 10, 0)})),
        update(&child, "subagent", json!({"usage": usage(1, 20, 2, 0)})),
        update(
            &child,
            "subagent_tools",
            json!({"messages": [tool_message("tool-w", "list_workflows")]}),
        ),
        update(&child, "subagent", json!({"usage": usage(1, 30, 3, 0)})),
    ];
    if finished {
        let (calls, input, output) = extra.unwrap_or((0, 0, 0));
        events.push(update(
            &[],
            "tools",
            json!({"messages": [tool_message("tool-d", "delegate")],
                   "usage": usage(2 + calls, 50 + input, 5 + output, 0)}),
        ));
        events.push(update(&[], "agent", json!({"usage": usage(1, 200, 20, 0)})));
    }
    events
}

fn metered(events: &[Event]) -> Meter {
    let mut m = Meter::default();
    events.iter().for_each(|e| m.observe(e));
    m
}

#[test]
fn a_sub_agents_calls_are_counted_once_and_the_row_shows_them() {
    let m = metered(&delegated_turn(true, None));
    let req = |node: &str, calls, prompt, completion| Request {
        node: node.into(),
        calls,
        prompt_tokens: prompt,
        completion_tokens: completion,
    };
    // 2 orchestrator calls + 2 sub-agent calls; the executor's roll-up holds nothing more.
    assert_eq!(
        m.requests,
        [
            req("agent", 1, 100, 10),
            req("tools/subagent", 1, 20, 2),
            req("tools/subagent", 1, 30, 3),
            req("agent", 1, 200, 20)
        ]
    );
    // The orchestrator's own tool message counts although a child ran under its node.
    assert_eq!(m.tool_calls, 2);
    assert_eq!(m.tools_ok.get("delegate"), Some(&1));
    let mut run = CaseRun::not_run(String::new());
    run.meter = m;
    let row = Row::new(
        "find",
        "instance",
        "instance-ai",
        "scripted",
        &run,
        Scores::default(),
    );
    assert_eq!(row.model_requests, 4);
    assert_eq!(
        (row.prompt_tokens_total, row.completion_tokens_total),
        (350, 35)
    );
}

#[test]
fn a_case_cut_inside_a_sub_agent_still_counts_its_calls() {
    let m = metered(&delegated_turn(false, None));
    assert_eq!(m.model_requests(), 3);
    assert_eq!((m.prompt_tokens(), m.completion_tokens()), (150, 15));
}

#[test]
fn a_roll_up_holding_more_than_its_children_counts_the_rest() {
    // The step also recorded a background task's end (1 call, 40 in, 4 out).
    let m = metered(&delegated_turn(true, Some((1, 40, 4))));
    assert_eq!(m.model_requests(), 5);
    assert_eq!((m.prompt_tokens(), m.completion_tokens()), (390, 39));
    assert_eq!(
        m.requests[3],
        Request {
            node: "tools".into(),
            calls: 1,
            prompt_tokens: 40,
            completion_tokens: 4,
        }
    );
}
