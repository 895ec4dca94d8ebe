//! Token budget helpers: a cheap token estimate (characters / 2.5, rounded up) and compaction
//! of a long history into a summary written by the model.
//!
//! - Estimate: `ceil(chars / 2.5)`; for messages the characters of every content (strings as
//!   they are, other contents as JSON text) plus the JSON text of every tool call's arguments.
//! - Auto-compaction: compact when the history is estimated over a threshold (a common choice
//!   is [`DEFAULT_AUTO_COMPACT_THRESHOLD`] = 20 000 tokens). The summary becomes a `system`
//!   message ([`Compaction::summary_message`]); [`summary_system_part`] builds a cacheable
//!   prompt part from it for graphs that keep the summary in a channel.
//! - The instructions given to the summarizing model default to [`DEFAULT_COMPACT_PROMPT`];
//!   a graph passes its own (what its domain must keep) through [`compact_with`].

use super::{CallContext, ChatModel, ModelError, ModelRequest, SystemPart, ToolChoice};
use agentgraph_runtime::messages::{message, remove, REMOVE_ALL};
use serde_json::Value;

/// A common history size (estimated tokens) over which to compact automatically.
pub const DEFAULT_AUTO_COMPACT_THRESHOLD: usize = 20_000;
/// The id of the summary message, so that a later compaction replaces it.
pub const SUMMARY_MESSAGE_ID: &str = "conversation_summary";

/// Estimated tokens of a text: characters / 2.5, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    chars_to_tokens(text.chars().count())
}

fn chars_to_tokens(chars: usize) -> usize {
    // ceil(chars / 2.5) == ceil(2 * chars / 5)
    (chars.saturating_mul(2)).div_ceil(5)
}

fn json_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Null => 0,
        other => other.to_string().chars().count(),
    }
}

fn message_chars(m: &Value) -> usize {
    let content = m.get("content").map(json_chars).unwrap_or(0);
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| c.get("args").map(|a| a.to_string().chars().count()))
                .map(Option::unwrap_or_default)
                .sum::<usize>()
        })
        .unwrap_or(0);
    content + calls
}

/// Estimated tokens of messages: their contents plus their tool calls' arguments as JSON.
pub fn estimate_messages(messages: &[Value]) -> usize {
    chars_to_tokens(messages.iter().map(message_chars).sum())
}

/// Estimated input tokens of a request: system parts, messages, tool specs and the response
/// schema.
pub fn estimate_request(req: &ModelRequest) -> usize {
    let system: usize = req.system.iter().map(|p| p.text.chars().count()).sum();
    let messages: usize = req.messages.iter().map(message_chars).sum();
    let tools: usize = req
        .tools
        .iter()
        .map(|t| {
            t.name.chars().count()
                + t.description.chars().count()
                + t.input_schema.to_string().chars().count()
        })
        .sum();
    let schema = req.response_schema.as_ref().map(json_chars).unwrap_or(0);
    chars_to_tokens(system + messages + tools + schema)
}

/// Whether the history is estimated over `threshold_tokens` (see [`estimate_messages`]).
pub fn should_compact(messages: &[Value], threshold_tokens: usize) -> bool {
    estimate_messages(messages) > threshold_tokens
}

/// The result of [`compact`].
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The new summary (covers the previous summary too).
    pub summary: String,
    /// Removal markers for the summarized messages that have an id, ready for an
    /// `add_messages` channel.
    pub remove: Vec<Value>,
    /// A `system` message with id [`SUMMARY_MESSAGE_ID`] carrying the summary.
    pub summary_message: Value,
    /// The messages that were kept (not summarized), in order.
    pub kept: Vec<Value>,
}

impl Compaction {
    /// A write for an `add_messages` channel that leaves `[summary_message, kept…]`: clears
    /// the history and adds the summary before the kept messages. (Writing `remove` plus
    /// `summary_message` instead would append the summary after the kept messages.)
    pub fn messages_write(&self) -> Value {
        let mut out = Vec::with_capacity(self.kept.len() + 2);
        out.push(remove(REMOVE_ALL));
        out.push(self.summary_message.clone());
        out.extend(self.kept.iter().cloned());
        Value::Array(out)
    }
}

/// The summary as a cacheable system prompt part.
pub fn summary_system_part(summary: &str) -> SystemPart {
    SystemPart {
        text: format!(
            "<previous_conversation_summary>\n{summary}\n</previous_conversation_summary>"
        ),
        cacheable: true,
    }
}

fn kind(m: &Value) -> &str {
    m.get("type")
        .or_else(|| m.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Where to cut so that the last `keep_last` messages are kept and no kept tool result is
/// separated from the AI message that called it.
pub(crate) fn cut_index(messages: &[Value], keep_last: usize) -> usize {
    let mut cut = messages.len().saturating_sub(keep_last);
    loop {
        let mut new_cut = cut;
        for m in messages[cut..].iter().filter(|m| kind(m) == "tool") {
            let Some(call_id) = m.get("tool_call_id").and_then(Value::as_str) else {
                continue;
            };
            let called = |a: &Value| {
                a.get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|calls| {
                        calls
                            .iter()
                            .any(|c| c.get("id").and_then(Value::as_str) == Some(call_id))
                    })
            };
            if let Some(i) = messages[..cut].iter().rposition(called) {
                new_cut = new_cut.min(i);
            }
        }
        // A tool result right at the cut whose caller was not found: keep the message before.
        if new_cut == cut && cut > 0 && cut < messages.len() && kind(&messages[cut]) == "tool" {
            new_cut = cut - 1;
        }
        if new_cut == cut {
            return cut;
        }
        cut = new_cut;
    }
}

/// The instructions the summarizing model gets unless the caller gives its own.
pub const DEFAULT_COMPACT_PROMPT: &str = "You compress conversation histories between a user \
and an AI assistant that works with tools. Write a concise summary that preserves: the user's \
goals and requirements, decisions made, what was done or changed, tool results that still \
matter, open questions and the next steps. Drop greetings, repetition and details that no \
longer matter. If a previous summary is given, merge it into the new one. Answer with the \
summary only, in plain text.";

pub(crate) fn render(m: &Value) -> String {
    let content = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let mut line = match kind(m) {
        "tool" => {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("?");
            format!("Tool result ({id}): {content}")
        }
        "ai" | "assistant" => format!("AI: {content}"),
        "system" => format!("System: {content}"),
        _ => format!("User: {content}"),
    };
    for c in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
        let id = c.get("id").and_then(Value::as_str).unwrap_or("?");
        let args = c.get("args").map(Value::to_string).unwrap_or_default();
        line.push_str(&format!("\n  [calls {name} ({id}) with {args}]"));
    }
    line
}

