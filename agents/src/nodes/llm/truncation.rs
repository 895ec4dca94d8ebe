//! The `llm` node's answer to a tool call cut off by the output limit
//! ([`ModelError::OutputTruncated`]): the call is made once more, with a note after the
//! conversation telling the model what happened and to send smaller calls.
//!
//! A small model asked for a whole workflow in one `add_nodes` call can spend its whole
//! `max_tokens` inside the call's arguments; raising the limit only makes the wasted answer
//! longer. The note is part of the second request only: the conversation in state keeps the
//! model's second answer, not the note.
//!
//! When the second answer is cut as well, the node does not fail the run: it answers with a
//! text message saying which call was cut twice and that it was not made ([`gave_up`]), marked
//! `stop_reason: max_tokens`, so the graph's routing goes on as after any answer without tool
//! calls (a builder graph reminds the model that nothing was built; a chat ends the turn with
//! the truth). A small model cut twice inside one `add_nodes` call otherwise lost the whole turn.
//!
//! A node that closes cut calls ([`closed_call`]) first makes the cut call as far as it was
//! complete, when the tool's schema accepts that: a small model asked for a list of nodes
//! repeated one item until the limit, and its retry did the same.
//!
//! When complete calls came before the cut one, the providers keep those and drop the cut call
//! (see `finish` in `models::openai` and `models::anthropic`): the answer is used as it is, and
//! the model goes on from the calls that were made.

use crate::models::cut_json::call_closings;
use crate::models::{ModelError, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage};
use crate::tools::validate_args;
use serde_json::{json, Value};

/// The message id of the note (stable, so a replayed request is byte-identical).
pub(super) const NOTE_ID: &str = "output-truncated";

/// The cut tool's name and the limit, as words.
fn tool_and_limit(cause: &ModelError) -> (&str, String) {
    match cause {
        ModelError::OutputTruncated {
            tool, max_tokens, ..
        } => (
            tool.as_str(),
            max_tokens
                .map(|n| format!("{n} tokens"))
                .unwrap_or_else(|| "the output limit".into()),
        ),
        _ => ("", "the output limit".into()),
    }
}

/// The note sent after the conversation when the previous answer's tool call was cut off.
pub(super) fn note(cause: &ModelError) -> Value {
    let (tool, limit) = tool_and_limit(cause);
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

/// With [`LlmNode::close_cut_calls`](super::LlmNode::close_cut_calls): the cut call made as far
/// as it was complete ([`call_closings`]), when a closing follows the tool's schema. The answer
/// keeps the stop reason of a cut answer; its call id is derived from the message id.
pub(super) fn closed_call(
    cause: &ModelError,
    tools: &[ToolSpec],
    model: &str,
    msg_id: &str,
) -> Option<ModelResponse> {
    let ModelError::OutputTruncated {
        tool,
        partial,
        usage,
        ..
    } = cause
    else {
        return None;
    };
    let spec = tools.iter().find(|t| &t.name == tool)?;
    let args = call_closings(partial)
        .into_iter()
        .find(|args| validate_args(&spec.input_schema, args).is_ok())?;
    Some(ModelResponse {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: format!("{msg_id}-closed"),
            name: tool.clone(),
            args,
        }],
        stop_reason: "max_tokens".into(),
        usage: *usage,
        model: model.to_string(),
    })
}

/// `req` with the note appended to its messages.
pub(super) fn retry_request(req: &ModelRequest, cause: &ModelError) -> ModelRequest {
    let mut retry = req.clone();
    retry.messages.push(note(cause));
    retry
}

/// The answer used when the retry was cut off too: text naming the call that was not made,
/// with the stop reason of a cut answer.
pub(super) fn gave_up(cause: &ModelError, model: &str) -> ModelResponse {
    let (tool, limit) = tool_and_limit(cause);
    ModelResponse {
        text: format!(
            "(My answer was cut off twice at {limit} in the middle of a `{tool}` call, so that \
             call was not made.)"
        ),
        tool_calls: Vec::new(),
        stop_reason: "max_tokens".into(),
        usage: Usage::default(),
        model: model.to_string(),
    }
}

/// The custom event reporting that the retry was cut off too.
pub(super) fn gave_up_event(node: &str, cause: &ModelError) -> Value {
    json!({
        "recovery": "output_truncated_twice",
        "node": node,
        "title": format!("answer cut off again, going on without the call: {cause}"),
    })
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
            "answer cut off by the output limit ({stop_reason}): going on with its {calls} \
             tool call(s) made as far as they were complete"
        ),
    })
}
