//! Replays streamed answers recorded from a real OpenAI-compatible server
//! (`scripts/record-provider.py` saves each as `NNN.response.sse`, the bytes exactly as the
//! server sent them) on a loopback mock, in a given order, and keeps every request for the
//! test to inspect. A plan entry may also be a hang: the request gets no answer for an hour
//! (a slow model), which the graph's timeouts must cut, or a refusal (where the recording has
//! no complete answer).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The folder of the recorded answers.
pub fn recorded_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire/recorded")
}

/// What the mock answers to one request.
#[derive(Debug, Clone)]
pub enum Step {
    /// A recorded answer: `<case>/<NNN>.response.sse` under [`recorded_dir`].
    Answer(String),
    /// No answer (the request hangs).
    Hang,
    /// A 400 refusal: where a recording has no complete answer to give.
    Refuse,
}

/// A recorded answer by case and number.
pub fn answer(case: &str, n: u32) -> Step {
    Step::Answer(format!("{case}/{n:03}.response.sse"))
}

#[derive(Default)]
struct Seen {
    requests: Vec<Value>,
}

/// The loopback provider.
#[derive(Clone)]
pub struct RecordedProvider {
    plan: Arc<Vec<Step>>,
    seen: Arc<Mutex<Seen>>,
}

impl RecordedProvider {
    /// Starts a mock answering `/v1/chat/completions` with `plan`, one step per request.
    pub async fn start(plan: Vec<Step>) -> (MockServer, RecordedProvider) {
        for step in &plan {
            if let Step::Answer(f) = step {
                let p = recorded_dir().join(f);
                assert!(p.is_file(), "no recorded answer {}", p.display());
            }
        }
        let provider = RecordedProvider {
            plan: Arc::new(plan),
            seen: Arc::default(),
        };
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(provider.clone())
            .mount(&server)
            .await;
        (server, provider)
    }

    /// The request bodies received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
            .clone()
    }
}

impl Respond for RecordedProvider {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let n = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.requests.push(body);
            seen.requests.len()
        };
        match self.plan.get(n - 1) {
            Some(Step::Answer(f)) => {
                let bytes = std::fs::read(recorded_dir().join(f)).unwrap_or_default();
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_raw(bytes, "text/event-stream")
            }
            Some(Step::Hang) => ResponseTemplate::new(200).set_delay(Duration::from_secs(3600)),
            Some(Step::Refuse) => ResponseTemplate::new(400).set_body_string(format!(
                "{{\"error\": {{\"message\": \"request {n}: the recording has no answer here\"}}}}"
            )),
            None => ResponseTemplate::new(400).set_body_string(format!(
                "{{\"error\": {{\"message\": \"the recorded plan has {} answers; request {n} has none\"}}}}",
                self.plan.len()
            )),
        }
    }
}

/// The text and tool calls (`name`, arguments text) of a recorded answer.
pub fn parse_answer(step: &Step) -> (String, Vec<(String, String)>) {
    let Step::Answer(f) = step else {
        return (String::new(), Vec::new());
    };
    let raw = std::fs::read_to_string(recorded_dir().join(f)).unwrap_or_default();
    let mut text = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    for line in raw.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            text.push_str(delta["content"].as_str().unwrap_or_default());
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let i = tc["index"].as_u64().unwrap_or(0) as usize;
                if calls.len() <= i {
                    calls.resize(i + 1, (String::new(), String::new()));
                }
                calls[i]
                    .0
                    .push_str(tc["function"]["name"].as_str().unwrap_or_default());
                calls[i]
                    .1
                    .push_str(tc["function"]["arguments"].as_str().unwrap_or_default());
            }
        }
    }
    (text, calls)
}
