//! Helpers shared by the provider tests.

use agentgraph_runtime::models::anthropic::AnthropicModel;
use agentgraph_runtime::models::openai::OpenAiModel;
use agentgraph_runtime::models::{
    CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, SystemPart, ToolChoice, ToolSpec,
};
use agentgraph_runtime::RetryPolicy;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::ResponseTemplate;

pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        initial_interval: Duration::from_millis(1),
        max_interval: Duration::from_millis(10),
        ..RetryPolicy::default()
    }
}

pub fn anthropic(base: &str) -> AnthropicModel {
    AnthropicModel::new("claude-test", "sk-ant-test")
        .unwrap()
        .with_base_url(base)
        .with_retry_policy(fast_retry())
        .unwrap()
}

pub fn openai(base: &str, key: Option<&str>) -> OpenAiModel {
    OpenAiModel::new("gpt-test", key.map(str::to_string))
        .unwrap()
        .with_base_url(base)
        .with_retry_policy(fast_retry())
        .unwrap()
}

/// A context that records the streamed events.
pub fn recording_ctx() -> (CallContext, Arc<Mutex<Vec<ModelEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let ctx = CallContext {
        node: "agent".into(),
        on_event: Some(Arc::new(move |e| sink.lock().unwrap().push(e))),
        ..CallContext::default()
    };
    (ctx, seen)
}

pub fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

pub fn openai_sse(chunks: &[Value]) -> String {
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

pub fn sse_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

pub fn anthropic_text_stream() -> String {
    anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-test",
            "usage": {"input_tokens": 12, "output_tokens": 1,
                      "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ", world"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ])
}

pub fn texts(events: &[ModelEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

pub fn tool_request() -> ModelRequest {
    ModelRequest {
        system: vec![
            SystemPart {
                text: "You are a bot.".into(),
                cacheable: true,
            },
            SystemPart {
                text: "Tools guide.".into(),
                cacheable: true,
            },
            SystemPart {
                text: "Today is Monday.".into(),
                cacheable: false,
            },
        ],
        messages: vec![
            json!({"type": "system", "content": "Be brief."}),
            json!({"type": "human", "id": "1", "content": "weather in Paris and Rome?"}),
            json!({"type": "ai", "id": "2", "content": "", "tool_calls": [
                {"id": "call_a", "name": "weather", "args": {"city": "Paris"}},
                {"id": "call_b", "name": "weather", "args": {"city": "Rome"}}]}),
            json!({"type": "tool", "id": "3", "tool_call_id": "call_a", "content": "sunny"}),
            json!({"type": "tool", "id": "4", "tool_call_id": "call_b", "content": "rain"}),
        ],
        tools: vec![ToolSpec {
            name: "weather".into(),
            description: "Weather by city".into(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }],
        tool_choice: ToolChoice::Required,
        ..ModelRequest::default()
    }
}

pub fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![json!({"type": "human", "id": "1", "content": "hi"})],
        ..ModelRequest::default()
    }
}

/// A server that sends the start of a stream, then stalls; it reports whether the client closed
/// the connection.
pub async fn stalling_server(first: String) -> (String, tokio::sync::oneshot::Receiver<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = sock.read(&mut buf).await;
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        sock.write_all(head.as_bytes()).await.unwrap();
        sock.write_all(first.as_bytes()).await.unwrap();
        sock.flush().await.unwrap();
        let closed = loop {
            match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break true,
                Ok(Ok(_)) => continue,
                Err(_) => break false,
            }
        };
        let _ = tx.send(closed);
    });
    (format!("http://{addr}"), rx)
}

/// Cancels the call once the first text piece arrives; the call ends with `Cancelled` and the
/// connection is closed.
pub async fn cancel_mid_stream(
    model: Arc<dyn ChatModel>,
    closed: tokio::sync::oneshot::Receiver<bool>,
) {
    let ctx = CallContext::default();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = CallContext {
        on_event: Some(Arc::new(move |e| {
            let _ = tx.send(e);
        })),
        ..ctx
    };
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { model.complete(&hello(), &ctx).await });
    let first = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .unwrap();
    assert_eq!(first, Some(ModelEvent::TextDelta { text: "Hel".into() }));
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(2), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.unwrap_err(), ModelError::Cancelled);
    assert!(
        closed.await.unwrap(),
        "the HTTP connection should be dropped"
    );
}
