//! `add_trigger`: its schema lists the catalogue's general-purpose triggers, it connects
//! itself to the first node nothing feeds, and it refuses a second trigger or an action type.

use super::*;
use agentgraph_std_tools::builder::add_trigger::trigger_types;
use agentgraph_std_tools::builder::AddTrigger;

fn schema_types(tool: &AddTrigger) -> Vec<String> {
    tool.input_schema()["properties"]["nodeType"]["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn the_schema_enumerates_real_triggers_and_the_call_connects_the_first_node() {
    let mut s = Session::new(builtin());
    let tool = AddTrigger::new(s.cat.clone());
    let types = schema_types(&tool);
    assert!(types.contains(&"n8n-nodes-base.scheduleTrigger".to_string()));
    for t in &types {
        let desc = s.cat.get(t, None).expect("a catalogue type");
        assert!(desc.is_trigger(), "{t}");
    }
    // Nodes the model added before the trigger: the first one nothing feeds gets connected.
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch Forecast", json!({}))
        .await;
    let set = s.add("n8n-nodes-base.set", "Shape", json!({})).await;
    s.connect(&http, &set).await;
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.scheduleTrigger", "name": "Every Morning"}),
        )
        .await;
    assert!(
        msg.contains("Connected \"Every Morning\" to \"Fetch Forecast\" via main"),
        "{msg}"
    );
    assert!(s.has_edge("Every Morning", "main", "Fetch Forecast"));
    let problems = agentgraph_std_tools::validate::unfinished(&s.wf, &s.cat);
    assert!(problems.is_empty(), "{problems:?}");

    // A second trigger is refused, naming the first.
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.webhook", "name": "Hook"}),
        )
        .await;
    assert_eq!(e.code, codes::TRIGGER_EXISTS);
    assert!(e.message.contains("Every Morning"), "{}", e.message);
}

#[tokio::test]
async fn a_trigger_on_an_empty_workflow_waits_for_its_first_node() {
    let mut s = Session::new(builtin());
    let tool = AddTrigger::new(s.cat.clone());
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.webhook", "name": "Orders"}),
        )
        .await;
    assert!(msg.contains("No node to connect it to yet"), "{msg}");
    assert_eq!(s.wf.nodes.len(), 1);
    assert!(s.wf.nodes[0].extra.contains_key("webhookId"));
    // A trigger alone is unfinished: nothing does the work yet.
    let problems = agentgraph_std_tools::validate::unfinished(&s.wf, &s.cat);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("ONLY_TRIGGER: "), "{problems:?}");
}

#[tokio::test]
async fn an_action_type_or_a_type_outside_the_list_is_refused() {
    let s = Session::new(builtin());
    let tool = AddTrigger::new(s.cat.clone());
    // Outside the enum: the schema check refuses it before the tool runs.
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "Fetch"}),
        )
        .await;
    assert_eq!(e.code, "SCHEMA");
    // Called without the schema check (a server that does not enforce it): the tool says so.
    let e = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "Fetch"}),
            &s.ctx(),
        )
        .await
        .expect_err("not a trigger");
    assert_eq!(e.code, codes::INVALID_INPUT);
    assert!(
        e.message.contains("n8n-nodes-base.manualTrigger"),
        "{}",
        e.message
    );
}

#[test]
fn the_real_catalogue_offers_its_core_triggers_only() {
    let Some(cat) = real() else { return };
    let types = trigger_types(&cat);
    // The general-purpose ones first, each a visible trigger of the catalogue.
    assert_eq!(types[0], "n8n-nodes-base.manualTrigger");
    for t in [
        "n8n-nodes-base.scheduleTrigger",
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.formTrigger",
        "@n8n/n8n-nodes-langchain.chatTrigger",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} missing from {types:?}");
    }
    for t in &types {
        let d = cat.get(t, None).expect("in the catalogue");
        assert!(d.is_trigger() && !d.is_hidden(), "{t}");
        assert!(!t.to_ascii_lowercase().contains("test"), "{t}");
    }
    // App triggers are left to add_nodes: the list stays short enough for every request.
    assert!(!types.iter().any(|t| t == "n8n-nodes-base.gmailTrigger"));
    assert!(types.len() <= 20, "{types:?}");
}

#[test]
fn with_an_empty_catalogue_the_general_names_are_offered() {
    let types = trigger_types(&Catalogue::new());
    assert!(types.iter().any(|t| t == "n8n-nodes-base.webhook"));
    assert_eq!(types[0], "n8n-nodes-base.manualTrigger");
}
