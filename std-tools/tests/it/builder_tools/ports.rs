//! Per-port summaries, node-type specific index hints, and sub-node search with a query.

use super::*;

#[tokio::test]
async fn port_summaries_show_every_port() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat.clone());
    let tool = AddNodes::new(cat.clone());
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.if", "name": "Check",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains("Outputs: [\"main[0] (true)\",\"main[1] (false)\"]"),
        "{msg}"
    );
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.merge", "name": "Merge",
                   "connectionParametersReasoning": "two inputs", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains("Inputs: [\"main[0] (Input 1)\",\"main[1] (Input 2)\"]"),
        "{msg}"
    );
    let search = SearchNodes::new(cat.clone());
    let out = search
        .run(&json!({"queries": [{"queryType": "name", "query": "if"}]}))
        .expect("search");
    assert!(
        out.contains("outputs [\"main[0] (true)\",\"main[1] (false)\"]."),
        "{out}"
    );
    let details = GetNodeDetails::new(cat);
    let out = details
        .run(&json!({"nodeName": "n8n-nodes-base.if"}))
        .expect("details");
    assert!(out.contains("<output>main \"true\"</output>"), "{out}");
    assert!(out.contains("<output>main \"false\"</output>"), "{out}");
}

#[tokio::test]
async fn index_hints_are_node_type_specific() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat.clone());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let switch = s.add("n8n-nodes-base.switch", "Route", json!({})).await;
    let set = s.add("n8n-nodes-base.set", "Set", json!({})).await;
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    s.connect(&trig, &switch).await;
    let tool = ConnectNodes::new(cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": switch, "targetNodeId": set, "sourceOutputIndex": 1}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_OUTPUT_INDEX, "{e}");
    assert!(
        e.message.contains("rules") && e.message.contains("numberOutputs"),
        "{e}"
    );
    // An agent's input index error does not talk about Merge.
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": trig, "targetNodeId": agent, "targetInputIndex": 1}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX, "{e}");
    assert!(!e.message.contains("Merge"), "{e}");
    let merge = s.add("n8n-nodes-base.merge", "Merge", json!({})).await;
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": set, "targetNodeId": merge, "targetInputIndex": 2}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX, "{e}");
    assert!(e.message.contains("numberInputs"), "{e}");
    // INPUT_FULL works for both tool sets.
    let m1 = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model 1", json!({}))
        .await;
    let m2 = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model 2", json!({}))
        .await;
    s.connect(&m1, &agent).await;
    let e = s
        .err(&tool, json!({"sourceNodeId": m2, "targetNodeId": agent}))
        .await;
    assert_eq!(e.code, codes::INPUT_FULL, "{e}");
    assert!(e.message.contains("remove_node"), "{e}");
}

#[tokio::test]
async fn sub_node_search_with_a_query_keeps_matches() {
    let Some(cat) = real() else { return };
    let search = SearchNodes::new(cat);
    let out = search
        .run(&json!({"queries": [
            {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "vector"}
        ]}))
        .expect("search");
    for unrelated in ["s3Tool", "dhlTool", "gitTool", "jwtTool"] {
        assert!(!out.contains(unrelated), "{unrelated} in {out}");
    }
    assert!(out.contains("toolVectorStore"), "{out}");
    assert!(
        out.contains("\n- @n8n/n8n-nodes-langchain.vectorStore"),
        "{out}"
    );
    assert!(
        out.contains(
            "Outputs ai_tool only with connectionParameters {\"mode\":\"retrieve-as-tool\"}"
        ),
        "{out}"
    );
    let out = search
        .run(&json!({"queries": [
            {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "gmail"}
        ]}))
        .expect("search");
    assert!(out.contains("n8n-nodes-base.gmailTool"), "{out}");
    assert_eq!(out.matches("\n- ").count(), 1, "{out}");
    // Without a query every tool still qualifies.
    let out = search
        .run(&json!({"queries": [{"queryType": "subNodeSearch", "connectionType": "ai_tool"}]}))
        .expect("search");
    assert_eq!(out.matches("\n- ").count(), 5, "{out}");
}
