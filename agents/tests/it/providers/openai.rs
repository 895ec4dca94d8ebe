//! The OpenAI Chat Completions provider (and compatible servers).

use super::support::*;
use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelEvent};
use serde_json::{json, Value};
use std::sync::Arc;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn text_stream() -> String {
    openai_sse(&[
        json!({"object": "chat.completion.chunk", "model": "gpt-test",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": ", world"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 4,
            "prompt_tokens_details": {"cached_tokens": 32}}}),
    ])
}

#[tokio::test]
async fn openai_streams_text_in_order_with_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(sse_response(text_stream()))
        .expect(1)
        .mount(&server)
        .await;
    let (ctx, seen) = recording_ctx();
    let base = format!("{}/v1/", server.uri());
    let r = openai(&base, Some("sk-test"))
        .complete(&hello(), &ctx)
        .await
        .unwrap();
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.stop_reason, "stop");
    assert_eq!(r.model, "gpt-test");
    assert_eq!((r.usage.input_tokens, r.usage.cache_read_tokens), (18, 32));
    assert_eq!(r.usage.output_tokens, 4);
}

#[tokio::test]
async fn openai_assembles_tool_calls_by_index_and_shapes_the_request() {
    let server = MockServer::start().await;
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut f = json!({"arguments": args});
        if let Some(n) = name {
            f["name"] = json!(n);
        }
        let mut c = json!({"index": index, "function": f});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [c]}, "finish_reason": null}]})
    };
    let body = openai_sse(&[
        call(0, Some("call_1"), Some("weather"), ""),
        call(0, None, None, "{\"ci"),
        call(1, Some("call_2"), Some("weather"), "{\"city\":"),
        call(0, None, None, "ty\": \"Oslo\"}"),
        call(1, None, None, " \"Bergen\"}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    Mock::given(method("POST"))
        .respond_with(sse_response(body))
        .mount(&server)
        .await;
    let (ctx, seen) = recording_ctx();
    let r = openai(&server.uri(), None)
        .complete(&tool_request(), &ctx)
        .await
        .unwrap();
    assert_eq!(r.stop_reason, "tool_calls");
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(
        (r.tool_calls[0].id.as_str(), r.tool_calls[0].name.as_str()),
        ("call_1", "weather")
    );
    assert_eq!(r.tool_calls[0].args, json!({"city": "Oslo"}));
    assert_eq!(r.tool_calls[1].args, json!({"city": "Bergen"}));
    let deltas = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ModelEvent::ToolCallDelta { .. }))
        .count();
    assert_eq!(deltas, 5);

    let reqs = server.received_requests().await.unwrap();
    assert!(
        reqs[0].headers.get("authorization").is_none(),
        "no key, no Authorization header"
    );
    let sent: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(
        msgs[0],
        json!({"role": "system",
        "content": "You are a bot.\n\nTools guide.\n\nToday is Monday.\n\nBe brief."})
    );
    assert_eq!(
        msgs[1],
        json!({"role": "user", "content": "weather in Paris and Rome?"})
    );
    assert_eq!(msgs[2]["content"], Value::Null);
    assert_eq!(
        msgs[2]["tool_calls"][1],
        json!({"id": "call_b", "type": "function",
        "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}})
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "sunny"})
    );
    assert_eq!(msgs[4]["tool_call_id"], "call_b");
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["tools"][0]["type"], "function");
    assert_eq!(sent["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn openai_errors_map_and_retry() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(text_stream()))
        .up_to_n_times(1)
        .with_priority(3)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})))
        .with_priority(4)
        .mount(&server)
        .await;
    let m = openai(&server.uri(), Some("sk-test"));
    let r = m.complete(&hello(), &CallContext::default()).await.unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let e = m
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::InvalidCredentials { ref message, .. } if message.contains("Incorrect")),
        "{e:?}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        4,
        "401 is not retried"
    );
}

#[tokio::test]
async fn openai_truncated_stream_and_bad_arguments_are_errors() {
    // A stream cut short is retried (no caller received its text), then reported.
    let server = MockServer::start().await;
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    Mock::given(method("POST"))
        .respond_with(sse_response(cut.into()))
        .expect(3)
        .mount(&server)
        .await;
    let e = openai(&server.uri(), None)
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::Network { ref message, .. } if message.contains("[DONE]")),
        "{e:?}"
    );
    // Arguments that are not JSON are not retried.
    let server = MockServer::start().await;
    let bad = openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{oops"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    Mock::given(method("POST"))
        .respond_with(sse_response(bad))
        .expect(1)
        .mount(&server)
        .await;
    let e = openai(&server.uri(), None)
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::InvalidResponse { .. }), "{e:?}");
}

#[tokio::test]
async fn openai_from_lookup_key_is_optional_for_local_servers() {
    let e = OpenAiModel::from_lookup("gpt", |_| None).unwrap_err();
    assert!(matches!(e, ModelError::Config(ref m) if m.contains("OPENAI_API_KEY")));
    let local = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:11434/v1".to_string());
    let m = OpenAiModel::from_lookup("llama3", local).unwrap();
    assert!(format!("{m:?}").contains("has_api_key: false"));
    assert_eq!(m.name(), "openai/llama3");
}

