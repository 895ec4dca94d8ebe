//! The public-API client against n8n itself: a workflow round trip, tags, and the errors a
//! user meets (bad key, unknown id, unreachable address, a body n8n refuses).

use agentgraph_n8n::client::{ClientError, N8nClient, RetryPolicy, WorkflowQuery};
use serde_json::json;
use std::time::Duration;

fn workflow(name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "nodes": [
            {"id": "7f1c2d9e-0000-4000-8000-000000000001", "name": "Start",
             "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0],
             "parameters": {}},
            {"id": "7f1c2d9e-0000-4000-8000-000000000002", "name": "Shape",
             "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [220, 0],
             "parameters": {"assignments": {"assignments": [
                 {"id": "a", "name": "greeting", "value": "hello", "type": "string"}]},
                 "options": {}}}
        ],
        "connections": {"Start": {"main": [[{"node": "Shape", "type": "main", "index": 0}]]}},
        // Properties n8n's schema refuses are dropped by the client.
        "pinData": {}, "meta": {"instanceId": "x"}, "active": true,
    })
}

#[tokio::test]
async fn a_workflow_round_trips_through_create_get_update_list_and_delete() {
    let Some(client) = super::client() else {
        return;
    };
    let sent = workflow("agentgraph client round trip");
    let created = client.create_workflow(&sent).await.expect("create");
    let id = created["id"].as_str().expect("an id").to_string();
    assert_eq!(created["active"], json!(false), "created inactive");
    let got = client.get_workflow(&id).await.expect("get");
    assert_eq!(got["name"], sent["name"]);
    assert_eq!(got["connections"], sent["connections"]);
    for (a, b) in got["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(sent["nodes"].as_array().unwrap())
    {
        for key in [
            "id",
            "name",
            "type",
            "typeVersion",
            "position",
            "parameters",
        ] {
            assert_eq!(a[key], b[key], "node {} {key}", b["name"]);
        }
    }
    let mut changed = sent.clone();
    changed["name"] = json!("agentgraph client round trip (renamed)");
    changed["nodes"][1]["parameters"]["assignments"]["assignments"][0]["value"] = json!("bye");
    client.update_workflow(&id, &changed).await.expect("update");
    let got = client.get_workflow(&id).await.expect("get after update");
    assert_eq!(got["name"], changed["name"]);
    assert_eq!(
        got["nodes"][1]["parameters"],
        changed["nodes"][1]["parameters"]
    );
    let listed = client
        .list_workflows(&WorkflowQuery {
            name: Some("agentgraph client round trip (renamed)".into()),
            ..Default::default()
        })
        .await
        .expect("list");
    assert!(listed.iter().any(|w| w["id"] == json!(id)), "{listed:?}");
    // Tags: create (or reuse) one and put it on the workflow.
    let tag = match client.create_tag("agentgraph-e2e").await {
        Ok(t) => t,
        Err(ClientError::Rejected { .. }) => client
            .list_tags()
            .await
            .expect("tags")
            .into_iter()
            .find(|t| t["name"] == "agentgraph-e2e")
            .expect("the existing tag"),
        Err(e) => panic!("create tag: {e}"),
    };
    let tag_id = tag["id"].as_str().expect("tag id").to_string();
    let tags = client
        .set_workflow_tags(&id, std::slice::from_ref(&tag_id))
        .await
        .expect("set tags");
    assert_eq!(tags.len(), 1, "{tags:?}");
    assert_eq!(
        client.workflow_tags(&id).await.expect("tags")[0]["id"],
        json!(tag_id)
    );
    // A Manual trigger cannot be activated: n8n says so, and the client says what it was.
    let refused = client
        .activate_workflow(&id)
        .await
        .expect_err("manual-only workflow");
    assert!(refused.is_rejection(), "{refused}");
    assert!(refused.to_string().contains("activation"), "{refused}");
    client.delete_workflow(&id).await.expect("delete");
    let gone = client.get_workflow(&id).await.expect_err("deleted");
    assert!(
        matches!(&gone, ClientError::NotFound { what: "workflow", id: i } if *i == id),
        "{gone:?}"
    );
    assert!(gone.to_string().contains("check the id"), "{gone}");
}

#[tokio::test]
async fn credential_schemas_are_readable() {
    let Some(client) = super::client() else {
        return;
    };
    let schema = client.credential_schema("slackApi").await.expect("schema");
    assert!(schema["properties"]["accessToken"].is_object(), "{schema}");
    let e = client
        .credential_schema("noSuchCredentialType")
        .await
        .expect_err("unknown");
    assert!(
        matches!(
            e,
            ClientError::NotFound { .. } | ClientError::Rejected { .. }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn errors_say_what_to_fix() {
    let Some(n8n) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let bad_key = N8nClient::new(&n8n.url, "not-a-key").expect("client");
    let e = bad_key.get_workflow("x").await.expect_err("bad key");
    assert!(matches!(e, ClientError::Unauthorized { .. }), "{e:?}");
    assert!(e.to_string().contains("N8N_API_KEY"), "{e}");
    // A closed loopback port: refused at once, retried, then a clear message.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let policy = RetryPolicy {
        attempts: 2,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
    };
    let nowhere = N8nClient::with_policy(&format!("http://127.0.0.1:{port}"), "k", policy).unwrap();
    let e = nowhere.list_tags().await.expect_err("unreachable");
    assert!(matches!(e, ClientError::Unreachable { .. }), "{e:?}");
    assert!(e.to_string().contains("is n8n running there"), "{e}");
    // A body n8n's schema refuses: its message, with the node it names.
    let client = super::client().expect("instance");
    let mut wf = workflow("agentgraph rejected");
    wf["nodes"][1]["parameters"] = json!("not an object");
    let e = client.create_workflow(&wf).await.expect_err("rejected");
    assert!(e.is_rejection(), "{e:?}");
    assert_eq!(e.node(), Some("Shape"), "{e}");
    assert!(e.to_string().contains("parameters"), "{e}");
}
