//! Helpers shared by the provider tests.

use agentgraph_agents::models::anthropic::AnthropicModel;
use agentgraph_agents::models::http::HttpOptions;
use agentgraph_agents::models::openai::OpenAiModel;
use agentgraph_agents::models::{
    CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, SystemPart, ToolChoice, ToolSpec,
};
use agentgraph_runtime::RetryPolicy;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// HTTP options for tests: a short read timeout and millisecond backoffs.
pub fn quick_options(read_timeout: Duration) -> HttpOptions {
    HttpOptions {
        connect_timeout: Duration::from_secs(5),
        read_timeout,
        retry: fast_retry(),
    }
}

pub fn anthropic_with(base: &str, options: HttpOptions) -> AnthropicModel {
    anthropic(base).with_http_options(options).unwrap()
}

pub fn openai_with(base: &str, options: HttpOptions) -> OpenAiModel {
    openai(base, None).with_http_options(options).unwrap()
}

/// How a [`sequence_server`] answers one connection.
pub enum Reply {
    /// Sends this event-stream body, then closes the connection.
    Full(String),
    /// Sends this start of an event stream, then stalls (until the client hangs up).
    Stall(String),
}

/// A loopback HTTP server answering its n-th connection with `replies[n]` (the last reply
/// repeats); it counts the requests it received.
pub async fn sequence_server(replies: Vec<Reply>) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let replies = Arc::new(replies);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let replies = replies.clone();
            tokio::spawn(async move {
                read_request(&mut sock).await;
                let reply = &replies[n.min(replies.len() - 1)];
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            connection: close\r\n\r\n";
                let (body, stall) = match reply {
                    Reply::Full(b) => (b, false),
                    Reply::Stall(b) => (b, true),
                };
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.flush().await;
                if stall {
                    let mut buf = [0u8; 1024];
                    while let Ok(Ok(n)) =
                        tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await
                    {
                        if n == 0 {
                            break;
                        }
                    }
                } else {
                    let _ = sock.shutdown().await;
                }
            });
        }
    });
    (format!("http://{addr}"), count)
}

/// Reads one request: its head and `content-length` bytes of body.
async fn read_request(sock: &mut tokio::net::TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + len {
                return;
            }
        }
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}

/// An Anthropic stream cut by `max_tokens` in the middle of a `weather` tool call.
pub fn anthropic_cut_tool_stream() -> String {
    anthropic_sse(&[
        json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 30}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Os"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 50}}),
        json!({"type": "message_stop"}),
    ])
}

pub fn openai_text_stream() -> String {
    openai_sse(&[
        json!({"model": "gpt-test", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": ", world"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])
}

/// A graph running one `llm` node on a `messages` channel.
pub fn llm_graph(
    node: Arc<dyn agentgraph_runtime::Node>,
    options: agentgraph_runtime::NodeOptions,
) -> agentgraph_runtime::CompiledGraph {
    use agentgraph_runtime::{ChannelSpec, GraphBuilder, ValueType, END, START};
    let messages = ChannelSpec::new("messages", ValueType::Messages)
        .reducer(Arc::new(agentgraph_runtime::AddMessages))
        .default_value(json!([]));
    GraphBuilder::new("g")
        .channel(messages)
        .node_with("agent", node, options)
        .chain(&[START, "agent", END])
        .compile()
        .unwrap()
}

pub fn ask() -> agentgraph_runtime::Input {
    agentgraph_runtime::Input::values(
        json!({"messages": [{"type": "human", "id": "h1", "content": "hi"}]}),
    )
}
