//! `add_nodes`: positions and names, errors, parallel adds and the settings' channels.

use super::*;

#[tokio::test]
async fn add_nodes_happy_path_positions_and_names() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let out = s
        .call(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "Fetch Weather Data",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await
        .expect("add");
    let msg = text(&out);
    assert!(
        msg.starts_with("Successfully added \"Fetch Weather Data\" (HTTP Request) with ID "),
        "{msg}"
    );
    let ops = ops_of(&out);
    let [Operation::AddNodes { nodes }] = ops.as_slice() else {
        panic!("{ops:?}")
    };
    assert_eq!(nodes[0].node_type, "n8n-nodes-base.httpRequest");
    assert_eq!(nodes[0].version(), 4.2);
    assert_eq!(nodes[0].xy(), (240.0, 300.0));
    assert_eq!(nodes[0].id.as_deref(), Some(id_of(&msg).as_str()));
    s.apply(&out);
    // Next main node to the right; a trigger to the left; a duplicate name made unique.
    let set = s
        .add("n8n-nodes-base.set", "Fetch Weather Data", json!({}))
        .await;
    assert_eq!(s.name(&set), "Fetch Weather Data1");
    assert_eq!(s.wf.node_by_id(&set).expect("set").xy(), (480.0, 300.0));
    let trig = s
        .add("n8n-nodes-base.scheduleTrigger", "Every Hour", json!({}))
        .await;
    assert_eq!(s.wf.node_by_id(&trig).expect("trigger").xy(), (0.0, 300.0));
    // A sub-node goes below its likely parent.
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let model = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    let (ax, ay) = s.wf.node_by_id(&agent).expect("agent").xy();
    assert_eq!(
        s.wf.node_by_id(&model).expect("model").xy(),
        (ax, ay + 200.0)
    );
    let mem = s
        .add(&format!("{LC}.memoryBufferWindow"), "Memory", json!({}))
        .await;
    assert_eq!(
        s.wf.node_by_id(&mem).expect("mem").xy(),
        (ax + 160.0, ay + 200.0)
    );
    // Connection parameters become the node's parameters.
    let vs = s
        .add(
            &format!("{LC}.vectorStoreInMemory"),
            "Store",
            json!({"mode": "insert"}),
        )
        .await;
    assert_eq!(
        s.wf.node_by_id(&vs).expect("vs").parameters["mode"],
        json!("insert")
    );
    // Empty name: the type's default name.
    let out = s
        .call(
            &tool,
            json!({"nodeType": "n8n-nodes-base.code", "name": "",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await
        .expect("add");
    assert!(text(&out).contains("\"Code\""), "{}", text(&out));
}

#[tokio::test]
async fn add_nodes_errors() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpReqest", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
    assert!(
        e.message.contains("Did you mean") && e.message.contains("httpRequest"),
        "{e}"
    );
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "x",
                   "connectionParametersReasoning": "  ", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::MISSING_REASONING);
    let e = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": [1]}),
            &s.ctx(),
        )
        .await
        .expect_err("array params");
    assert_eq!(e.code, codes::INVALID_INPUT);
    s.add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.manualTrigger", "name": "Again",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::MAX_NODES_REACHED);
    // A workflow channel that is not a workflow.
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": {"nodes": 3}})));
    let e = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.set", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
            &ctx,
        )
        .await
        .expect_err("bad workflow");
    assert_eq!(e.code, codes::INVALID_WORKFLOW);
}

#[tokio::test]
async fn parallel_adds_with_the_same_name_get_unique_names() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let args = json!({"nodeType": "n8n-nodes-base.set", "name": "Prepare",
                      "connectionParametersReasoning": "r", "connectionParameters": {}});
    // Both calls see the same state (one step), then both batches apply.
    let a = s.call(&tool, args.clone()).await.expect("a");
    let b = s.call(&tool, args).await.expect("b");
    s.apply(&a);
    s.apply(&b);
    let names: Vec<&str> = s.wf.node_names().collect();
    assert_eq!(names, vec!["Prepare", "Prepare1"]);
}

#[tokio::test]
async fn settings_choose_the_channels() {
    let s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let ctx = ToolContext::detached(StateView::from_object(json!({"wf": null}))).with_settings(
        Arc::new(json!({"workflow_channel": "wf", "operations_channel": "ops"})),
    );
    let out = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.set", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
            &ctx,
        )
        .await
        .expect("add");
    assert_eq!(out.writes[0].0, "ops");
}

