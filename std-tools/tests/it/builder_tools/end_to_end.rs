//! `workflow_tools` and an end-to-end build on the built-in and the real catalogue.

use super::*;

#[test]
fn workflow_tools_lists_ten_tools() {
    let tools = workflow_tools(builtin());
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        vec![
            "search_nodes",
            "get_node_details",
            "add_nodes",
            "add_trigger",
            "connect_nodes",
            "remove_node",
            "remove_connection",
            "get_node_parameter",
            "get_best_practices",
            "submit_discovery_results"
        ]
    );
    for t in &tools {
        assert!(!t.description().is_empty());
        assert_eq!(t.input_schema()["type"], "object");
    }
}

async fn build_end_to_end(cat: Arc<Catalogue>) {
    let mut s = Session::new(cat);
    let tools = workflow_tools(s.cat.clone());
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name() == name)
            .expect("tool")
            .clone()
    };
    let search = text(
        &s.call(
            tool("search_nodes").as_ref(),
            json!({"queries": [{"queryType": "name", "query": "schedule"},
                               {"queryType": "subNodeSearch", "connectionType": "ai_languageModel", "query": "openai"}]}),
        )
        .await
        .expect("search"),
    );
    assert!(
        search.contains("n8n-nodes-base.scheduleTrigger"),
        "{search}"
    );
    let sched = s
        .add("n8n-nodes-base.scheduleTrigger", "Every Morning", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch News", json!({}))
        .await;
    let agent = s.add(&format!("{LC}.agent"), "Summarise", json!({})).await;
    let model = s
        .add(
            &format!("{LC}.lmChatOpenAi"),
            "OpenAI Chat Model",
            json!({}),
        )
        .await;
    let calc = s
        .add(&format!("{LC}.toolCalculator"), "Calculator", json!({}))
        .await;
    s.connect(&sched, &http).await;
    s.connect(&http, &agent).await;
    s.connect(&agent, &model).await; // swapped
    s.connect(&calc, &agent).await;
    let mut edges: Vec<(String, String, String)> =
        s.wf.edges()
            .into_iter()
            .map(|e| (e.source, e.kind, e.target.node))
            .collect();
    edges.sort();
    let e = |a: &str, k: &str, b: &str| (a.to_string(), k.to_string(), b.to_string());
    assert_eq!(
        edges,
        vec![
            e("Calculator", "ai_tool", "Summarise"),
            e("Every Morning", "main", "Fetch News"),
            e("Fetch News", "main", "Summarise"),
            e("OpenAI Chat Model", "ai_languageModel", "Summarise"),
        ]
    );
    assert_eq!(s.wf.nodes.len(), 5);
    // Positions: trigger left of the flow, sub-nodes below the agent.
    let x = |id: &str| s.wf.node_by_id(id).expect("node").xy();
    assert!(x(&sched).0 < x(&http).0 && x(&http).0 < x(&agent).0);
    assert!(x(&model).1 > x(&agent).1 && x(&calc).1 > x(&agent).1);
    assert_ne!(x(&model), x(&calc));
    assert_eq!(s.name(&model), "OpenAI Chat Model");
}

#[tokio::test]
async fn end_to_end_builtin() {
    build_end_to_end(builtin()).await;
}

#[tokio::test]
async fn end_to_end_real() {
    let Some(cat) = real() else { return };
    build_end_to_end(cat).await;
}

#[tokio::test]
#[ignore = "prints sample outputs"]
async fn print_samples() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let t = SearchNodes::new(s.cat.clone());
    println!("{}", text(&s.call(&t, json!({"queries": [{"queryType": "name", "query": "http"}, {"queryType": "subNodeSearch", "connectionType": "ai_memory"}]})).await.unwrap()));
    let t = GetNodeDetails::new(s.cat.clone());
    let d = text(
        &s.call(
            &t,
            json!({"nodeName": format!("{LC}.vectorStoreInMemory"), "withParameters": true}),
        )
        .await
        .unwrap(),
    );
    println!("{}", &d[..d.len().min(3000)]);
    let a = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let tool = AddNodes::new(s.cat.clone());
    let out = s.call(&tool, json!({"nodeType": format!("{LC}.lmChatOpenAi"), "name": "Model", "connectionParametersReasoning": "r", "connectionParameters": {}})).await.unwrap();
    println!("{}", text(&out));
    s.apply(&out);
    println!("{}", s.connect(&a, "Model").await);
}