/// Rendered messages cut to about `max_chars` in all: each line to a fair share of the budget
/// (at least 200 characters), then the oldest lines left out, with notes saying so.
fn fit_lines(lines: Vec<String>, max_chars: Option<usize>) -> Vec<String> {
    let Some(max) = max_chars else {
        return lines;
    };
    let total: usize = lines.iter().map(|l| l.chars().count()).sum();
    if total <= max {
        return lines;
    }
    let share = (max / lines.len().max(1)).max(200);
    let mut cut: Vec<String> = lines
        .into_iter()
        .map(|l| {
            let n = l.chars().count();
            if n <= share {
                l
            } else {
                let head: String = l.chars().take(share).collect();
                format!("{head}… [{} characters cut]", n - share)
            }
        })
        .collect();
    let mut size: usize = cut.iter().map(|l| l.chars().count()).sum();
    let mut dropped = 0;
    while size > max && cut.len() > 1 {
        size -= cut.remove(0).chars().count();
        dropped += 1;
    }
    if dropped > 0 {
        cut.insert(0, format!("[{dropped} earlier messages left out]"));
    }
    cut
}

/// Asks `model` to summarize all but the last `keep_last` messages (merging
/// `previous_summary`), moving the cut earlier so that a kept tool result keeps the AI message
/// that called it. With nothing to summarize the model is not called and the summary is the
/// previous one (or empty). Fails when the model fails or answers with an empty summary.
/// The model is instructed with [`DEFAULT_COMPACT_PROMPT`].
pub async fn compact(
    model: &dyn ChatModel,
    messages: &[Value],
    previous_summary: Option<&str>,
    keep_last: usize,
    ctx: &CallContext,
) -> Result<Compaction, ModelError> {
    compact_with(
        model,
        DEFAULT_COMPACT_PROMPT,
        messages,
        previous_summary,
        keep_last,
        ctx,
    )
    .await
}

/// [`compact`] with the summarizing model's instructions given by the caller.
pub async fn compact_with(
    model: &dyn ChatModel,
    instructions: &str,
    messages: &[Value],
    previous_summary: Option<&str>,
    keep_last: usize,
    ctx: &CallContext,
) -> Result<Compaction, ModelError> {
    compact_within(
        model,
        instructions,
        messages,
        previous_summary,
        keep_last,
        None,
        ctx,
    )
    .await
}

/// [`compact_with`], with the conversation shown to the summarizing model cut to about
/// `max_tokens` estimated tokens when given (each message shortened to a fair share, then the
/// oldest left out), so that summarizing a conversation too large for the model's context
/// still fits in it.
pub async fn compact_within(
    model: &dyn ChatModel,
    instructions: &str,
    messages: &[Value],
    previous_summary: Option<&str>,
    keep_last: usize,
    max_tokens: Option<usize>,
    ctx: &CallContext,
) -> Result<Compaction, ModelError> {
    let cut = cut_index(messages, keep_last);
    let (old, kept) = messages.split_at(cut);
    let summary = if old.is_empty() {
        previous_summary.unwrap_or_default().to_string()
    } else {
        let mut text = String::new();
        if let Some(prev) = previous_summary.filter(|p| !p.trim().is_empty()) {
            text.push_str(&format!(
                "<previous_summary>\n{prev}\n</previous_summary>\n\n"
            ));
        }
        text.push_str("<conversation>\n");
        let rendered: Vec<String> = old.iter().map(render).collect();
        // Tokens → characters at the estimate's 2.5 characters per token.
        let max_chars = max_tokens.map(|t| t.saturating_mul(5) / 2);
        for line in fit_lines(rendered, max_chars) {
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("</conversation>\n\nSummarize the conversation above.");
        let req = ModelRequest {
            system: vec![SystemPart {
                text: instructions.into(),
                cacheable: true,
            }],
            messages: vec![message("human", "compact_request", text)],
            tool_choice: ToolChoice::None,
            ..Default::default()
        };
        let resp = model.complete(&req, ctx).await?;
        let summary = resp.text.trim().to_string();
        if summary.is_empty() {
            return Err(ModelError::InvalidResponse {
                provider: model.name(),
                message: "the compaction summary is empty".into(),
            });
        }
        summary
    };
    let remove = old
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .map(remove)
        .collect();
    let summary_message = message(
        "system",
        SUMMARY_MESSAGE_ID,
        format!("Summary of the earlier conversation:\n{summary}"),
    );
    Ok(Compaction {
        summary,
        remove,
        summary_message,
        kept: kept.to_vec(),
    })
}
