//! The argument schemas, and the tools run through the tool executor.

use super::*;

#[test]
fn schemas_describe_every_argument() {
    let kb = KnowledgeBaseSearch::new(
        Arc::new(VectorStore::new()),
        Arc::new(HashEmbedder::default()),
    );
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(Calculator::new()),
        Box::new(HttpRequest::new()),
        Box::new(kb),
    ];
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["calculator", "http_request", "knowledge_base_search"]
    );
    for t in &tools {
        let s = t.input_schema();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        for (name, p) in s["properties"].as_object().unwrap() {
            assert!(
                p["description"].as_str().is_some_and(|d| d.len() > 10),
                "{}.{name} has no description",
                t.name()
            );
        }
        assert!(!t.description().is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Through the tool executor
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tools_run_through_the_tool_executor_with_settings() {
    use agentgraph_agents::nodes::ToolExecutorNode;
    let server = MockServer::start().await;
    Mock::given(path("/ok"))
        .respond_with(ResponseTemplate::new(200).set_body_string("fine"))
        .mount(&server)
        .await;
    let tools = ToolExecutorNode::new([
        Arc::new(Calculator::new()) as Arc<dyn Tool>,
        Arc::new(HttpRequest::new()),
    ])
    .settings("http_request", json!({"allowed_hosts": ["127.0.0.1"]}));
    let g = GraphBuilder::new("tools")
        .channel(
            ChannelSpec::new("messages", ValueType::Messages)
                .reducer(Arc::new(AddMessages))
                .default_value(json!([])),
        )
        .node("tools", Arc::new(tools))
        .chain(&["START", "tools", "END"])
        .compile()
        .unwrap();
    let ai = json!({"type": "ai", "id": "ai-1", "content": "", "tool_calls": [
        {"id": "c1", "name": "calculator", "args": {"expression": "6 * 7"}},
        {"id": "c2", "name": "calculator", "args": {"expression": 42}},
        {"id": "c3", "name": "http_request", "args": {"url": format!("{}/ok", server.uri())}},
        {"id": "c4", "name": "http_request", "args": {"url": "http://10.0.0.1/"}}
    ]});
    let out = g
        .invoke(
            Input::values(json!({"messages": [ai]})),
            RunConfig::thread("t"),
        )
        .await
        .unwrap();
    let msgs = out.values["messages"].as_array().unwrap();
    let by_call = |id: &str| {
        msgs.iter()
            .find(|m| m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {msgs:?}"))
            .clone()
    };
    assert_eq!(by_call("c1")["content"]["result"], 42);
    assert_eq!(
        by_call("c2")["content"]["error"]["code"],
        "INVALID_ARGUMENTS"
    );
    assert_eq!(by_call("c3")["content"]["body"], "fine");
    assert_eq!(by_call("c4")["content"]["error"]["code"], "BLOCKED_ADDRESS");
}
