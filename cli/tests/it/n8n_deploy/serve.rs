//! `serve --n8n`: a builder thread run over HTTP, then deployed, redeployed and activated
//! through `/threads/{id}/n8n/…` into the real n8n; a rejection from a mock n8n is a 422.

use super::*;
use std::io::BufRead;
use std::process::Child;
use std::time::Duration;

/// `agentgraph serve --n8n` on a free port over the repository's graphs.
struct Serve {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Starts it and reads the bound address from the `serving on http://…` line of stderr.
    fn start(db: &Path, (url, key): (&str, &str)) -> Serve {
        let args = [
            "serve",
            "--graphs",
            "graphs",
            "--addr",
            "127.0.0.1:0",
            "--n8n",
        ];
        let mut child = command(db, &scripts("deploy"), url, key, &args)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentgraph serve starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = std::io::BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let base = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(rest) = line.strip_prefix("serving on ") {
                        break rest
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_string();
                    }
                    seen.push(line);
                }
                _ => panic!("agentgraph serve exited before listening: {seen:?}"),
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Serve {
            child,
            base,
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, post: bool, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut req = if post {
            self.http.post(url)
        } else {
            self.http.get(url)
        };
        match body {
            Some(b) => req = req.json(&b),
            // A bodyless POST still says JSON (the server refuses other POSTs with 415).
            None if post => req = req.header("content-type", "application/json"),
            None => {}
        }
        let r = req.send().await.expect("the server answers");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Runs turn 1 of the builder on `thread` and waits until it is done; returns its state.
    async fn build(&self, thread: &str) -> Value {
        let input = json!({"messages": [{"type": "human", "content": TURN1}]});
        let run = json!({"graph": "workflow-builder/single-agent.ag", "input": input});
        let (st, v) = self
            .call(true, &format!("/threads/{thread}/runs"), Some(run))
            .await;
        assert_eq!(st, 202, "{v}");
        for _ in 0..1500 {
            let (_, v) = self
                .call(false, &format!("/threads/{thread}/state"), None)
                .await;
            if v["active"] == false {
                assert!(v["next"] == json!([]), "{v}");
                return v["values"].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the run on {thread} did not end");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_deploys_redeploys_and_activates_a_thread() {
    let Some(inst) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let n8n = RealN8n::new(&inst);
    let db = tempfile::tempdir().expect("tempdir");
    let s = Serve::start(db.path(), n8n.env());
    let values = s.build("served").await;
    assert_eq!(greeting(&values["workflow"]), json!("hello"));

    let (st, v) = s.call(false, "/threads/served/n8n", None).await;
    assert_eq!(
        (st, &v["workflow_id"], &v["url"]),
        (200, &Value::Null, &Value::Null),
        "{v}"
    );

    let (st, v) = s.call(true, "/threads/served/n8n/deploy", None).await;
    assert_eq!(st, 200, "{v}");
    let id = v["workflow_id"].as_str().expect("an id").to_string();
    n8n.track(&id);
    let url = format!("{}/workflow/{id}", n8n.url);
    assert_eq!(v["created"], true);
    assert_eq!(v["url"], json!(url));
    assert_eq!(kept(&n8n.workflow(&id)), kept(&values["workflow"]));

    let (st, v) = s.call(false, "/threads/served/n8n", None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!((&v["workflow_id"], &v["url"]), (&json!(id), &json!(url)));
    let (_, state) = s.call(false, "/threads/served/state", None).await;
    assert_eq!(state["values"]["n8n_workflow_id"], json!(id));

    // Again: the same workflow, updated.
    let (st, v) = s.call(true, "/threads/served/n8n/deploy", None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (&v["workflow_id"], &v["created"]),
        (&json!(id), &json!(false))
    );

    let (st, v) = s.call(true, "/threads/served/n8n/activate", None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (&v["workflow_id"], &v["active"]),
        (&json!(id), &json!(true))
    );
    assert_eq!(n8n.workflow(&id)["active"], true);

    let (st, v) = s.call(true, "/threads/nobody/n8n/deploy", None).await;
    assert_eq!(
        (st, &v["error"]["code"]),
        (404, &json!("THREAD_NOT_FOUND")),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_answers_a_rejection_with_422_and_the_node() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let mock = MockServer::start().await;
    let message = "request/body/nodes/1/parameters must be object";
    Mock::given(method("POST"))
        .and(path("/api/v1/workflows"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"message": message})))
        .mount(&mock)
        .await;
    let db = tempfile::tempdir().expect("tempdir");
    let s = Serve::start(db.path(), (&mock.uri(), "mock-key"));
    s.build("rejected").await;
    let (st, v) = s.call(true, "/threads/rejected/n8n/deploy", None).await;
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["code"], "N8N_REJECTED");
    assert_eq!(v["error"]["node"], "Greeting");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(message),
        "{v}"
    );
    let (_, v) = s.call(false, "/threads/rejected/n8n", None).await;
    assert_eq!(v["workflow_id"], Value::Null, "nothing recorded");

    // The n8n routes are documented next to the server's own.
    let (st, doc) = s.call(false, "/openapi.json", None).await;
    assert_eq!(st, 200, "{doc}");
    for (method, path) in [
        ("get", "/threads/{id}/n8n"),
        ("post", "/threads/{id}/n8n/deploy"),
        ("post", "/threads/{id}/n8n/activate"),
        ("post", "/threads/{id}/runs"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is not in /openapi.json"
        );
    }
}
