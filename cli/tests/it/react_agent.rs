//! `agentgraph run graphs/agents/react-agent.ag` end to end: offline with the scripted model,
//! against an OpenAI-compatible server and against Anthropic (both loopback servers speaking
//! the real streaming wire formats), and the message a newcomer without a provider gets.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub(crate) const PROVIDER_VARS: [&str; 8] = [
    "AGENTGRAPH_PROVIDER",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_NAMED_TOOL_CHOICE",
];

fn graph() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/agents/react-agent.ag")
}

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs the CLI in `dir` (so the memory folder lands there) with only `env` as provider
/// settings.
fn ag(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(dir)
        .arg("--db")
        .arg(dir.join("db"))
        .args(args)
        .env("NO_COLOR", "1");
    for v in PROVIDER_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn run(dir: &Path, thread: &str, message: &str, env: &[(&str, &str)]) -> Out {
    run_input(dir, thread, &json!({ "message": message }), env)
}

fn run_input(dir: &Path, thread: &str, input: &Value, env: &[(&str, &str)]) -> Out {
    let input = input.to_string();
    let g = graph().display().to_string();
    ag(
        dir,
        &["run", &g, "--thread", thread, "--input", &input, "--json"],
        env,
    )
}

pub(crate) fn final_json(out: &Out) -> Value {
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    let line = out
        .stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("null");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
}

fn state(dir: &Path, thread: &str) -> Value {
    let g = graph().display().to_string();
    let o = ag(
        dir,
        &["state", &g, "--thread", thread, "--json"],
        &[("AGENTGRAPH_PROVIDER", "scripted")],
    );
    final_json(&o)
}

fn tool_message<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["values"]["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["type"] == "tool" && m["name"] == name))
        .unwrap_or_else(|| panic!("no `{name}` tool message in {state}"))
}

#[test]
fn scripted_multi_tool_conversation_offline() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "demo",
        "What is 17 * 23 + 4, and what is our refund policy?",
        &[("AGENTGRAPH_PROVIDER", "scripted")],
    );
    let v = final_json(&out);
    let output = &v["output"];
    assert_eq!(output["iterations"], 3);
    assert_eq!(
        output["tools_used"],
        json!(["calculator", "knowledge_base_search", "http_request"])
    );
    assert!(output["response"].as_str().unwrap().contains("395"));
    assert_eq!(v["usage"]["total"]["calls"], 3);
    assert_eq!(v["usage"]["total"]["input_tokens"], 412 + 655 + 802);

    // The tools really ran: the calculator computed, the knowledge base found the refund
    // document, and the request to the metadata address was refused without stopping the run.
    let s = state(dir.path(), "demo");
    assert_eq!(tool_message(&s, "calculator")["content"]["result"], 395.0);
    let kb = &tool_message(&s, "knowledge_base_search")["content"]["hits"][0];
    assert_eq!(kb["id"], "refunds", "{kb}");
    let http = tool_message(&s, "http_request");
    assert_eq!(http["status"], "error");
    assert_eq!(http["content"]["error"]["code"], "BLOCKED_ADDRESS");
}

const DEMO_QUESTION: &str = "What is 17 * 23 + 4, and what is our refund policy?";

/// The demo in a format, offline; returns the final JSON.
fn scripted_format(dir: &Path, format: &str) -> Value {
    let out = run_input(
        dir,
        format,
        &json!({"message": DEMO_QUESTION, "format": format}),
        &[("AGENTGRAPH_PROVIDER", "scripted")],
    );
    final_json(&out)
}

#[test]
fn every_output_format_works_offline() {
    let dir = tempfile::tempdir().unwrap();
    // text: the answer as a string.
    let v = scripted_format(dir.path(), "text");
    let text = v["output"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(text.starts_with("(scripted demo answer)"), "{text}");
    assert!(text.contains("395"), "{text}");
    assert_eq!(v["usage"]["total"]["calls"], 3);

    // json: the model is told to answer with one JSON object (a templated system part the
    // demo script matches on), and the answer is parsed.
    let v = scripted_format(dir.path(), "json");
    let output = &v["output"];
    assert!(output.is_object(), "{v}");
    assert_eq!(output["scripted_demo"], true);
    assert_eq!(output["result"], 395);
    assert!(
        output["refund_policy"]
            .as_str()
            .unwrap()
            .contains("30 days"),
        "{output}"
    );
    let s = state(dir.path(), "json");
    assert!(
        s["values"]["answer_format"]
            .as_str()
            .unwrap()
            .starts_with("a single JSON object"),
        "{s}"
    );

    // full: the answer with the loop's metadata.
    let v = scripted_format(dir.path(), "full");
    assert_eq!(v["output"]["iterations"], 3);
    assert_eq!(v["output"]["tool_calls"], 3);
    assert_eq!(
        v["output"]["tools_used"],
        json!(["calculator", "knowledge_base_search", "http_request"])
    );
    assert!(v["output"]["response"].as_str().unwrap().contains("395"));
    assert_eq!(v["output"]["usage"]["calls"], 3);
}

#[test]
fn an_unknown_format_is_refused_before_the_model_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_input(
        dir.path(),
        "xml",
        &json!({"message": DEMO_QUESTION, "format": "xml"}),
        &[("AGENTGRAPH_PROVIDER", "scripted")],
    );
    assert_eq!(
        out.code, 1,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("unknown format `xml`: use `text`, `json` or `full`"),
        "{said}"
    );
    // Nothing ran but the refusal: no model call, no output.
    let s = state(dir.path(), "xml");
    assert_eq!(s["values"]["messages"], json!([]), "{s}");
    assert_eq!(s["values"]["output"], Value::Null, "{s}");
    assert_eq!(s["values"]["usage"], json!({}), "{s}");
}

