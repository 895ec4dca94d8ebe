//! The `llm` node's answer to a context overflow ([`ModelError::ContextOverflow`]): the
//! conversation is compacted into a summary plus its latest messages, and the call is made once
//! more.

use super::LlmNode;
use crate::models::budget::{
    compact_within, estimate_messages, estimate_tokens, Compaction, DEFAULT_COMPACT_PROMPT,
};
use crate::models::{
    CallContext, ChatModel, MeteredModel, ModelError, ModelRequest, TracedModel, Usage,
};
use agentgraph_runtime::{NodeError, TaskContext};
use serde_json::{json, Value};
use std::sync::Arc;

/// How an `llm` node shrinks a conversation that no longer fits the model's context.
#[derive(Debug, Clone, PartialEq)]
pub struct OverflowCompaction {
    /// How many of the latest messages stay verbatim (default 4; a kept tool result keeps the
    /// AI message that called it).
    pub keep_last: usize,
    /// What the summarizing model is told to keep (default
    /// [`crate::models::budget::DEFAULT_COMPACT_PROMPT`]).
    pub instructions: Option<String>,
    /// A `string?` channel holding the summary: the previous one is merged, the new one
    /// written.
    pub summary_channel: Option<String>,
}

impl Default for OverflowCompaction {
    fn default() -> Self {
        OverflowCompaction {
            keep_last: 4,
            instructions: None,
            summary_channel: None,
        }
    }
}

/// A compaction made because of an overflow, with what it cost.
pub(super) struct Compacted {
    /// The compaction.
    pub compaction: Compaction,
    /// Usage of the summarizing call(s).
    pub usage: Usage,
    /// How many summarizing calls answered.
    pub calls: u64,
}

impl Compacted {
    /// The custom event reporting it.
    pub fn event(&self, node: &str, cause: &ModelError) -> Value {
        json!({
            "compaction": "context_overflow",
            "node": node,
            "summarized": self.compaction.remove.len(),
            "kept": self.compaction.kept.len(),
            "title": format!(
                "conversation compacted ({} messages summarized) after: {cause}",
                self.compaction.remove.len()
            ),
        })
    }
}

fn overflow_error(message: String) -> NodeError {
    NodeError::fatal(message).with_code("MODEL_CONTEXT_OVERFLOW")
}

/// Compacts the node's conversation after `cause`, so that the summarizing request fits: the
/// conversation shown to the summarizing model is cut to half the context the server reported
/// (else half the conversation's estimate).
pub(super) async fn compact(
    node: &LlmNode,
    policy: &OverflowCompaction,
    ctx: &TaskContext,
    cause: &ModelError,
) -> Result<Compacted, NodeError> {
    let state = ctx.state();
    let messages = state.list(&node.messages_channel);
    let previous = policy
        .summary_channel
        .as_deref()
        .and_then(|c| state.get(c))
        .and_then(Value::as_str);
    let context = match cause {
        ModelError::ContextOverflow { context_tokens, .. } => *context_tokens,
        _ => None,
    };
    let budget = context
        .and_then(|c| usize::try_from(c / 2).ok())
        .unwrap_or_else(|| estimate_messages(messages) / 2)
        .max(1_000);
    let traced: Arc<dyn ChatModel> =
        Arc::new(TracedModel::new(Arc::clone(&node.model), node.pricing));
    let metered = MeteredModel::new(traced);
    let instructions = policy
        .instructions
        .as_deref()
        .unwrap_or(DEFAULT_COMPACT_PROMPT);
    let compaction = compact_within(
        &metered,
        instructions,
        messages,
        previous,
        policy.keep_last,
        Some(budget),
        &CallContext::for_task(ctx),
    )
    .await
    .map_err(|e| {
        overflow_error(format!(
            "model {}: {cause}; compacting the conversation to retry failed: {e}",
            node.model.name()
        ))
    })?;
    if compaction.remove.is_empty() {
        return Err(overflow_error(format!(
            "model {}: {cause}; the conversation has nothing left to compact (its last {} \
             messages are kept), so the system prompt, the tools and those messages alone are \
             too large: shorten them or use a model with a larger context",
            node.model.name(),
            compaction.kept.len()
        )));
    }
    let (usage, calls) = metered.tally();
    Ok(Compacted {
        compaction,
        usage,
        calls,
    })
}

/// The error when the request still overflows after compacting, with the estimated size of
/// each part of it.
pub(super) fn still_too_large(node: &LlmNode, cause: &ModelError, req: &ModelRequest) -> NodeError {
    let system: usize = req.system.iter().map(|p| estimate_tokens(&p.text)).sum();
    let tools: usize = req
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.description) + estimate_tokens(&t.input_schema.to_string()))
        .sum();
    let messages = estimate_messages(&req.messages);
    overflow_error(format!(
        "model {}: {cause} — even after compacting the conversation into a summary. Estimated \
         sizes: system prompt ~{system} tokens, tools ~{tools}, remaining messages ~{messages} \
         ({} messages): shorten what is largest or use a model with a larger context",
        node.model.name(),
        req.messages.len()
    ))
}
