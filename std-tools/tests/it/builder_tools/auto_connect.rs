//! `add_nodes` makes the `ai_*` connections that have one possible end, and no others.

use super::*;

#[tokio::test]
async fn a_sub_node_is_connected_to_the_only_node_that_can_use_it() {
    let mut s = Session::new(builtin());
    let agent = s.add(&format!("{LC}.agent"), "AI Agent", json!({})).await;
    let tool = AddNodes::new(s.cat.clone());
    let msg = s
        .run(
            &tool,
            json!({"nodeType": format!("{LC}.lmChatOpenAi"), "name": "OpenAI Chat Model",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains(
            "Connected \"OpenAI Chat Model\" to \"AI Agent\" via ai_languageModel (automatically"
        ),
        "{msg}"
    );
    assert!(s.has_edge("OpenAI Chat Model", "ai_languageModel", "AI Agent"));
    // Tools too (an agent takes any number); a second chat model finds the slot taken.
    s.add(&format!("{LC}.toolCalculator"), "Calculator", json!({}))
        .await;
    assert!(s.has_edge("Calculator", "ai_tool", "AI Agent"));
    s.add(&format!("{LC}.lmChatOpenAi"), "Second Model", json!({}))
        .await;
    assert!(s.wf.outgoing("Second Model", None).is_empty());
    // Connecting what is already connected is not an error.
    let out = s
        .call(
            &ConnectNodes::new(s.cat.clone()),
            json!({"sourceNodeId": "OpenAI Chat Model", "targetNodeId": agent}),
        )
        .await
        .expect("already connected");
    assert!(text(&out).contains("already connected"), "{}", text(&out));
}

#[tokio::test]
async fn a_parent_added_after_its_sub_nodes_takes_them_unless_another_could() {
    let mut s = Session::new(builtin());
    s.add(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    s.add(&format!("{LC}.memoryBufferWindow"), "Memory", json!({}))
        .await;
    assert!(s.wf.outgoing("Model", None).is_empty());
    s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    assert!(s.has_edge("Model", "ai_languageModel", "Agent"));
    assert!(s.has_edge("Memory", "ai_memory", "Agent"));

    // Two nodes could take a new chat model: none is chosen.
    let mut s = Session::new(builtin());
    s.add(&format!("{LC}.agent"), "Agent A", json!({})).await;
    s.add(&format!("{LC}.agent"), "Agent B", json!({})).await;
    s.add(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    assert!(s.wf.outgoing("Model", None).is_empty());
    let problems = agentgraph_std_tools::validate::unfinished(&s.wf, &s.cat);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("SUB_NODE_NOT_CONNECTED")),
        "{problems:?}"
    );
}
