//! `search_nodes` and `get_node_details`: shapes, errors and the real catalogue.

use super::*;

#[tokio::test]
async fn search_nodes_name_and_sub_node_queries() {
    let s = Session::new(builtin());
    let tool = SearchNodes::new(s.cat.clone());
    let out = s
        .call(
            &tool,
            json!({"queries": [
                {"queryType": "name", "query": "http"},
                {"queryType": "subNodeSearch", "connectionType": "ai_languageModel", "query": ""},
                {"queryType": "name", "query": "zzzznothing"}
            ]}),
        )
        .await
        .expect("search");
    let t = text(&out);
    assert!(out.writes.is_empty());
    assert!(t.starts_with("Found "), "{t}");
    assert!(t.contains("nodes matching \"http\":"), "{t}");
    assert!(
        t.contains("\n- n8n-nodes-base.httpRequest (HTTP Request, version 4.2): "),
        "{t}"
    );
    assert!(t.contains("Inputs [\"main\"], outputs [\"main\"]."), "{t}");
    assert!(
        t.contains("sub-nodes with output type ai_languageModel"),
        "{t}"
    );
    assert!(t.contains(&format!("\n- {LC}.lmChatOpenAi (")), "{t}");
    assert!(t.contains("outputs [\"ai_languageModel\"]."), "{t}");
    assert!(t.contains("No nodes found matching \"zzzznothing\""), "{t}");
    // Limit 5 per query.
    let out = s
        .call(
            &tool,
            json!({"queries": [{"queryType": "name", "query": "e"}]}),
        )
        .await
        .expect("search");
    assert!(text(&out).matches("\n- ").count() <= 5);
}

#[tokio::test]
async fn search_nodes_errors() {
    let s = Session::new(builtin());
    let tool = SearchNodes::new(s.cat.clone());
    for args in [
        json!({"queries": []}),
        json!({"queries": [{"queryType": "name"}]}),
        json!({"queries": [{"queryType": "name", "query": "  "}]}),
        json!({"queries": [{"queryType": "subNodeSearch", "query": "x"}]}),
    ] {
        let e = s.err(&tool, args.clone()).await;
        assert!(
            e.code == codes::INVALID_INPUT || e.code == "SCHEMA",
            "{args}: {e}"
        );
    }
    // Unknown queryType (bypassing the schema's enum).
    let e = tool
        .call(
            json!({"queries": [{"queryType": "fuzzy", "query": "x"}]}),
            &s.ctx(),
        )
        .await
        .expect_err("unknown type");
    assert_eq!(e.code, codes::INVALID_INPUT);
    assert!(e.message.contains("subNodeSearch"));
    // Eleven queries in one call are refused (a small model sent one query after another
    // until its output limit); ten run.
    let words = [
        "http", "gmail", "slack", "webhook", "schedule", "set", "if", "merge", "code", "wait",
        "filter",
    ];
    let many = |n: usize| {
        let queries: Vec<Value> = words[..n]
            .iter()
            .map(|w| json!({"queryType": "name", "query": w}))
            .collect();
        json!({ "queries": queries })
    };
    let e = s.err(&tool, many(11)).await;
    assert!(e.code == codes::INVALID_INPUT || e.code == "SCHEMA", "{e}");
    assert!(tool.call(many(10), &s.ctx()).await.is_ok());
    // Every query names its words (`""` for all sub-nodes of a connection type): the schema
    // requires it, so a server's schema grammar makes a small model write them.
    let e = s
        .err(
            &tool,
            json!({"queries": [{"queryType": "subNodeSearch", "connectionType": "ai_tool"}]}),
        )
        .await;
    assert_eq!(e.code, "SCHEMA", "{e}");
}

