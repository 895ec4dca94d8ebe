//! The Anthropic Messages provider.

use super::support::*;
use agentgraph_agents::models::anthropic::AnthropicModel;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelEvent};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn anthropic_streams_text_in_order_with_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(sse_response(anthropic_text_stream()))
        .expect(1)
        .mount(&server)
        .await;
    let (ctx, seen) = recording_ctx();
    let r = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap();
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.stop_reason, "end_turn");
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (12, 5));
    assert_eq!(
        (r.usage.cache_read_tokens, r.usage.cache_creation_tokens),
        (100, 7)
    );
    assert_eq!(r.model, "claude-test");
}

#[tokio::test]
async fn anthropic_assembles_tool_call_from_json_deltas_and_shapes_the_request() {
    let server = MockServer::start().await;
    let body = anthropic_sse(&[
        json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 30}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Os"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "lo\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
        json!({"type": "message_stop"}),
    ]);
    Mock::given(method("POST"))
        .respond_with(sse_response(body))
        .mount(&server)
        .await;
    let (ctx, seen) = recording_ctx();
    let r = anthropic(&server.uri())
        .complete(&tool_request(), &ctx)
        .await
        .unwrap();
    assert_eq!(r.stop_reason, "tool_use");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "toolu_1");
    assert_eq!(r.tool_calls[0].args, json!({"city": "Oslo"}));
    let pieces: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallDelta {
                index: 0,
                args_delta,
                ..
            } => Some(args_delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(pieces.concat(), "{\"city\": \"Oslo\"}");

    let reqs = server.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    let system = sent["system"].as_array().unwrap();
    assert_eq!(system.len(), 4);
    assert!(system[0].get("cache_control").is_none());
    assert_eq!(system[1]["cache_control"], json!({"type": "ephemeral"}));
    assert!(system[2].get("cache_control").is_none());
    assert_eq!(system[3]["text"], "Be brief.");
    let msgs = sent["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "call_b", "name": "weather", "input": {"city": "Rome"}})
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(
        msgs[2]["content"],
        json!([
        {"type": "tool_result", "tool_use_id": "call_a", "content": "sunny"},
        {"type": "tool_result", "tool_use_id": "call_b", "content": "rain"}])
    );
    assert_eq!(sent["tool_choice"], json!({"type": "any"}));
    assert_eq!(sent["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["max_tokens"], 4096);
}

#[tokio::test]
async fn anthropic_error_event_and_bad_json_are_typed_errors() {
    // An in-stream overload is retried (nothing was forwarded), then reported as such.
    let server = MockServer::start().await;
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
                event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    Mock::given(method("POST"))
        .respond_with(sse_response(body.into()))
        .expect(3)
        .mount(&server)
        .await;
    let e = anthropic(&server.uri())
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::Server { status: 529, ref message, .. } if message == "Overloaded"),
        "{e:?}"
    );
    // Bad JSON is not retried.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response("event: ping\ndata: {not json\n\n".into()))
        .expect(1)
        .mount(&server)
        .await;
    let e = anthropic(&server.uri())
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::InvalidResponse { .. }), "{e:?}");
}

#[tokio::test]
async fn anthropic_from_lookup_needs_a_key() {
    let e = AnthropicModel::from_lookup("m", |_| None).unwrap_err();
    assert!(matches!(e, ModelError::Config(ref m) if m.contains("ANTHROPIC_API_KEY")));
    let m = AnthropicModel::from_lookup("m", |k| Some(format!("{k}-value/"))).unwrap();
    assert!(format!("{m:?}").contains("ANTHROPIC_BASE_URL-value\""));
    assert!(
        !format!("{m:?}").contains("ANTHROPIC_API_KEY"),
        "the key must not be printed"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})))
        .expect(1)
        .mount(&server)
        .await;
    let e = anthropic(&server.uri())
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::InvalidCredentials { ref message, .. } if message == "invalid x-api-key"),
        "{e:?}"
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()))
        .expect(1)
        .mount(&server)
        .await;
    let r = anthropic(&server.uri())
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, world");
}

#[tokio::test]
async fn server_errors_are_retried_then_given_up() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("down"))
        .with_priority(3)
        .mount(&server)
        .await;
    let m = anthropic(&server.uri());
    let r = m.complete(&hello(), &CallContext::default()).await.unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let e = m
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::Server { status: 503, ref message, .. } if message == "down"),
        "{e:?}"
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        6,
        "3 attempts in all"
    );
}

#[tokio::test]
async fn cancelling_a_slow_request_returns_quickly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()).set_delay(Duration::from_secs(30)))
        .mount(&server)
        .await;
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let t = Instant::now();
    let e = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    assert_eq!(e, ModelError::Cancelled);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn anthropic_cancel_mid_stream_drops_the_connection() {
    let first = anthropic_sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
    ]);
    let (base, closed) = stalling_server(first).await;
    cancel_mid_stream(Arc::new(anthropic(&base)), closed).await;
}

#[test]
fn anthropic_request_body_caps_cache_breakpoints_and_maps_options() {
    use agentgraph_agents::models::{ModelRequest, SystemPart, ToolChoice};
    let part = |i: usize| SystemPart {
        text: format!("part {i}"),
        cacheable: i & 1 == 0,
    };
    let mut req = tool_request();
    req.system = (0..12).map(part).collect();
    req.tool_choice = ToolChoice::Tool("weather".into());
    req.max_tokens = Some(99);
    req.temperature = Some(0.25);
    let m = anthropic("http://127.0.0.1:9")
        .with_temperature(1.0)
        .with_max_tokens(7);
    let body = m.request_body(&req);
    let marked = body["system"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b.get("cache_control").is_some())
        .count();
    assert_eq!(marked, 4, "Anthropic allows four breakpoints");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "weather"})
    );
    assert_eq!(
        (body["max_tokens"].clone(), body["temperature"].clone()),
        (json!(99), json!(0.25))
    );
    let body = m.request_body(&ModelRequest {
        tool_choice: ToolChoice::None,
        ..hello()
    });
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert_eq!(
        (body["max_tokens"].clone(), body["temperature"].clone()),
        (json!(7), json!(1.0))
    );
}

#[test]
fn one_call_per_answer_maps_to_disable_parallel_tool_use() {
    use agentgraph_agents::models::ToolChoice;
    let m = anthropic("http://127.0.0.1:9");
    let mut req = tool_request();
    assert!(
        m.request_body(&req)["tool_choice"]
            .get("disable_parallel_tool_use")
            .is_none(),
        "unset: the provider's default"
    );
    req.parallel_tool_calls = Some(false);
    assert_eq!(
        m.request_body(&req)["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    req.tool_choice = ToolChoice::Tool("weather".into());
    assert_eq!(
        m.request_body(&req)["tool_choice"],
        json!({"type": "tool", "name": "weather", "disable_parallel_tool_use": true})
    );
    req.parallel_tool_calls = Some(true);
    assert_eq!(
        m.request_body(&req)["tool_choice"],
        json!({"type": "tool", "name": "weather"})
    );
}
