//! `chat --n8n` against a loopback mock standing in for n8n: a 400 with n8n's body goes to the
//! user and, as a finding, to the next turn's model request; a 500 leaves the thread alone and
//! the next turn deploys again.

use super::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A mock n8n whose first create answers `first`; later creates answer 200 with id `wf-1`.
async fn n8n_answering_first(first: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/workflows"))
        .respond_with(first)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/workflows"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "wf-1"})))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// Both turns in one session (on a blocking thread: the mock runs on this runtime).
async fn two_turns(db: PathBuf, script: &str, url: String) -> String {
    let script = scripts(script);
    tokio::task::spawn_blocking(move || {
        chat(
            &db,
            &script,
            (&url, "mock-key"),
            &["--thread", "mocked", "--n8n"],
            &format!("{TURN1}\n{TURN2}\n/quit\n"),
        )
    })
    .await
    .expect("the session thread")
}

/// The bodies of the creates the mock received.
async fn creates(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.method.as_str() == "POST" && r.url.path() == "/api/v1/workflows")
        .map(|r| r.body_json::<Value>().expect("a JSON body"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_is_shown_and_handed_to_the_next_turn() {
    let message = "request/body/nodes/0/parameters/rule must be object";
    let server =
        n8n_answering_first(ResponseTemplate::new(400).set_body_json(json!({"message": message})))
            .await;
    let db = tempfile::tempdir().expect("tempdir");
    // The script's turn 2 is only given to a request that carries the rejection: the turn
    // succeeds only if the finding reached the model.
    let text = two_turns(db.path().to_path_buf(), "rejected", server.uri()).await;
    assert!(
        text.contains(&format!(
            "error: n8n rejected the workflow: {message} (node \"Every Hour\")"
        )),
        "{text}"
    );
    assert!(
        text.contains("the next turn asks the agent to fix it"),
        "{text}"
    );
    assert!(text.contains("The greeting now says goodbye."), "{text}");
    assert!(!text.contains("the turn failed"), "{text}");
    assert!(text.contains("n8n: created workflow wf-1"), "{text}");

    let values = thread_values(db.path(), "mocked");
    let humans: Vec<&str> = values["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == "human")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(humans.len(), 2, "{humans:?}");
    assert_eq!(humans[0], TURN1);
    assert!(humans[1].starts_with(TURN2), "{}", humans[1]);
    assert!(
        humans[1].contains(&format!(
            "n8n rejected the workflow: node \"Every Hour\": {message}"
        )),
        "{}",
        humans[1]
    );
    assert_eq!(values["n8n_workflow_id"], "wf-1");
    // The rejected body was turn 1's workflow; the accepted one turn 2's.
    let bodies = creates(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["nodes"][0]["name"], "Every Hour");
    assert_eq!(greeting(&bodies[0]), json!("hello"));
    assert_eq!(greeting(&bodies[1]), json!("goodbye"));
    assert_eq!(kept(&bodies[1]), kept(&values["workflow"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_error_keeps_the_thread_and_the_next_turn_deploys_again() {
    let server = n8n_answering_first(
        ResponseTemplate::new(500).set_body_json(json!({"message": "database is locked"})),
    )
    .await;
    let db = tempfile::tempdir().expect("tempdir");
    let text = two_turns(db.path().to_path_buf(), "deploy", server.uri()).await;
    let line = text
        .lines()
        .find(|l| l.contains("n8n failed (500"))
        .unwrap_or_else(|| panic!("no 500 error:\n{text}"));
    assert!(line.contains("database is locked"), "{line}");
    assert!(line.contains("the next turn deploys again"), "{line}");
    assert!(text.contains("n8n: created workflow wf-1"), "{text}");

    let values = thread_values(db.path(), "mocked");
    let last_human = values["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["type"] == "human")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(last_human, TURN2, "a server error is not a finding");
    assert_eq!(values["n8n_workflow_id"], "wf-1");
    let bodies = creates(&server).await;
    assert_eq!(
        bodies.len(),
        2,
        "a create is never repeated within one deploy"
    );
    assert_eq!(kept(&bodies[1]), kept(&values["workflow"]));
}
