//! The meter over a fixed event sequence of a multi-agent run.

use agentgraph_eval::meter::{Meter, Request};
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