/// n8n registers a production webhook only for a node with a `webhookId`: node types that
/// declare webhooks get one (distinct from the node id), others do not.
#[tokio::test]
async fn webhook_nodes_get_a_webhook_id() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let hook = s
        .add("n8n-nodes-base.webhook", "Receive Order", json!({}))
        .await;
    let node = s.wf.node_by_id(&hook).expect("webhook");
    let webhook_id = node.extra["webhookId"].as_str().expect("a webhookId");
    assert_eq!(webhook_id.len(), 36, "{webhook_id}");
    assert_eq!(webhook_id.matches('-').count(), 4, "{webhook_id}");
    assert_ne!(Some(webhook_id), node.id.as_deref());
    let set = s.add("n8n-nodes-base.set", "Shape", json!({})).await;
    let set = s.wf.node_by_id(&set).expect("set");
    assert!(!set.extra.contains_key("webhookId"), "{:?}", set.extra);
}

/// Unknown types a small model invented (seen in real runs) get the real types they meant,
/// and stop-words in a made-up name suggest nothing.
#[tokio::test]
async fn unknown_types_get_the_real_types_they_meant() {
    let Some(cat) = real() else { return };
    let s = Session::new(cat.clone());
    let tool = AddNodes::new(cat);
    for (invented, meant) in [
        ("n8n-nodes-emailer.sendEmail", "n8n-nodes-base.emailSend"),
        (
            "n8n-nodes-openweathermap.httpRequest",
            "n8n-nodes-base.openWeatherMap",
        ),
        ("n8n-nodes-base.slackMessage", "n8n-nodes-base.slack"),
        ("n8n-nodes-base.htpRequest", "n8n-nodes-base.httpRequest"),
    ] {
        let e = s
            .err(
                &tool,
                json!({"nodeType": invented, "name": "X",
                       "connectionParametersReasoning": "none", "connectionParameters": {}}),
            )
            .await;
        assert!(e.message.contains(&format!("`{meant}`")), "{invented}: {e}");
    }
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.scraping_and_research", "name": "X",
                   "connectionParametersReasoning": "none", "connectionParameters": {}}),
        )
        .await;
    for wrong in ["executeCommand", "mandrill", "Tool`"] {
        assert!(!e.message.contains(wrong), "{e}");
    }
}

/// A node of the same name and type added in a later step is the same call again: refused,
/// naming the node that is there. Another type may take the name (and gets a unique one).
#[tokio::test]
async fn adding_a_node_that_is_already_there_names_it_instead() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let args = json!({"nodeType": "n8n-nodes-base.set", "name": "Prepare",
                      "connectionParametersReasoning": "r", "connectionParameters": {}});
    let first = s.call(&tool, args.clone()).await.expect("first");
    s.apply(&first);
    let id = s.wf.nodes[0].id.clone().expect("an id");
    let e = s.call(&tool, args).await.expect_err("the same node again");
    assert_eq!(e.code, codes::NODE_EXISTS);
    assert!(e.message.contains(&id), "{}", e.message);
    // Case and spaces do not make it another node.
    let again = json!({"nodeType": "n8n-nodes-base.set", "name": " prepare ",
                       "connectionParametersReasoning": "r", "connectionParameters": {}});
    let e = s.call(&tool, again).await.expect_err("the same node again");
    assert_eq!(e.code, codes::NODE_EXISTS);
    let other = json!({"nodeType": "n8n-nodes-base.code", "name": "Prepare",
                       "connectionParametersReasoning": "r", "connectionParameters": {}});
    let out = s.call(&tool, other).await.expect("another type");
    s.apply(&out);
    let names: Vec<&str> = s.wf.node_names().collect();
    assert_eq!(names, vec!["Prepare", "Prepare1"]);
}