#[test]
fn without_a_provider_the_message_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "t", "hi", &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "AGENTGRAPH_PROVIDER=scripted",
    ] {
        assert!(out.stderr.contains(needle), "{needle} in {}", out.stderr);
    }
}

/// Plays SSE bodies in order, one per request.
struct Sse {
    bodies: Vec<String>,
    next: AtomicUsize,
}

impl Respond for Sse {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        match self.bodies.get(i) {
            Some(b) => ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_raw(b.clone(), "text/event-stream"),
            None => ResponseTemplate::new(500).set_body_string("no more scripted responses"),
        }
    }
}

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
           "model": "llama3.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_compatible_server_from_openai_base_url() {
    let server = MockServer::start().await;
    // First answer: a calculator call whose arguments arrive in three pieces.
    let mut first = sse(&[
        openai_chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": ""}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"expre"}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "ssion\": \"6"}}]}),
            None,
        ),
        openai_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " * 7\"}"}}]}),
            None,
        ),
        openai_chunk(json!({}), Some("tool_calls")),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "llama3.1",
               "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 18, "total_tokens": 138}}),
    ]);
    first.push_str("data: [DONE]\n\n");
    let mut second = sse(&[
        openai_chunk(json!({"role": "assistant", "content": "6 * 7 "}), None),
        openai_chunk(json!({"content": "is 42."}), None),
        openai_chunk(json!({}), Some("stop")),
        json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "llama3.1",
               "choices": [], "usage": {"prompt_tokens": 150, "completion_tokens": 6, "total_tokens": 156}}),
    ]);
    second.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Sse {
            bodies: vec![first, second],
            next: AtomicUsize::new(0),
        })
        .expect(2)
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        run(
            &d,
            "oa",
            "What is 6 * 7?",
            &[("OPENAI_BASE_URL", &base), ("OPENAI_MODEL", "llama3.1")],
        )
    })
    .await
    .unwrap();
    let v = final_json(&out);
    assert_eq!(v["output"]["response"], "6 * 7 is 42.");
    assert_eq!(v["output"]["tools_used"], json!(["calculator"]));
    assert_eq!(v["usage"]["total"]["input_tokens"], 270);

    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(body["model"], "llama3.1");
    assert_eq!(body["stream"], true);
    // The format instruction is sent as a system part (`full`, the default: plain text).
    assert!(
        body.to_string()
            .contains("Answer format for this request: plain text."),
        "{body}"
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["calculator", "http_request", "knowledge_base_search"]
    );
    // The second request carries the assembled call and the calculator's result.
    let msgs = body["messages"].as_array().unwrap();
    let call = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .map(|a| serde_json::from_str::<Value>(a).unwrap()),
        Some(json!({"expression": "6 * 7"}))
    );
    let result = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(
        result["content"].as_str().unwrap().contains("42"),
        "{result}"
    );
}

fn anthropic_events(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_with_a_key() {
    let server = MockServer::start().await;
    let start = |id: &str| {
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": id, "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 300, "output_tokens": 1, "cache_read_input_tokens": 250,
                      "cache_creation_input_tokens": 0}}}),
        )
    };
    let first = anthropic_events(&[
        start("msg_1"),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"expression\": "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "\"2 ^ 10\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 22}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let second = anthropic_events(&[
        start("msg_2"),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "2^10 = 1024."}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 8}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .respond_with(Sse {
            bodies: vec![first, second],
            next: AtomicUsize::new(0),
        })
        .expect(2)
        .mount(&server)
        .await;
    let base = server.uri();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        run(
            &d,
            "an",
            "What is 2^10?",
            &[
                ("ANTHROPIC_API_KEY", "sk-ant-test"),
                ("ANTHROPIC_BASE_URL", &base),
            ],
        )
    })
    .await
    .unwrap();
    let v = final_json(&out);
    assert_eq!(v["output"]["response"], "2^10 = 1024.");
    assert_eq!(v["usage"]["total"]["cache_read_tokens"], 500);

    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    // The static system prompt is marked for prompt caching.
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(result.to_string().contains("1024"), "{result}");
}
