//! Input rules: required inputs, connection types, merge inputs, input and output indexes.

use super::*;

#[test]
fn missing_required_input() {
    let bad = wf(
        vec![chat_trigger(), agent("Agent", json!({}))],
        json!({"Chat": main_to("Agent")}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::MISSING_REQUIRED_INPUT, "Agent"),
        "{}",
        r.render_text("")
    );
    assert!(r
        .with_code(codes::MISSING_REQUIRED_INPUT)
        .any(|f| f.message.contains("ai_languageModel")));
    // The finding names a node type that fits (told only the connection type, a small model
    // added the agent again).
    assert!(
        r.with_code(codes::MISSING_REQUIRED_INPUT).any(|f| f
            .message
            .contains("`@n8n/n8n-nodes-langchain.lmChatOpenAi`")),
        "{}",
        r.render_text("")
    );
    let good = wf(
        vec![chat_trigger(), agent("Agent", json!({})), model("Model")],
        json!({
            "Chat": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(count(&all(&good), codes::MISSING_REQUIRED_INPUT), 0);
}

#[test]
fn missing_required_input_on_the_real_agent() {
    let Some(cat) = real() else { return };
    let a = node("Agent", &format!("{LC}.agent"), 3.0, json!({}));
    let bad = wf(
        vec![chat_trigger(), a.clone()],
        json!({"Chat": main_to("Agent")}),
    );
    assert!(on(
        &validate(&bad, cat),
        codes::MISSING_REQUIRED_INPUT,
        "Agent"
    ));
    let good = wf(
        vec![chat_trigger(), a, model("Model")],
        json!({
            "Chat": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(
        count(&validate(&good, cat), codes::MISSING_REQUIRED_INPUT),
        0
    );
}

#[test]
fn unsupported_connection_type() {
    // the model has no main input; a main connection listed as ai_tool mismatches
    let bad = wf(
        vec![
            trigger(),
            model("Model"),
            agent("Agent", json!({})),
            set("A"),
        ],
        json!({
            "Start": main_to("Model"),
            "A": {"main": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::UNSUPPORTED_CONNECTION_TYPE, "Model"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::UNSUPPORTED_CONNECTION_TYPE, "A"));
    // a source that does not output the type
    let bad = wf(
        vec![trigger(), set("A"), agent("Agent", json!({}))],
        json!({"Start": main_to("A"), "A": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}}),
    );
    assert!(on(&all(&bad), codes::UNSUPPORTED_CONNECTION_TYPE, "A"));
    let good = wf(
        vec![trigger(), agent("Agent", json!({})), model("Model")],
        json!({
            "Start": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(count(&all(&good), codes::UNSUPPORTED_CONNECTION_TYPE), 0);
}

fn merge(params: Value) -> Value {
    node("Merge", "n8n-nodes-base.merge", 3.1, params)
}

#[test]
fn merge_inputs() {
    let conns = json!({
        "Start": {"main": [[{"node": "A", "type": "main", "index": 0}, {"node": "B", "type": "main", "index": 0}, {"node": "C", "type": "main", "index": 0}]]},
        "A": {"main": [[{"node": "Merge", "type": "main", "index": 0}]]},
        "B": {"main": [[{"node": "Merge", "type": "main", "index": 1}]]},
        "C": {"main": [[{"node": "Merge", "type": "main", "index": 2}]]}
    });
    let nodes = |m| vec![trigger(), set("A"), set("B"), set("C"), m];
    let bad = wf(nodes(merge(json!({}))), conns.clone());
    let r = all(&bad);
    assert!(
        on(&r, codes::MERGE_INPUT_OUT_OF_RANGE, "Merge"),
        "{}",
        r.render_text("")
    );
    let good = wf(nodes(merge(json!({"numberInputs": 3}))), conns);
    assert_eq!(count(&all(&good), codes::MERGE_INPUT_OUT_OF_RANGE), 0);
}

#[test]
fn merge_inputs_on_the_real_catalogue() {
    let Some(cat) = real() else { return };
    let conns = json!({
        "Start": {"main": [[{"node": "A", "type": "main", "index": 0}, {"node": "B", "type": "main", "index": 0}]]},
        "A": {"main": [[{"node": "Merge", "type": "main", "index": 0}]]},
        "B": {"main": [[{"node": "Merge", "type": "main", "index": 3}]]}
    });
    let m = |p| node("Merge", "n8n-nodes-base.merge", 3.2, p);
    let bad = wf(
        vec![trigger(), set("A"), set("B"), m(json!({"numberInputs": 3}))],
        conns.clone(),
    );
    assert!(on(
        &validate(&bad, cat),
        codes::MERGE_INPUT_OUT_OF_RANGE,
        "Merge"
    ));
    let good = wf(
        vec![trigger(), set("A"), set("B"), m(json!({"numberInputs": 4}))],
        conns,
    );
    assert_eq!(
        count(&validate(&good, cat), codes::MERGE_INPUT_OUT_OF_RANGE),
        0
    );
}

#[test]
fn input_and_output_indexes() {
    let bad = wf(
        vec![trigger(), set("A"), set("B")],
        json!({
            "Start": main_to("A"),
            "A": {"main": [[], [{"node": "B", "type": "main", "index": 1}]]}
        }),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::OUTPUT_INDEX_OUT_OF_RANGE, "A"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::INPUT_INDEX_OUT_OF_RANGE, "B"));
    // an error output (onError: continueErrorOutput) is a second main output
    let mut a = set("A");
    a["onError"] = json!("continueErrorOutput");
    let good = wf(
        vec![trigger(), a, set("B")],
        json!({"Start": main_to("A"), "A": {"main": [[], [{"node": "B", "type": "main", "index": 0}]]}}),
    );
    let r = all(&good);
    assert_eq!(
        count(&r, codes::OUTPUT_INDEX_OUT_OF_RANGE) + count(&r, codes::INPUT_INDEX_OUT_OF_RANGE),
        0
    );
}