#[tokio::test]
async fn a_type_misspelled_without_ambiguity_is_read_as_the_type_it_names() {
    let s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    // A local model's spelling in an eval run (`n8n-nodes-langchain.lmChatCohere`, sent three
    // times and refused each time): the `@n8n/` scope left out.
    let out = s
        .call(
            &tool,
            json!({"nodeType": "n8n-nodes-langchain.lmChatOpenAi", "name": "Model",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await
        .expect("the scope-less type is read as the real one");
    let msg = text(&out);
    assert!(
        msg.contains("`n8n-nodes-langchain.lmChatOpenAi` is not a node type; it was read as `@n8n/n8n-nodes-langchain.lmChatOpenAi`"),
        "{msg}"
    );
    let ops = ops_of(&out);
    let [Operation::AddNodes { nodes }] = ops.as_slice() else {
        panic!("{ops:?}")
    };
    assert_eq!(nodes[0].node_type, "@n8n/n8n-nodes-langchain.lmChatOpenAi");

    // Another case and the short name alone name one type each.
    let cat = builtin();
    assert_eq!(
        cat.recover_type("N8N-Nodes-Base.HTTPREQUEST"),
        Some("n8n-nodes-base.httpRequest")
    );
    assert_eq!(
        cat.recover_type("httpRequest"),
        Some("n8n-nodes-base.httpRequest")
    );
    assert_eq!(
        cat.recover_type("agent"),
        Some("@n8n/n8n-nodes-langchain.agent")
    );
    // The short name under the other n8n package (a local model's `n8n-nodes-base.chatTrigger`,
    // sent three times); not under a package of someone else's.
    assert_eq!(
        cat.recover_type("n8n-nodes-base.chatTrigger"),
        Some("@n8n/n8n-nodes-langchain.chatTrigger")
    );
    assert_eq!(
        cat.recover_type("@n8n/n8n-nodes-langchain.httpRequest"),
        Some("n8n-nodes-base.httpRequest")
    );
    assert_eq!(
        cat.recover_type("@n8n/n8n-nodes-base.gmailTrigger"),
        Some("n8n-nodes-base.gmailTrigger")
    );
    assert_eq!(cat.recover_type("n8n-nodes-acme.chatTrigger"), None);
    // A type as written, an unknown one, and a short name two types share are not recovered.
    assert_eq!(cat.recover_type("n8n-nodes-base.httpRequest"), None);
    assert_eq!(cat.recover_type("n8n-nodes-base.emailer"), None);
    assert_eq!(cat.recover_type(""), None);

    // Ambiguous: a short name of two packages stays unknown, with suggestions.
    let mut two: Catalogue = (*builtin()).clone();
    let mut other = two
        .get("n8n-nodes-base.code", None)
        .expect("the built-in Code node")
        .clone();
    other.name = "@n8n/n8n-nodes-langchain.code".into();
    two.insert(other);
    assert_eq!(two.recover_type("code"), None);
    let s2 = Session::new(Arc::new(two));
    let tool = AddNodes::new(s2.cat.clone());
    let err = s2
        .err(
            &tool,
            json!({"nodeType": "code", "name": "C", "connectionParametersReasoning": "static",
                   "connectionParameters": {}}),
        )
        .await;
    assert!(err.to_string().contains("not in the catalogue"), "{err}");
}

/// An app's trigger added after the workflow's trigger is a step: its action node, named.
#[tokio::test]
async fn an_apps_trigger_after_the_trigger_becomes_its_action_node() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    s.add("n8n-nodes-base.scheduleTrigger", "Every Monday", json!({}))
        .await;
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.gmailTrigger", "name": "Read Mail",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains("`n8n-nodes-base.gmailTrigger` is a trigger")
            && msg.contains("already starts with \"Every Monday\"")
            && msg.contains("`n8n-nodes-base.gmail`, the node for a step, was added instead"),
        "{msg}"
    );
    let added = s.wf.node_by_name("Read Mail").expect("added");
    assert_eq!(added.node_type, "n8n-nodes-base.gmail");
}

/// Any trigger may be the first; a general-purpose one may also start a workflow beside
/// another.
#[tokio::test]
async fn a_first_trigger_or_a_second_general_one_is_added_as_asked() {
    let mut s = Session::new(builtin());
    let gmail = s
        .add("n8n-nodes-base.gmailTrigger", "New Mail", json!({}))
        .await;
    assert_eq!(
        s.wf.node_by_id(&gmail).expect("trigger").node_type,
        "n8n-nodes-base.gmailTrigger"
    );
    let manual = s
        .add("n8n-nodes-base.manualTrigger", "Test Run", json!({}))
        .await;
    assert_eq!(
        s.wf.node_by_id(&manual).expect("trigger").node_type,
        "n8n-nodes-base.manualTrigger"
    );
}

/// An app's trigger that has no action node is refused while the workflow has a trigger,
/// naming that trigger and what to do instead (the real catalogue: Form.io has only a
/// trigger, which a small model added as three steps after a webhook).
#[tokio::test]
async fn an_apps_trigger_without_an_action_node_is_refused_as_a_step() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let tool = AddNodes::new(s.cat.clone());
    s.add("n8n-nodes-base.webhook", "Receive Orders", json!({}))
        .await;
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.formIoTrigger", "name": "Mark High Priority",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::TRIGGER_EXISTS);
    assert!(
        e.message.contains("already starts with \"Receive Orders\"")
            && e.message.contains("search_nodes")
            && e.message.contains("remove_node \"Receive Orders\""),
        "{}",
        e.message
    );
    assert_eq!(s.wf.nodes.len(), 1);
}
