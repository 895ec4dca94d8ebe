//! The two model calls of observational memory: the observer, which turns a chunk of
//! conversation into dense observations, and the reflector, which condenses observations once
//! they grow. Both are single calls without tools; their answers are plain text.

use crate::models::budget::{estimate_messages, estimate_tokens, render};
use crate::models::Usage;
use crate::models::{CallContext, ChatModel, ModelError, ModelRequest, SystemPart, ToolChoice};
use agentgraph_runtime::messages::message;
use serde_json::Value;

/// What the observer is told unless the graph gives its own instructions.
pub const DEFAULT_OBSERVER_PROMPT: &str = "You are the memory of an AI assistant that works \
with tools. You read a part of its conversation and write observations: short, dense, \
factual lines that let it go on without the messages. One fact per line, starting with `- `. \
Keep exactly: ids, names, numbers, statuses, errors and where they came from, what the user \
asked, decided, approved or declined, what was done and what it returned, and what is still \
open. Drop greetings, repetition, raw data already described, and anything the earlier \
observations already say. Answer with the new observation lines only.";

/// What the reflector is told unless the graph gives its own instructions.
pub const DEFAULT_REFLECTOR_PROMPT: &str = "You maintain the memory of an AI assistant: a list \
of observation lines about its conversation, oldest first. Rewrite the list shorter: merge \
lines about the same thing, drop what later lines made obsolete (a status that changed, a \
question that was answered), keep every id, name, decision, error and open item that still \
matters. One fact per line, starting with `- `. Answer with the rewritten list only.";

/// How much of the earlier observations the observer sees as context (estimated tokens, the
/// newest kept).
const PREVIOUS_CONTEXT_TOKENS: usize = 1_000;

/// One observer call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The new observation lines.
    pub text: String,
    /// Estimated tokens of the messages (whole: what leaves the prompt).
    pub tokens_before: usize,
    /// Estimated tokens of the messages as the observer read them (each cut to its limit).
    pub tokens_read: usize,
    /// Estimated tokens of the observations written.
    pub tokens_after: usize,
    /// The call's usage.
    pub usage: Usage,
}

/// The end of `text` within about `tokens` estimated tokens, starting at a line.
fn tail(text: &str, tokens: usize) -> &str {
    let max_chars = tokens.saturating_mul(5) / 2;
    let chars = text.chars().count();
    if chars <= max_chars {
        return text;
    }
    let start = text
        .char_indices()
        .nth(chars - max_chars)
        .map_or(0, |(i, _)| i);
    match text[start..].find('\n') {
        Some(nl) => &text[start + nl + 1..],
        None => &text[start..],
    }
}

fn empty_answer(model: &dyn ChatModel, what: &str) -> ModelError {
    ModelError::InvalidResponse {
        provider: model.name(),
        message: format!("the {what} answered nothing"),
    }
}

/// A rendered message cut to about `max_tokens` estimated tokens.
fn capped(line: String, max_tokens: usize) -> String {
    let max_chars = max_tokens.max(1).saturating_mul(5) / 2;
    let n = line.chars().count();
    if n <= max_chars {
        return line;
    }
    let head: String = line.chars().take(max_chars).collect();
    format!("{head}… [{} characters cut]", n - max_chars)
}

/// Asks `model` for observations of `messages`, showing it the end of `previous`
/// observations so it does not repeat them. Each message is shown cut to about
/// `max_message_tokens` estimated tokens (a workflow or an execution can be larger than the
/// observer's context); `tokens_before` counts the messages whole (what leaves the prompt).
pub async fn observe(
    model: &dyn ChatModel,
    instructions: &str,
    previous: &str,
    messages: &[&Value],
    max_message_tokens: usize,
    ctx: &CallContext,
) -> Result<Observed, ModelError> {
    let mut text = String::new();
    let previous = tail(previous.trim(), PREVIOUS_CONTEXT_TOKENS);
    if !previous.is_empty() {
        text.push_str(&format!(
            "<earlier_observations>\n{previous}\n</earlier_observations>\n\n"
        ));
    }
    text.push_str("<messages>\n");
    let mut read = 0;
    for m in messages {
        let line = capped(render(m), max_message_tokens);
        read += estimate_tokens(&line);
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("</messages>\n\nWrite the observations of these messages.");
    let req = ModelRequest {
        system: vec![SystemPart {
            text: instructions.into(),
            cacheable: true,
        }],
        messages: vec![message("human", "observe_request", text)],
        tool_choice: ToolChoice::None,
        ..Default::default()
    };
    let resp = model.complete(&req, ctx).await?;
    let observed = resp.text.trim().to_string();
    if observed.is_empty() {
        return Err(empty_answer(model, "observer"));
    }
    let owned: Vec<Value> = messages.iter().map(|m| (*m).clone()).collect();
    Ok(Observed {
        tokens_before: estimate_messages(&owned),
        tokens_read: read,
        tokens_after: estimate_tokens(&observed),
        text: observed,
        usage: resp.usage,
    })
}

/// Asks `model` to condense `observations`. An answer that is not shorter keeps them as they
/// were (`None`).
pub async fn reflect(
    model: &dyn ChatModel,
    instructions: &str,
    observations: &str,
    ctx: &CallContext,
) -> Result<(Option<String>, Usage), ModelError> {
    let req = ModelRequest {
        system: vec![SystemPart {
            text: instructions.into(),
            cacheable: true,
        }],
        messages: vec![message(
            "human",
            "reflect_request",
            format!(
                "<observations>\n{observations}\n</observations>\n\nRewrite these observations \
                 shorter."
            ),
        )],
        tool_choice: ToolChoice::None,
        ..Default::default()
    };
    let resp = model.complete(&req, ctx).await?;
    let condensed = resp.text.trim().to_string();
    if condensed.is_empty() {
        return Err(empty_answer(model, "reflector"));
    }
    let shorter = estimate_tokens(&condensed) < estimate_tokens(observations);
    Ok((shorter.then_some(condensed), resp.usage))
}

#[cfg(test)]
mod tests {
    use super::{capped, tail};

    #[test]
    fn a_long_message_is_cut_and_says_so() {
        assert_eq!(capped("abcdef".into(), 2), "abcde… [1 characters cut]");
        assert_eq!(capped("abc".into(), 2), "abc");
    }

    #[test]
    fn the_tail_starts_at_a_line() {
        let text = "- one\n- two\n- three";
        assert_eq!(tail(text, 100), text);
        // 4 tokens = 10 characters: "\n- three" fits, from the line start.
        assert_eq!(tail(text, 4), "- three");
    }
}
