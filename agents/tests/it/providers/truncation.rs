//! Answers cut off by the output limit: in the middle of a tool call that is a typed,
//! non-retryable error saying which limit to raise; a cut text answer is an answer whose stop
//! reason tells it was cut.

use super::support::*;
use agentgraph_agents::models::anthropic::StreamState;
use agentgraph_agents::models::{CallContext, ChatModel, ModelError, ModelRequest, Usage};
use agentgraph_agents::nodes::LlmNode;
use agentgraph_runtime::{NodeOptions, RunConfig, RunError};
use serde_json::json;
use std::sync::Arc;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

async fn serve_once(body: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse_response(body))
        .expect(1)
        .mount(&server)
        .await;
    server
}

fn with_max_tokens(n: u32) -> ModelRequest {
    ModelRequest {
        max_tokens: Some(n),
        ..hello()
    }
}

#[tokio::test]
async fn anthropic_max_tokens_in_a_tool_call_is_a_typed_error() {
    let server = serve_once(anthropic_cut_tool_stream()).await;
    let e = anthropic(&server.uri())
        .complete(&with_max_tokens(50), &CallContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ModelError::OutputTruncated {
            provider: "anthropic".into(),
            tool: "weather".into(),
            max_tokens: Some(50),
            partial: "{\"city\": \"Os".into(),
            usage: Usage {
                input_tokens: 30,
                output_tokens: 50,
                ..Usage::default()
            },
        }
    );
    assert_eq!(
        e.to_string(),
        "the model hit max_tokens (50) in the middle of tool call `weather`; raise max_tokens \
         in the model block"
    );
    assert!(!e.is_transient());
}

#[tokio::test]
async fn anthropic_text_cut_by_max_tokens_is_an_answer_with_its_stop_reason() {
    let body = anthropic_sse(&[
        json!({"type": "message_start", "message": {"model": "claude-test"}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Once upon a"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ]);
    let server = serve_once(body).await;
    let r = anthropic(&server.uri())
        .complete(&with_max_tokens(3), &CallContext::default())
        .await
        .unwrap();
    assert_eq!(
        (r.text.as_str(), r.stop_reason.as_str()),
        ("Once upon a", "max_tokens")
    );
    // The message the llm node writes (and memory keeps) says it was cut.
    assert!(r.truncated());
    assert_eq!(r.to_message("m1")["stop_reason"], "max_tokens");
}

#[test]
fn anthropic_cut_is_judged_on_the_last_tool_call() {
    let run = |events: &[serde_json::Value]| {
        let mut s = StreamState::new(Some(8));
        for e in events {
            s.handle(e, &|_| {}).unwrap();
        }
        s.finish()
    };
    let start = |i: u64, name: &str| {
        json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": name, "input": {}}})
    };
    let args = |i: u64, text: &str| {
        json!({"type": "content_block_delta", "index": i,
            "delta": {"type": "input_json_delta", "partial_json": text}})
    };
    let end = [
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
        json!({"type": "message_stop"}),
    ];
    // The only call, cut right after the tool's name: no arguments at all.
    let e = run(&[&[start(0, "b")][..], &end[..]].concat()).unwrap_err();
    assert!(
        matches!(e, ModelError::OutputTruncated { ref tool, max_tokens: Some(8), .. } if tool == "b"),
        "{e:?}"
    );
    // A complete call before the cut one is kept, the cut one dropped.
    let r = run(&[
        &[
            start(0, "a"),
            args(0, "{\"x\": 1}"),
            start(1, "b"),
            args(1, "{\"y"),
        ][..],
        &end[..],
    ]
    .concat())
    .unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(
        (r.tool_calls[0].name.as_str(), &r.tool_calls[0].args),
        ("a", &json!({"x": 1}))
    );
    assert_eq!(r.stop_reason, "max_tokens");
    // A call whose arguments are complete JSON was not cut.
    let r = run(&[&[start(0, "a"), args(0, "{\"x\": 1}")][..], &end[..]].concat()).unwrap();
    assert_eq!(r.tool_calls[0].args, json!({"x": 1}));
}

#[tokio::test]
async fn openai_length_in_a_tool_call_is_a_typed_error() {
    let body = openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
            "type": "function", "function": {"name": "weather", "arguments": "{\"ci"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
    ]);
    let server = serve_once(body).await;
    let e = openai(&server.uri(), None)
        .with_max_tokens(64)
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ModelError::OutputTruncated {
            provider: "openai".into(),
            tool: "weather".into(),
            max_tokens: Some(64),
            partial: "{\"ci".into(),
            usage: Usage::default(),
        }
    );
    assert!(e.to_string().contains("max_tokens (64)"), "{e}");
    assert!(!e.is_transient());
}

#[tokio::test]
async fn openai_text_cut_by_length_is_an_answer_with_its_stop_reason() {
    let body = openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": "Once upon a"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
    ]);
    let server = serve_once(body).await;
    let r = openai(&server.uri(), None)
        .complete(&hello(), &CallContext::default())
        .await
        .unwrap();
    assert_eq!(
        (r.text.as_str(), r.stop_reason.as_str()),
        ("Once upon a", "length")
    );
}

#[tokio::test]
async fn llm_node_fails_with_model_output_truncated_and_is_not_retried() {
    let server = serve_once(anthropic_cut_tool_stream()).await;
    let model = anthropic(&server.uri());
    let node = LlmNode::new(Arc::new(model)).max_tokens(50);
    let retry = NodeOptions {
        retry: Some(fast_retry()),
        ..NodeOptions::default()
    };
    let err = llm_graph(Arc::new(node), retry)
        .invoke(ask(), RunConfig::default())
        .await
        .unwrap_err();
    let RunError::NodeFailed {
        ref code,
        ref message,
        ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(code.as_deref(), Some("MODEL_OUTPUT_TRUNCATED"));
    assert!(
        message.contains("raise max_tokens in the model block"),
        "{message}"
    );
}
