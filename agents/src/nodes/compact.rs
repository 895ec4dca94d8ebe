//! The `compact` node: replaces a long conversation by a model-written summary plus the
//! latest messages (see [`crate::models::budget::compact_with`]).

use crate::models::budget::{compact_with, should_compact, DEFAULT_COMPACT_PROMPT};
use crate::models::{CallContext, ChatModel};
use agentgraph_runtime::Update;
use agentgraph_runtime::{Node, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Compacts `messages_channel` (an `add_messages` channel) into a summary.
///
/// With a threshold, the node does nothing until the history is estimated over it (auto
/// compaction); without one it always compacts (the `/compact` command). The summary also goes
/// to `summary_channel` (a `string?` channel), and the previous summary found there is merged
/// into the new one.
#[derive(Clone)]
pub struct CompactNode {
    /// The model writing the summary.
    pub model: Arc<dyn ChatModel>,
    /// The conversation.
    pub messages_channel: String,
    /// Where the summary is kept.
    pub summary_channel: Option<String>,
    /// Compact only over this many estimated tokens.
    pub threshold_tokens: Option<usize>,
    /// How many of the latest messages stay verbatim.
    pub keep_last: usize,
    /// What the summarizing model is told to keep (default
    /// [`crate::models::budget::DEFAULT_COMPACT_PROMPT`]).
    pub instructions: Option<String>,
}

impl CompactNode {
    /// Always compacts `messages`, keeping the last 4 messages.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        CompactNode {
            model,
            messages_channel: "messages".into(),
            summary_channel: None,
            threshold_tokens: None,
            keep_last: 4,
            instructions: None,
        }
    }
}

#[async_trait]
impl Node for CompactNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let messages = ctx.state().list(&self.messages_channel);
        if let Some(t) = self.threshold_tokens {
            if !should_compact(messages, t) {
                return Ok(Update::new());
            }
        }
        let previous = self
            .summary_channel
            .as_deref()
            .and_then(|c| ctx.state().get(c))
            .and_then(Value::as_str);
        let call_ctx = CallContext::for_task(&ctx);
        let instructions = self
            .instructions
            .as_deref()
            .unwrap_or(DEFAULT_COMPACT_PROMPT);
        let c = compact_with(
            self.model.as_ref(),
            instructions,
            messages,
            previous,
            self.keep_last,
            &call_ctx,
        )
        .await
        .map_err(|e| {
            let msg = format!("compaction with model {}: {e}", self.model.name());
            if e.is_transient() {
                NodeError::transient(msg)
            } else {
                NodeError::fatal(msg)
            }
            .with_code("COMPACTION_FAILED")
        })?;
        let mut update = Update::new().set(self.messages_channel.clone(), c.messages_write());
        if let Some(ch) = &self.summary_channel {
            update = update.set(ch.clone(), Value::String(c.summary));
        }
        Ok(update)
    }
}