#[tokio::test]
async fn openai_cancel_mid_stream_drops_the_connection() {
    let first = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    );
    let (base, closed) = stalling_server(first).await;
    cancel_mid_stream(Arc::new(openai(&base, None)), closed).await;
}

#[test]
fn one_call_per_answer_is_sent_as_parallel_tool_calls() {
    let m = openai("http://127.0.0.1:9", Some("k"));
    let mut req = tool_request();
    assert!(m.request_body(&req).get("parallel_tool_calls").is_none());
    req.parallel_tool_calls = Some(false);
    assert_eq!(m.request_body(&req)["parallel_tool_calls"], json!(false));
    req.parallel_tool_calls = Some(true);
    assert_eq!(m.request_body(&req)["parallel_tool_calls"], json!(true));
    // Without tools there is nothing to call: the flag is not sent.
    let mut plain = hello();
    plain.parallel_tool_calls = Some(false);
    assert!(m.request_body(&plain).get("parallel_tool_calls").is_none());
}

#[test]
fn a_named_tool_is_sent_as_required_with_that_tool_alone_to_compatible_servers() {
    use agentgraph_agents::models::ToolChoice;
    let vars = |base: &'static str, how: Option<&'static str>| {
        move |v: &str| match v {
            "OPENAI_BASE_URL" => Some(base.to_string()),
            "OPENAI_API_KEY" => Some("k".to_string()),
            "OPENAI_NAMED_TOOL_CHOICE" => how.map(str::to_string),
            _ => None,
        }
    };
    let mut req = tool_request();
    req.tools.push(agentgraph_agents::models::ToolSpec {
        name: "clock".into(),
        description: "The time".into(),
        input_schema: json!({"type": "object"}),
    });
    req.tool_choice = ToolChoice::Tool("clock".into());
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // A local server (llama.cpp's drops an object tool choice): `required`, one tool.
    let local = OpenAiModel::from_lookup("m", vars("http://127.0.0.1:8089/v1", None)).unwrap();
    let body = local.request_body(&req);
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(names(&body), ["clock"]);
    // The official API: the named form, every tool.
    let official = OpenAiModel::from_lookup("m", vars("https://api.openai.com/v1", None)).unwrap();
    let body = official.request_body(&req);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "clock"}})
    );
    assert_eq!(names(&body), ["weather", "clock"]);
    // The variable overrides the default either way.
    let native =
        OpenAiModel::from_lookup("m", vars("http://127.0.0.1:1/v1", Some("native"))).unwrap();
    assert_eq!(names(&native.request_body(&req)), ["weather", "clock"]);
    let only = OpenAiModel::from_lookup("m", vars("https://api.openai.com/v1", Some("only-tool")))
        .unwrap();
    assert_eq!(names(&only.request_body(&req)), ["clock"]);
    // A name that is not offered is sent as it is.
    req.tool_choice = ToolChoice::Tool("nope".into());
    let body = local.request_body(&req);
    assert_eq!(names(&body), ["weather", "clock"]);
    assert_eq!(body["tool_choice"]["function"]["name"], "nope");
    // Other choices are untouched.
    req.tool_choice = ToolChoice::Required;
    assert_eq!(names(&local.request_body(&req)), ["weather", "clock"]);
    let err =
        OpenAiModel::from_lookup("m", vars("http://127.0.0.1:1/v1", Some("object"))).unwrap_err();
    assert!(
        err.to_string().contains("`native`, `only-tool` or `hint`"),
        "{err}"
    );
}

#[test]
fn a_hinted_named_tool_keeps_every_tool_and_asks_for_it_last() {
    use agentgraph_agents::models::ToolChoice;
    let lookup = |v: &str| match v {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:8089/v1".to_string()),
        "OPENAI_API_KEY" => Some("k".to_string()),
        "OPENAI_NAMED_TOOL_CHOICE" => Some("hint".to_string()),
        _ => None,
    };
    let m = OpenAiModel::from_lookup("m", lookup).unwrap();
    let mut req = tool_request();
    req.tools.push(agentgraph_agents::models::ToolSpec {
        name: "clock".into(),
        description: "The time".into(),
        input_schema: json!({"type": "object"}),
    });
    let free = m.request_body(&req);
    req.tool_choice = ToolChoice::Tool("clock".into());
    let forced = m.request_body(&req);
    assert_eq!(forced["tool_choice"], "required");
    // The same tools and the same messages as a free call, so a prompt cache holds…
    assert_eq!(forced["tools"], free["tools"]);
    let (free_msgs, forced_msgs) = (
        free["messages"].as_array().unwrap(),
        forced["messages"].as_array().unwrap(),
    );
    assert_eq!(forced_msgs.len(), free_msgs.len() + 1);
    assert_eq!(&forced_msgs[..free_msgs.len()], &free_msgs[..]);
    // …and one user message at the end naming the tool.
    assert_eq!(
        forced_msgs.last().unwrap(),
        &json!({"role": "user", "content": "Call the `clock` tool now."})
    );
    // A name that is not offered gets no hint.
    req.tool_choice = ToolChoice::Tool("nope".into());
    assert_eq!(m.request_body(&req)["messages"], free["messages"]);
}
