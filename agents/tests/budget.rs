//! Token budget: estimates, compaction and auto-compaction.

use agentgraph_agents::models::budget::*;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{CallContext, ModelRequest, SystemPart};
use agentgraph_runtime::messages::{add_messages, REMOVE_ALL};
use serde_json::{json, Value};

fn ctx() -> CallContext {
    CallContext {
        node: "compact".into(),
        ..Default::default()
    }
}

fn model(text: &str) -> ScriptedModel {
    ScriptedModel::from_json(json!({"responses": [{"node": "compact", "text": text}]}))
        .expect("valid script")
}

#[test]
fn estimates_round_up_chars_over_two_and_a_half() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("Hello world"), 5); // 11 / 2.5 = 4.4 → 5
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens("abcdef"), 3);
    assert_eq!(estimate_tokens("ééééé"), 2, "characters, not bytes");
    let msgs = vec![
        json!({"type": "human", "id": "1", "content": "abcde"}),
        json!({"type": "ai", "id": "2", "content": "",
               "tool_calls": [{"id": "c", "name": "t", "args": {"a": 1}}]}),
    ];
    // 5 content chars + `{"a":1}` (7 chars) = 12 → ceil(4.8) = 5
    assert_eq!(estimate_messages(&msgs), 5);
    let req = ModelRequest {
        system: vec![SystemPart {
            text: "abcde".into(),
            cacheable: true,
        }],
        messages: msgs,
        ..Default::default()
    };
    assert_eq!(estimate_request(&req), 7); // 17 chars → 6.8 → 7
}

#[test]
fn should_compact_over_the_threshold() {
    let msgs = vec![json!({"type": "human", "id": "1", "content": "x".repeat(50)})]; // 20 tokens
    assert!(!should_compact(&msgs, 20));
    assert!(should_compact(&msgs, 19));
    assert!(!should_compact(&[], 0));
    assert_eq!(DEFAULT_AUTO_COMPACT_THRESHOLD, 20_000);
}

fn history() -> Vec<Value> {
    vec![
        json!({"type": "human", "id": "h1", "content": "Build a Slack alert workflow"}),
        json!({"type": "ai", "id": "a1", "content": "Searching.",
               "tool_calls": [{"id": "c1", "name": "search_nodes", "args": {"q": "slack"}},
                              {"id": "c2", "name": "search_nodes", "args": {"q": "cron"}}]}),
        json!({"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "Slack node"}),
        json!({"type": "tool", "id": "t2", "tool_call_id": "c2", "content": "Schedule node"}),
        json!({"type": "ai", "id": "a2", "content": "Done."}),
        json!({"type": "human", "id": "h2", "content": "Now add a filter"}),
    ]
}

#[tokio::test]
async fn compaction_summarizes_older_messages() {
    let m = model("  The user wants Slack alerts; nodes found.  ");
    let msgs = history();
    let c = compact(&m, &msgs, Some("EARLIER"), 2, &ctx())
        .await
        .expect("compacts");
    assert_eq!(c.summary, "The user wants Slack alerts; nodes found.");
    let removed: Vec<&str> = c.remove.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(removed, ["h1", "a1", "t1", "t2"]);
    assert!(c.remove.iter().all(|r| r["type"] == "remove"));
    assert_eq!(c.summary_message["type"], "system");
    assert_eq!(c.summary_message["id"], SUMMARY_MESSAGE_ID);
    assert!(c.summary_message["content"]
        .as_str()
        .is_some_and(|s| s.contains("Slack alerts")));
    assert_eq!(c.kept, msgs[4..].to_vec());
    assert_eq!(m.remaining(), 0);

    // The removal markers and summary apply to an add_messages channel.
    let mut chan = Some(Value::Array(msgs.clone()));
    let mut write = c.remove.clone();
    write.push(c.summary_message.clone());
    add_messages(&mut chan, Value::Array(write)).expect("applies");
    let ids: Vec<String> = chan.as_ref().and_then(Value::as_array).map_or(vec![], |l| {
        l.iter()
            .filter_map(|m| m["id"].as_str().map(String::from))
            .collect()
    });
    assert_eq!(ids, ["a2", "h2", SUMMARY_MESSAGE_ID]);

    // `messages_write` puts the summary first.
    let write = c.messages_write();
    assert_eq!(write[0]["id"], REMOVE_ALL);
    let mut chan = Some(Value::Array(msgs));
    add_messages(&mut chan, write).expect("applies");
    assert_eq!(
        chan.as_ref().map(|l| l[0]["id"].clone()),
        Some(json!(SUMMARY_MESSAGE_ID))
    );
    assert_eq!(chan.as_ref().map(|l| l[2]["id"].clone()), Some(json!("h2")));
}

#[tokio::test]
async fn compaction_keeps_tool_calls_with_their_results() {
    let msgs = history();
    // Keeping the last 3 would keep t2 but summarize its caller a1: the cut moves to a1.
    let c = compact(&model("s"), &msgs, None, 3, &ctx())
        .await
        .expect("compacts");
    let removed: Vec<&str> = c.remove.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(removed, ["h1"]);
    assert_eq!(c.kept.first().map(|m| m["id"].clone()), Some(json!("a1")));
    // Keeping the last 4 (t1 onwards) likewise keeps a1.
    let c = compact(&model("s"), &msgs, None, 4, &ctx())
        .await
        .expect("compacts");
    assert_eq!(c.remove.len(), 1);
    // Keeping 2 cuts cleanly after the tool results.
    let c = compact(&model("s"), &msgs, None, 2, &ctx())
        .await
        .expect("compacts");
    assert_eq!(c.remove.len(), 4);
}

#[tokio::test]
async fn compaction_edge_cases() {
    // Nothing to summarize: no model call, the previous summary stays.
    let m = model("unused");
    let c = compact(&m, &history(), Some("old"), 10, &ctx())
        .await
        .expect("no-op");
    assert_eq!(c.summary, "old");
    assert!(c.remove.is_empty());
    assert_eq!(m.remaining(), 1);
    // keep_last 0 summarizes everything.
    let c = compact(&model("all"), &history(), None, 0, &ctx())
        .await
        .expect("compacts");
    assert_eq!(c.remove.len(), 6);
    assert!(c.kept.is_empty());
    // An empty summary is an error; so is a call from the wrong node.
    assert!(compact(&model("  "), &history(), None, 0, &ctx())
        .await
        .is_err());
    let other = CallContext {
        node: "agent".into(),
        ..Default::default()
    };
    assert!(compact(&model("s"), &history(), None, 0, &other)
        .await
        .is_err());
}
