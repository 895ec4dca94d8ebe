//! Unit tests of the HTTP plumbing: status mapping, retry decisions, `retry-after`, error
//! bodies and the message readers.

use super::errors::MAX_ERROR_BODY;
use super::*;

#[test]
fn statuses_map_to_typed_errors() {
    let e = status_error("p", 401, None, r#"{"error":{"message":"bad key"}}"#);
    assert!(
        matches!(e, ModelError::InvalidCredentials { ref message, .. } if message == "bad key")
    );
    let e = status_error("p", 429, Some(Duration::from_secs(2)), "");
    assert!(matches!(e, ModelError::RateLimited { retry_after: Some(d), .. } if d.as_secs() == 2));
    assert!(matches!(
        status_error("p", 529, None, "x"),
        ModelError::Server { status: 529, .. }
    ));
    let e = status_error(
        "p",
        400,
        None,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens missing"}}"#,
    );
    assert!(
        matches!(e, ModelError::BadRequest { ref message, .. } if message == "max_tokens missing")
    );
}

#[test]
fn a_cut_answer_is_never_retried() {
    let cut = ModelError::OutputTruncated {
        provider: "p".into(),
        tool: "t".into(),
        max_tokens: Some(5),
        partial: String::new(),
        usage: Default::default(),
    };
    let any = RetryPolicy {
        retry_on: RetryOn::Any,
        ..RetryPolicy::default()
    };
    assert!(!should_retry(&any, &cut));
    assert!(!should_retry(&RetryPolicy::default(), &cut));
    let broke = ModelError::StreamInterrupted {
        provider: "p".into(),
        chunks: 2,
        cause: Box::new(ModelError::Network {
            provider: "p".into(),
            message: "timed out".into(),
        }),
    };
    assert!(should_retry(&RetryPolicy::default(), &broke));
    let by_code = RetryPolicy {
        retry_on: RetryOn::Codes(vec!["stream_interrupted".into()]),
        ..RetryPolicy::default()
    };
    assert!(should_retry(&by_code, &broke) && !should_retry(&by_code, &cut));
}

#[test]
fn retry_after_parses_seconds() {
    assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
    assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
    assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    assert_eq!(parse_retry_after("-1"), None);
}

#[test]
fn long_bodies_are_cut_on_char_boundaries() {
    let body = "é".repeat(400);
    let m = error_message(&body);
    assert!(m.len() <= MAX_ERROR_BODY + '…'.len_utf8());
}

#[test]
fn message_helpers_read_both_spellings() {
    let m = serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, "b"],
        "tool_calls": [{"id": "1", "name": "t", "args": {"x": 1}}]});
    assert_eq!(message_role(&m), Some("assistant"));
    assert_eq!(message_text(&m), "ab");
    assert_eq!(message_tool_calls(&m)[0].2["x"], 1);
}

#[test]
fn context_overflow_bodies_of_each_provider_are_typed() {
    let sizes = |status: u16, body: &str| match status_error("p", status, None, body) {
        ModelError::ContextOverflow {
            prompt_tokens,
            context_tokens,
            ..
        } => Some((prompt_tokens, context_tokens)),
        _ => None,
    };
    let openai = r#"{"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#;
    assert_eq!(sizes(400, openai), Some((Some(130512), Some(128000))));
    let anthropic = r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}}"#;
    assert_eq!(sizes(400, anthropic), Some((Some(208310), Some(200000))));
    let older_llama = r#"{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}"#;
    assert_eq!(sizes(400, older_llama), Some((None, None)));
    // Other bad requests, and the same words with a server error, stay what they were.
    assert_eq!(
        sizes(400, r#"{"error": {"message": "bad tool schema"}}"#),
        None
    );
    assert_eq!(sizes(500, anthropic), None);
}