#[tokio::test]
async fn search_nodes_real_catalogue() {
    let Some(cat) = real() else { return };
    let s = Session::new(cat);
    let tool = SearchNodes::new(s.cat.clone());
    let t = text(
        &s.call(
            &tool,
            json!({"queries": [
                {"queryType": "name", "query": "gmail"},
                {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "calculator"}
            ]}),
        )
        .await
        .expect("search"),
    );
    assert!(t.contains("\n- n8n-nodes-base.gmail (Gmail, "), "{t}");
    assert!(t.contains(&format!("\n- {LC}.toolCalculator (")), "{t}");
}

#[tokio::test]
async fn get_node_details_shapes_and_errors() {
    let s = Session::new(builtin());
    let tool = GetNodeDetails::new(s.cat.clone());
    let t = text(
        &s.call(&tool, json!({"nodeName": "n8n-nodes-base.httpRequest"}))
            .await
            .expect("details"),
    );
    assert!(t.starts_with("<node_details>") && t.ends_with("</node_details>"));
    assert!(t.contains("<name>n8n-nodes-base.httpRequest</name>"));
    assert!(t.contains("<display_name>HTTP Request</display_name>"));
    assert!(t.contains("<input>main</input>") && t.contains("<output>main</output>"));
    assert!(!t.contains("<properties>"));
    let t = text(
        &s.call(
            &tool,
            json!({"nodeName": "n8n-nodes-base.httpRequest", "withParameters": true, "withConnections": false}),
        )
        .await
        .expect("details"),
    );
    assert!(
        t.contains("<properties>") && t.contains("\"name\": \"url\""),
        "{t}"
    );
    assert!(!t.contains("<connections>"));
    // Expression ports: note that they depend on parameters.
    let t = text(
        &s.call(
            &tool,
            json!({"nodeName": format!("{LC}.vectorStoreInMemory")}),
        )
        .await
        .expect("details"),
    );
    assert!(t.contains("depend on the parameters"), "{t}");
    let e = s
        .err(&tool, json!({"nodeName": "n8n-nodes-base.htpRequest"}))
        .await;
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
    assert!(e.message.contains("Did you mean"), "{e}");
    let e = s.err(&tool, json!({"nodeName": ""})).await;
    assert_eq!(e.code, codes::INVALID_INPUT);
}

#[tokio::test]
async fn get_node_details_real_caps_output() {
    let Some(cat) = real() else { return };
    let s = Session::new(cat);
    let tool = GetNodeDetails::new(s.cat.clone());
    for name in [
        "n8n-nodes-base.googleSheets",
        "n8n-nodes-base.salesforce",
        "n8n-nodes-base.httpRequest",
    ] {
        let t = text(
            &s.call(&tool, json!({"nodeName": name, "withParameters": true}))
                .await
                .expect("details"),
        );
        assert!(t.len() < 25_000, "{name}: {} chars", t.len());
    }
}

#[tokio::test]
async fn a_tool_variant_is_left_out_of_a_name_search_that_finds_its_main_node() {
    let s = Session::new(builtin());
    let tool = SearchNodes::new(s.cat.clone());
    let t = text(
        &s.call(
            &tool,
            json!({"queries": [{"queryType": "name", "query": "gmail"}]}),
        )
        .await
        .expect("search"),
    );
    // The built-in catalogue generates `gmailTool` for the usable-as-tool Gmail node.
    assert!(s.cat.get("n8n-nodes-base.gmailTool", None).is_some());
    assert!(t.contains("\n- n8n-nodes-base.gmail ("), "{t}");
    assert!(!t.contains("gmailTool"), "{t}");
    // The heading counts the lines shown.
    let shown = t.matches("\n- ").count();
    assert!(
        t.starts_with(&format!("Found {shown} nodes matching \"gmail\":")),
        "{t}"
    );
    // A sub-node search for tools still finds it.
    let t = text(
        &s.call(
            &tool,
            json!({"queries": [{"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "gmail"}]}),
        )
        .await
        .expect("search"),
    );
    assert!(t.contains("\n- n8n-nodes-base.gmailTool ("), "{t}");
}
