//! Failures while the answer streams in: retried like a failed request while nothing has been
//! forwarded to the caller, a typed retryable error after that, never retried when the request
//! itself is wrong; cancellation stops the backoff.

use super::support::*;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError};
use agentgraph_agents::nodes::LlmNode;
use agentgraph_runtime::RetryPolicy;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn anthropic_error_after_start(kind: &str, message: &str) -> String {
    anthropic_sse(&[
        json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 3}}}),
        json!({"type": "ping"}),
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    ])
}

/// Mounts `first` for the first request only and `then` for the others.
async fn first_then(server: &MockServer, first: String, then: String) {
    Mock::given(method("POST"))
        .respond_with(sse_response(first))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(then))
        .mount(server)
        .await;
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn anthropic_overloaded_event_before_any_text_is_retried() {
    let server = MockServer::start().await;
    first_then(
        &server,
        anthropic_error_after_start("overloaded_error", "Overloaded"),
        anthropic_text_stream(),
    )
    .await;
    let (ctx, seen) = recording_ctx();
    let r = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.stop_reason, "end_turn");
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(requests(&server).await, 2);
}

#[tokio::test]
async fn anthropic_api_error_event_is_retried_up_to_the_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_error_after_start(
            "api_error",
            "Internal server error",
        )))
        .mount(&server)
        .await;
    let (ctx, _) = recording_ctx();
    let e = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::Server { status: 500, ref message, .. } if message == "Internal server error"),
        "{e:?}"
    );
    assert_eq!(requests(&server).await, 3);
}

#[tokio::test]
async fn anthropic_invalid_request_event_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_error_after_start(
            "invalid_request_error",
            "prompt is too long",
        )))
        .mount(&server)
        .await;
    let (ctx, _) = recording_ctx();
    let e = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::ContextOverflow { ref message, .. } if message == "prompt is too long"),
        "{e:?}"
    );
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn anthropic_break_after_text_is_a_retryable_stream_interrupted_error() {
    let server = MockServer::start().await;
    let broken = anthropic_sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    first_then(&server, broken, anthropic_text_stream()).await;
    let (ctx, seen) = recording_ctx();
    let e = anthropic(&server.uri())
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    let ModelError::StreamInterrupted {
        ref provider,
        chunks,
        ref cause,
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!((provider.as_str(), chunks), ("anthropic", 2));
    assert!(
        matches!(**cause, ModelError::Server { status: 529, .. }),
        "{cause:?}"
    );
    assert!(
        e.is_transient(),
        "a node retry policy may run the call again"
    );
    let text = e.to_string();
    assert!(
        text.contains("stream broke after 2 chunk(s)") && text.contains("Overloaded"),
        "{text}"
    );
    assert_eq!(texts(&seen.lock().unwrap()), ["Hel", "lo"]);
    assert_eq!(requests(&server).await, 1, "not retried in place");
}

#[tokio::test]
async fn openai_stream_cut_before_done_is_retried() {
    // The first chunk carries no text (nothing is forwarded); then the connection ends.
    let server = MockServer::start().await;
    let cut = format!(
        "data: {}\n\n",
        json!({"model": "gpt-test", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    );
    first_then(&server, cut, openai_text_stream()).await;
    let (ctx, seen) = recording_ctx();
    let r = openai(&server.uri(), None)
        .complete(&hello(), &ctx)
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(requests(&server).await, 2);
}

#[tokio::test]
async fn openai_stream_cut_without_a_listener_is_retried() {
    // Without `on_event` nothing was forwarded, so even a cut after text is retried.
    let server = MockServer::start().await;
    let cut = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    );
    first_then(&server, cut, openai_text_stream()).await;
    let r = openai(&server.uri(), None)
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(requests(&server).await, 2);
}

#[tokio::test]
async fn openai_cut_after_text_is_a_stream_interrupted_error() {
    let server = MockServer::start().await;
    let cut = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    );
    first_then(&server, cut, openai_text_stream()).await;
    let (ctx, _) = recording_ctx();
    let e = openai(&server.uri(), None)
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::StreamInterrupted { chunks: 1, ref cause, .. }
            if matches!(**cause, ModelError::Network { .. })),
        "{e:?}"
    );
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn openai_in_stream_invalid_request_error_is_not_retried() {
    let server = MockServer::start().await;
    let body = format!(
        "data: {}\n\n",
        json!({"error": {"message": "context too long", "type": "invalid_request_error",
            "code": "context_length_exceeded"}})
    );
    Mock::given(method("POST"))
        .respond_with(sse_response(body))
        .mount(&server)
        .await;
    let (ctx, _) = recording_ctx();
    let e = openai(&server.uri(), None)
        .complete(&hello(), &ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::ContextOverflow { ref message, .. } if message == "context too long"),
        "{e:?}"
    );
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn cancelling_during_a_backoff_returns_at_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&server)
        .await;
    let slow = RetryPolicy {
        initial_interval: Duration::from_secs(30),
        max_interval: Duration::from_secs(60),
        ..RetryPolicy::default()
    };
    let m = anthropic(&server.uri()).with_retry_policy(slow).unwrap();
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let t = Instant::now();
    let e = m.complete(&hello(), &ctx).await.unwrap_err();
    assert_eq!(e, ModelError::Cancelled);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn llm_node_retry_policy_reruns_a_call_whose_stream_broke() {
    use agentgraph_runtime::stream::{Mode, Modes};
    use agentgraph_runtime::{NodeOptions, RunConfig};
    let server = MockServer::start().await;
    let broken = anthropic_sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hel"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    first_then(&server, broken, anthropic_text_stream()).await;
    let node = LlmNode::new(Arc::new(anthropic(&server.uri())));
    let retry = NodeOptions {
        retry: Some(fast_retry()),
        ..NodeOptions::default()
    };
    let g = llm_graph(Arc::new(node), retry);
    let cfg = RunConfig::default().modes(Modes::of(&[Mode::Messages]));
    let (events, out) = g.stream(ask(), cfg).collect().await;
    let out = out.unwrap();
    let messages = out.values["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "Hello, world");
    assert_eq!(requests(&server).await, 2);
    let deltas: Vec<Value> = events.iter().map(|e| e.data()["delta"].clone()).collect();
    assert_eq!(deltas, [json!("Hel"), json!("Hello"), json!(", world")]);
}
