//! Connection inference on the real catalogue (skips without `$AGENTGRAPH_N8N_CATALOGUE`).

use super::*;

#[tokio::test]
async fn real_chat_model_agent_both_directions() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let agent = s
        .add_alone(&format!("{LC}.agent"), "AI Agent", json!({}))
        .await;
    let model = s
        .add_alone(
            &format!("{LC}.lmChatOpenAi"),
            "OpenAI Chat Model",
            json!({}),
        )
        .await;
    let model2 = s
        .add_alone(&format!("{LC}.lmChatAnthropic"), "Claude", json!({}))
        .await;
    let msg = s.connect(&model, &agent).await;
    assert_eq!(
        msg,
        "Connected \"OpenAI Chat Model\" to \"AI Agent\" via ai_languageModel"
    );
    // Reversed: agent → chat model is swapped (fresh workflow state for the second model).
    s.wf.connections.clear();
    let msg = s.connect(&agent, &model2).await;
    assert!(
        msg.starts_with("Connected \"Claude\" to \"AI Agent\" via ai_languageModel (swapped"),
        "{msg}"
    );
    assert!(s.has_edge("Claude", "ai_languageModel", "AI Agent"));
}

#[tokio::test]
async fn real_vector_store_insert_vs_retrieve_as_tool() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let trig = s
        .add_alone("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let insert = s
        .add_alone(
            &format!("{LC}.vectorStoreInMemory"),
            "Insert Docs",
            json!({"mode": "insert"}),
        )
        .await;
    let loader = s
        .add_alone(
            &format!("{LC}.documentDefaultDataLoader"),
            "Loader",
            json!({}),
        )
        .await;
    let emb = s
        .add_alone(&format!("{LC}.embeddingsOpenAi"), "Embeddings", json!({}))
        .await;
    s.connect(&trig, &insert).await;
    assert!(s
        .connect(&loader, &insert)
        .await
        .ends_with("via ai_document"));
    assert!(s.connect(&emb, &insert).await.ends_with("via ai_embedding"));
    // Reversed embedding connection on the insert store is swapped too.
    let emb2 = s
        .add_alone(&format!("{LC}.embeddingsOpenAi"), "Embeddings 2", json!({}))
        .await;
    let insert2 = s
        .add_alone(
            &format!("{LC}.vectorStoreInMemory"),
            "Insert 2",
            json!({"mode": "insert"}),
        )
        .await;
    let msg = s.connect(&insert2, &emb2).await;
    assert!(msg.contains("via ai_embedding (swapped"), "{msg}");
    // Retrieve-as-tool: the store is a sub-node feeding the agent's tools.
    let agent = s
        .add_alone(&format!("{LC}.agent"), "Agent", json!({}))
        .await;
    let tool_store = s
        .add_alone(
            &format!("{LC}.vectorStoreInMemory"),
            "Knowledge",
            json!({"mode": "retrieve-as-tool", "toolName": "kb", "toolDescription": "docs"}),
        )
        .await;
    assert_eq!(
        s.connect(&tool_store, &agent).await,
        "Connected \"Knowledge\" to \"Agent\" via ai_tool"
    );
    // In insert mode it cannot be an agent tool.
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": insert, "targetNodeId": agent, "connectionType": "ai_tool"}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_CONNECTION_TYPE, "{e}");
    assert!(s.has_edge("Knowledge", "ai_tool", "Agent"));
    assert!(s.has_edge("Loader", "ai_document", "Insert Docs"));
    assert!(s.has_edge("Embeddings", "ai_embedding", "Insert Docs"));
}

#[tokio::test]
async fn real_document_loader_custom_splitting() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let default_loader = s
        .add_alone(
            &format!("{LC}.documentDefaultDataLoader"),
            "Simple Loader",
            json!({}),
        )
        .await;
    let custom = s
        .add_alone(
            &format!("{LC}.documentDefaultDataLoader"),
            "Custom Loader",
            json!({"textSplittingMode": "custom"}),
        )
        .await;
    let splitter = s
        .add_alone(
            &format!("{LC}.textSplitterRecursiveCharacterTextSplitter"),
            "Splitter",
            json!({}),
        )
        .await;
    assert_eq!(
        s.connect(&splitter, &custom).await,
        "Connected \"Splitter\" to \"Custom Loader\" via ai_textSplitter"
    );
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": splitter, "targetNodeId": default_loader}),
        )
        .await;
    assert_eq!(e.code, codes::INCOMPATIBLE_CONNECTION, "{e}");
    assert!(e.message.contains("textSplittingMode"), "{e}");
}
