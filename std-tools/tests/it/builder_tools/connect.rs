//! `connect_nodes`: main and AI connections, indexes, explicit types and every error code.

use super::*;

#[tokio::test]
async fn connect_nodes_main_and_ai_with_swap() {
    let mut s = Session::new(builtin());
    let trig = s
        .add_alone("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add_alone("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
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
    let msg = s.connect(&trig, &http).await;
    assert_eq!(msg, "Connected \"Start\" to \"Fetch\" via main");
    // By name as a fallback.
    s.connect("Fetch", "AI Agent").await;
    // Agent → model is turned around.
    let tool = ConnectNodes::new(s.cat.clone());
    let out = s
        .call(&tool, json!({"sourceNodeId": agent, "targetNodeId": model}))
        .await
        .expect("connect");
    assert_eq!(
        text(&out).split(" (swapped").next(),
        Some("Connected \"OpenAI Chat Model\" to \"AI Agent\" via ai_languageModel")
    );
    assert!(text(&out).contains("swapped for correct direction"));
    let ops = ops_of(&out);
    assert_eq!(
        ops[0].to_value(),
        json!({"type": "mergeConnections", "connections": {"OpenAI Chat Model": {
            "ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]}}})
    );
    s.apply(&out);
    assert!(s.has_edge("Start", "main", "Fetch"));
    assert!(s.has_edge("Fetch", "main", "AI Agent"));
    assert!(s.has_edge("OpenAI Chat Model", "ai_languageModel", "AI Agent"));
}

#[tokio::test]
async fn connect_nodes_indexes_and_explicit_type() {
    let mut s = Session::new(builtin());
    let iff = s.add_alone("n8n-nodes-base.if", "Check", json!({})).await;
    let a = s.add_alone("n8n-nodes-base.set", "Yes", json!({})).await;
    let b = s.add_alone("n8n-nodes-base.set", "No", json!({})).await;
    let merge = s
        .add_alone("n8n-nodes-base.merge", "Merge", json!({"numberInputs": 3}))
        .await;
    let tool = ConnectNodes::new(s.cat.clone());
    s.run(
        &tool,
        json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 0}),
    )
    .await;
    let out = s
        .call(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": b, "sourceOutputIndex": 1}),
        )
        .await
        .expect("false branch");
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "mergeConnections", "connections": {"Check": {"main": [[], [{"node": "No", "type": "main", "index": 0}]]}}})
    );
    s.apply(&out);
    let msg = s
        .run(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": merge, "targetInputIndex": 2, "connectionType": "main"}),
        )
        .await;
    assert!(msg.contains("output 0 → input 2"), "{msg}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 2}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_OUTPUT_INDEX);
    assert!(e.message.contains("has 2 main output(s)"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": b, "targetNodeId": merge, "targetInputIndex": 3}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX);
    assert!(e.message.contains("has 3 main input(s)"), "{e}");
}

#[tokio::test]
async fn connect_nodes_errors() {
    let mut s = Session::new(builtin());
    let trig = s
        .add_alone("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add_alone("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
    let set = s.add_alone("n8n-nodes-base.set", "Set", json!({})).await;
    let agent = s
        .add_alone(&format!("{LC}.agent"), "Agent", json!({}))
        .await;
    let model = s
        .add_alone(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    let model2 = s
        .add_alone(&format!("{LC}.lmChatAnthropic"), "Claude", json!({}))
        .await;
    let memory = s
        .add_alone(&format!("{LC}.memoryBufferWindow"), "Memory", json!({}))
        .await;
    let tool = ConnectNodes::new(s.cat.clone());
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"sourceNodeId": "nope", "targetNodeId": http}),
            codes::NODE_NOT_FOUND,
            "sourceNodeId \"nope\"",
        ),
        (
            json!({"sourceNodeId": trig, "targetNodeId": "nope"}),
            codes::NODE_NOT_FOUND,
            "targetNodeId \"nope\"",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": http}),
            codes::SAME_NODE,
            "itself",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": trig}),
            codes::INCOMPATIBLE_CONNECTION,
            "has no inputs",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": memory}),
            codes::INCOMPATIBLE_CONNECTION,
            "no compatible",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": http}),
            codes::INCOMPATIBLE_CONNECTION,
            "no compatible",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": set, "connectionType": "ai_tool"}),
            codes::INVALID_CONNECTION_TYPE,
            "does not output ai_tool",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": agent, "connectionType": "ai_memory"}),
            codes::INVALID_CONNECTION_TYPE,
            "does not output ai_memory",
        ),
        (
            json!({"sourceNodeId": "", "targetNodeId": http}),
            codes::INVALID_INPUT,
            "sourceNodeId",
        ),
    ];
    for (args, code, needle) in cases {
        let e = s.err(&tool, args.clone()).await;
        assert_eq!(e.code, code, "{args}: {e}");
        assert!(e.message.contains(needle), "{args}: {e}");
    }
    // Already connected; input full (one chat model per agent).
    s.connect(&http, &set).await;
    // Asking again is not a failure (add_nodes may have made the connection): nothing queued.
    let again = s
        .call(&tool, json!({"sourceNodeId": http, "targetNodeId": set}))
        .await
        .expect("an existing connection is not an error");
    assert!(
        text(&again).contains("already connected"),
        "{}",
        text(&again)
    );
    assert!(again.writes.is_empty());
    s.connect(&model, &agent).await;
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": model2, "targetNodeId": agent}),
        )
        .await;
    assert_eq!(e.code, codes::INPUT_FULL, "{e}");
    assert!(e.message.contains("\"Model\""), "{e}");
    // Port resolution of an unknown type.
    let mut wf = s.wf.clone();
    wf.add_node(WorkflowNode::new(
        "z",
        "Ghost",
        "n8n-nodes-base.ghost",
        1.0,
        [0.0, 0.0],
    ));
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": wf.to_value()})));
    let e = tool
        .call(json!({"sourceNodeId": "z", "targetNodeId": set}), &ctx)
        .await
        .expect_err("ghost");
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
}

