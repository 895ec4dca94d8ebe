//! `remove_node`, `remove_connection` and `get_node_parameter`.

use super::*;

#[tokio::test]
async fn remove_node_lists_connections() {
    let mut s = Session::new(builtin());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
    let set = s.add("n8n-nodes-base.set", "Set", json!({})).await;
    s.connect(&trig, &http).await;
    s.connect(&http, &set).await;
    let tool = RemoveNode::new(s.cat.clone());
    let out = s
        .call(&tool, json!({"nodeId": http}))
        .await
        .expect("remove");
    let msg = text(&out);
    assert!(
        msg.starts_with("Successfully removed node \"Fetch\" (HTTP Request) and 2 connection(s):"),
        "{msg}"
    );
    assert!(msg.contains("- \"Start\" → \"Fetch\" (main)"), "{msg}");
    assert!(msg.contains("- \"Fetch\" → \"Set\" (main)"), "{msg}");
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "removeNode", "nodeIds": [http]})
    );
    s.apply(&out);
    assert!(s.wf.node_by_id(&http).is_none());
    assert!(s.wf.edges().is_empty());
    let e = s.err(&tool, json!({"nodeId": http})).await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
    let e = s.err(&tool, json!({"nodeId": " "})).await;
    assert_eq!(e.code, codes::INVALID_INPUT);
}

#[tokio::test]
async fn remove_connection_happy_and_errors() {
    let mut s = Session::new(builtin());
    let iff = s.add("n8n-nodes-base.if", "Check", json!({})).await;
    let a = s.add("n8n-nodes-base.set", "A", json!({})).await;
    let tool_c = ConnectNodes::new(s.cat.clone());
    s.run(
        &tool_c,
        json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 1}),
    )
    .await;
    let tool = RemoveConnection::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::CONNECTION_NOT_FOUND);
    assert!(e.message.contains("output 1 → input 0"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": "x", "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": iff, "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::CONNECTION_NOT_FOUND);
    assert!(
        e.message.contains("there is no connection from \"A\""),
        "{e}"
    );
    let out = s
        .call(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "connectionType": "main", "sourceOutputIndex": 1}),
        )
        .await
        .expect("remove");
    assert_eq!(
        text(&out),
        "Successfully removed connection \"Check\" → \"A\" (main, output 1 → input 0)"
    );
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "removeConnection", "sourceNode": "Check", "targetNode": "A",
               "connectionType": "main", "sourceOutputIndex": 1, "targetInputIndex": 0})
    );
    s.apply(&out);
    assert!(s.wf.edges().is_empty());
}

#[tokio::test]
async fn get_node_parameter_paths_and_errors() {
    let mut s = Session::new(builtin());
    let http = s
        .add(
            "n8n-nodes-base.httpRequest",
            "Fetch",
            json!({"url": "https://api.example.com",
                   "headerParameters": {"parameters": [{"name": "Content-Type", "value": "application/json"}]},
                   "options": {"a.b": true},
                   "jsonBody": "x".repeat(30_001)}),
        )
        .await;
    let tool = GetNodeParameter::new(s.cat.clone());
    let get = |path: &str| json!({"nodeId": http, "path": path});
    let t = text(&s.call(&tool, get("url")).await.expect("url"));
    assert_eq!(
        t,
        "Parameter \"url\" of node \"Fetch\":\nhttps://api.example.com"
    );
    let t = text(
        &s.call(&tool, get("headerParameters.parameters[0].value"))
            .await
            .expect("nested"),
    );
    assert!(t.ends_with("\napplication/json"), "{t}");
    let t = text(
        &s.call(&tool, get("parameters.headerParameters.parameters[0]"))
            .await
            .expect("prefix"),
    );
    assert!(t.contains("\"name\": \"Content-Type\""), "{t}");
    let t = text(
        &s.call(&tool, get("options[\"a.b\"]"))
            .await
            .expect("quoted"),
    );
    assert!(t.ends_with("\ntrue"), "{t}");
    let t = text(
        &s.call(&tool, get("headerParameters.parameters.0.name"))
            .await
            .expect("dotted index"),
    );
    assert!(t.ends_with("\nContent-Type"), "{t}");
    // By name too.
    s.call(&tool, json!({"nodeId": "Fetch", "path": "url"}))
        .await
        .expect("by name");
    for (path, code) in [
        (
            "headerParameters.parameters[3].value",
            codes::PARAMETER_NOT_FOUND,
        ),
        ("missing", codes::PARAMETER_NOT_FOUND),
        ("url.x", codes::PARAMETER_NOT_FOUND),
        ("a..b", codes::INVALID_PATH),
        ("a[", codes::INVALID_PATH),
        ("a[x]", codes::INVALID_PATH),
        ("a]", codes::INVALID_PATH),
        ("jsonBody", codes::PARAMETER_TOO_LARGE),
    ] {
        let e = s.err(&tool, get(path)).await;
        assert_eq!(e.code, code, "{path}: {e}");
    }
    let e = s
        .err(&tool, get("headerParameters.parameters[3].value"))
        .await;
    assert!(e.message.contains("an array of 1 item(s)"), "{e}");
    let e = s.err(&tool, get("jsonBody")).await;
    assert!(
        e.message
            .contains("exceeds maximum length of 30000 characters"),
        "{e}"
    );
    let e = s.err(&tool, json!({"nodeId": "nope", "path": "url"})).await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
}
