//! The `llm` node's answer to a tool call cut off by the output limit
//! ([`ModelError::OutputTruncated`]): the call is made once more, with a note after the
//! conversation telling the model what happened and to send smaller calls.
//!
//! A small model asked for a whole workflow in one `add_nodes` call can spend its whole
//! `max_tokens` inside the call's arguments; raising the limit only makes the wasted answer
//! longer. The note is part of the second request only: the conversation in state keeps the
//! model's second answer, not the note.
//!
//! When complete calls came before the cut one, the providers keep those and drop the cut call
//! (see `finish` in `models::openai` and `models::anthropic`): the answer is used as it is, and
//! the model goes on from the calls that were made.

use crate::models::{ModelError, ModelRequest};
use serde_json::{json, Value};

/// The message id of the note (stable, so a replayed request is byte-identical).
pub(super) const NOTE_ID: &str = "output-truncated";

/// The note sent after the conversation when the previous answer's tool call was cut off.
pub(super) fn note(cause: &ModelError) -> Value {
    let (tool, limit) = match cause {
        ModelError::OutputTruncated {
            tool, max_tokens, ..
        } => (
            tool.as_str(),
            max_tokens
                .map(|n| format!("{n} tokens"))
                .unwrap_or_else(|| "the output limit".into()),
        ),
        _ => ("", "the output limit".into()),
    };
    json!({
        "type": "human",
        "id": NOTE_ID,
        "content": format!(
            "Your previous answer was cut off at {limit} in the middle of the `{tool}` call, so \
             the call was not made. Send it again in smaller parts: at most 3 tool calls per \
             answer, short arguments, and no text before the calls."
        ),
    })
}

/// `req` with the note appended to its messages.
pub(super) fn retry_request(req: &ModelRequest, cause: &ModelError) -> ModelRequest {
    let mut retry = req.clone();
    retry.messages.push(note(cause));
    retry
}

/// The custom event reporting the retry.
pub(super) fn event(node: &str, cause: &ModelError) -> Value {
    json!({
        "recovery": "output_truncated",
        "node": node,
        "title": format!("answer cut off, calling the model again with a note: {cause}"),
    })
}

/// The custom event for an answer the output limit cut after some complete tool calls: they
/// are kept (the provider dropped the cut call, if any).
pub(super) fn kept_event(node: &str, calls: usize, stop_reason: &str) -> Value {
    json!({
        "recovery": "answer_cut",
        "node": node,
        "kept_calls": calls,
        "title": format!(
            "answer cut off by the output limit ({stop_reason}): its {calls} complete tool \
             call(s) are kept"
        ),
    })
}