#[tokio::test]
async fn connect_nodes_ambiguous_and_sub_node_required() {
    // A hand-made catalogue: two main nodes with both main and ai_tool ports.
    let mut cat = Catalogue::builtin().expect("builtin");
    cat.add_json_str(
        r#"[{"name": "x.both", "displayName": "Both", "description": "", "version": 1,
             "group": ["transform"], "inputs": ["main", "ai_tool"], "outputs": ["main", "ai_tool"],
             "properties": []}]"#,
        std::path::Path::new("<test>"),
        None,
        false,
    )
    .expect("test types");
    let mut s = Session::new(Arc::new(cat));
    let a = s.add_alone("x.both", "A", json!({})).await;
    let b = s.add_alone("x.both", "B", json!({})).await;
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(&tool, json!({"sourceNodeId": a, "targetNodeId": b}))
        .await;
    assert_eq!(e.code, codes::AMBIGUOUS_CONNECTION_TYPE);
    assert!(e.message.contains("main, ai_tool"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": b, "connectionType": "ai_tool"}),
        )
        .await;
    assert_eq!(e.code, codes::SUB_NODE_REQUIRED);
    let msg = s
        .run(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": b, "connectionType": "main"}),
        )
        .await;
    assert_eq!(msg, "Connected \"A\" to \"B\" via main");
}

#[tokio::test]
async fn ports_that_cannot_be_resolved_are_coded_errors() {
    // Inputs computed from a parameter, not a list for one value (as a broken n8n description
    // would give; an expression that throws gives no inputs, as in n8n).
    let mut cat = Catalogue::builtin().expect("builtin");
    cat.add_json_str(
        r#"[{"name": "x.modal", "displayName": "Modal", "description": "", "version": 1,
             "group": ["transform"],
             "inputs": "={{ $parameter.mode === 'bad' ? 'not a list' : ['main'] }}",
             "outputs": ["main"],
             "properties": [{"name": "mode", "displayName": "Mode", "type": "string", "default": "ok"}]}]"#,
        std::path::Path::new("<test>"),
        None,
        false,
    )
    .expect("test types");
    let mut s = Session::new(Arc::new(cat));
    let add = AddNodes::new(s.cat.clone());
    let e = s
        .err(
            &add,
            json!({"nodeType": "x.modal", "name": "Broken",
                   "connectionParametersReasoning": "mode decides the inputs",
                   "connectionParameters": {"mode": "bad"}}),
        )
        .await;
    assert_eq!(e.code, codes::PORT_RESOLUTION_FAILED);
    assert!(e.message.contains("check the parameter values"), "{e}");
    // Added with a good mode, then changed to the bad one: connecting reports it.
    let a = s.add_alone("x.modal", "A", json!({"mode": "ok"})).await;
    let b = s.add_alone("x.modal", "B", json!({"mode": "ok"})).await;
    s.wf.node_mut("B")
        .expect("B")
        .parameters
        .insert("mode".into(), json!("bad"));
    let e = s
        .err(
            &ConnectNodes::new(s.cat.clone()),
            json!({"sourceNodeId": a, "targetNodeId": b}),
        )
        .await;
    assert_eq!(e.code, codes::PORT_RESOLUTION_FAILED);
    assert!(e.message.contains("\"B\""), "{e}");
}
