//! Read timeouts: a late answer is retried with backoff and, after the attempt budget, is a
//! typed network error; a stream that stalls before anything was forwarded is retried too.

use crate::support::*;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

const TIMEOUT: Duration = Duration::from_millis(200);
/// Far longer than [`TIMEOUT`]: only a timeout ends the wait.
const LATE: Duration = Duration::from_secs(3);

fn is_timeout(e: &ModelError) -> bool {
    matches!(e, ModelError::Network { message, .. } if message.contains("timed out"))
}

/// Every attempt times out: three requests (the policy's budget), then a typed timeout.
async fn late_answers_exhaust_the_budget(model: impl ChatModel, server: &MockServer) {
    let t = Instant::now();
    let e = model
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert!(is_timeout(&e), "{e:?}");
    assert!(
        e.is_transient(),
        "a timeout stays retryable for a node policy"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    assert!(t.elapsed() < LATE, "gave up on timeouts: {:?}", t.elapsed());
}

#[tokio::test]
async fn anthropic_late_answer_is_retried_then_a_typed_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()).set_delay(LATE))
        .mount(&server)
        .await;
    let m = anthropic_with(&server.uri(), quick_options(TIMEOUT));
    late_answers_exhaust_the_budget(m, &server).await;
}

#[tokio::test]
async fn openai_late_answer_is_retried_then_a_typed_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(openai_text_stream()).set_delay(LATE))
        .mount(&server)
        .await;
    let m = openai_with(&server.uri(), quick_options(TIMEOUT));
    late_answers_exhaust_the_budget(m, &server).await;
}

/// The first attempt times out, the second answers.
async fn first_late_then_fine(model: impl ChatModel, server: &MockServer) {
    let (ctx, seen) = recording_ctx();
    let r = model.complete(&hello(), &ctx).await.unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn anthropic_timeout_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()).set_delay(LATE))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(anthropic_text_stream()))
        .mount(&server)
        .await;
    let m = anthropic_with(&server.uri(), quick_options(TIMEOUT));
    first_late_then_fine(m, &server).await;
}

#[tokio::test]
async fn openai_timeout_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(openai_text_stream()).set_delay(LATE))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse_response(openai_text_stream()))
        .mount(&server)
        .await;
    let m = openai_with(&server.uri(), quick_options(TIMEOUT));
    first_late_then_fine(m, &server).await;
}

#[tokio::test]
async fn anthropic_stream_stalling_before_any_text_is_retried() {
    // message_start and a ping forward nothing to the caller, so the stall is retried.
    let start = anthropic_sse(&[
        json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 1}}}),
        json!({"type": "ping"}),
    ]);
    let (base, requests) = sequence_server(vec![
        Reply::Stall(start),
        Reply::Full(anthropic_text_stream()),
    ])
    .await;
    let m = anthropic_with(&base, quick_options(TIMEOUT));
    let (ctx, seen) = recording_ctx();
    let r = m.complete(&hello(), &ctx).await.unwrap();
    assert_eq!(r.text, "Hello, world");
    assert_eq!(texts(&seen.lock().unwrap()), ["Hello", ", world"]);
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn openai_stream_stalling_after_text_is_a_stream_interrupted_error() {
    let start = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})
    );
    let (base, requests) =
        sequence_server(vec![Reply::Stall(start), Reply::Full(openai_text_stream())]).await;
    let m = openai_with(&base, quick_options(TIMEOUT));
    let (ctx, seen) = recording_ctx();
    let e = m.complete(&hello(), &ctx).await.unwrap_err();
    let ModelError::StreamInterrupted {
        chunks, ref cause, ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(chunks, 1);
    assert!(is_timeout(cause), "{cause:?}");
    assert!(e.is_transient());
    assert!(e.to_string().contains("broke after 1 chunk(s)"), "{e}");
    assert_eq!(texts(&seen.lock().unwrap()), ["Hel"]);
    assert_eq!(requests.load(Ordering::SeqCst), 1, "not retried in place");
}
