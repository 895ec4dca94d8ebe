//! Observational memory: a long conversation's oldest messages become dense observations.
//!
//! Once the conversation in the messages channel is estimated over a threshold, the
//! [`ObserveNode`] has an observer model read its oldest messages (all but the last
//! `keep_last`, in chunks of about `chunk_tokens`, each message shown cut to
//! `max_message_tokens`) and write observations — short factual
//! lines — which it appends to the observations channel (a `string?`), and it removes those
//! messages from the conversation (the latest human message stays verbatim: the task at
//! hand). When the observations grow over `reflect_at` tokens, a reflector call condenses
//! them. The `llm` node shows the observations as a system part (`observations: <channel>`),
//! so a model call carries the observations plus the recent messages, never the observed ones.
//!
//! Everything is one node step: its writes (observations, the shortened conversation, the
//! working memory) are applied together and checkpointed together, so a crash during an
//! observer call loses nothing — the step runs again from the previous checkpoint.
//!
//! The node also loads the principal's working memory ([`working`]) into a channel at each
//! step, when given one. Observations are thread-scoped; working memory is user-scoped.
//!
//! Each observation and reflection is emitted as a `custom` event:
//! `{"observational_memory": "observed", "messages", "tokens_before", "tokens_after",
//! "chunks": [{"tokens_before", "tokens_read", "tokens_after"}]}` and `{"observational_memory": "reflected",
//! "tokens_before", "tokens_after"}`.

mod calls;
mod chunks;
pub mod working;

pub use calls::{observe, reflect, Observed, DEFAULT_OBSERVER_PROMPT, DEFAULT_REFLECTOR_PROMPT};
pub use chunks::ObservationPlan;
pub use working::{UpdateWorkingMemoryTool, UPDATE_WORKING_MEMORY, WORKING_MEMORY};

use crate::models::budget::estimate_tokens;
use crate::models::{CallContext, ChatModel, ModelError, Pricing, Usage};
use crate::nodes::usage_record;
use agentgraph_runtime::{Node, NodeError, TaskContext, Update};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// Observe once the conversation is estimated over this many tokens (by default).
pub const DEFAULT_THRESHOLD: usize = 30_000;
/// Messages kept verbatim after an observation (by default).
pub const DEFAULT_KEEP_LAST: usize = 8;
/// Estimated tokens the observer reads per call (by default).
pub const DEFAULT_CHUNK_TOKENS: usize = 6_000;
/// Estimated tokens of one message the observer reads at most (by default): a larger tool
/// result (a whole workflow, a node's every parameter) is shown cut.
pub const DEFAULT_MAX_MESSAGE_TOKENS: usize = 2_000;
/// Reflect once the observations are estimated over this many tokens (by default).
pub const DEFAULT_REFLECT_AT: usize = 8_000;

/// The observational-memory step of an agent graph (see the module docs). Put it before the
/// model node, on every path into it (`START -> observe -> agent`, `tools -> observe`), so that
/// long autonomous loops are observed too.
#[derive(Clone)]
pub struct ObserveNode {
    /// The model of the observer and the reflector.
    pub model: Arc<dyn ChatModel>,
    /// The conversation (an `add_messages` channel).
    pub messages_channel: String,
    /// Where observations are kept (a `string?` channel).
    pub observations_channel: String,
    /// Observe once the conversation is estimated over this many tokens.
    pub threshold_tokens: usize,
    /// How many of the latest messages stay verbatim.
    pub keep_last: usize,
    /// Estimated tokens the observer reads per call.
    pub chunk_tokens: usize,
    /// Estimated tokens of one message the observer reads at most (the rest is cut).
    pub max_message_tokens: usize,
    /// Reflect once the observations are estimated over this many tokens.
    pub reflect_at: usize,
    /// The observer's instructions (default [`DEFAULT_OBSERVER_PROMPT`]).
    pub observer_instructions: Option<String>,
    /// The reflector's instructions (default [`DEFAULT_REFLECTOR_PROMPT`]).
    pub reflector_instructions: Option<String>,
    /// Where the observer's usage is recorded (a channel with the `usage_sum` reducer).
    pub usage_channel: Option<String>,
    /// Prices for the cost in the usage record.
    pub pricing: Option<Pricing>,
    /// The channel the principal's working memory is loaded into at each step.
    pub working_memory_channel: Option<String>,
}

impl ObserveNode {
    /// A node over `messages` and `observations` with the default thresholds.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        ObserveNode {
            model,
            messages_channel: "messages".into(),
            observations_channel: "observations".into(),
            threshold_tokens: DEFAULT_THRESHOLD,
            keep_last: DEFAULT_KEEP_LAST,
            chunk_tokens: DEFAULT_CHUNK_TOKENS,
            max_message_tokens: DEFAULT_MAX_MESSAGE_TOKENS,
            reflect_at: DEFAULT_REFLECT_AT,
            observer_instructions: None,
            reflector_instructions: None,
            usage_channel: None,
            pricing: None,
            working_memory_channel: None,
        }
    }

    fn model_error(&self, e: ModelError, what: &str) -> NodeError {
        let msg = format!("{what} with model {}: {e}", self.model.name());
        match e {
            ModelError::Cancelled => NodeError::Cancelled,
            e if e.is_transient() => NodeError::transient(msg).with_code("OBSERVATION_FAILED"),
            _ => NodeError::fatal(msg).with_code("OBSERVATION_FAILED"),
        }
    }

    /// The working memory write, when the store holds another text than the channel.
    async fn working_memory(
        &self,
        ctx: &TaskContext,
    ) -> Result<Option<(String, Value)>, NodeError> {
        let (Some(channel), Some(store)) = (&self.working_memory_channel, ctx.store()) else {
            return Ok(None);
        };
        let stored = working::load(store.as_ref(), &working::principal(ctx))
            .await
            .map_err(|e| {
                NodeError::transient(format!("loading the working memory: {e}")).with_code("MEMORY")
            })?;
        let stored = stored.map_or(Value::Null, Value::String);
        let current = ctx.state().get(channel).cloned().unwrap_or(Value::Null);
        Ok((stored != current).then(|| (channel.clone(), stored)))
    }
}

#[async_trait]
impl Node for ObserveNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let mut update = Update::new();
        if let Some((channel, value)) = self.working_memory(&ctx).await? {
            update = update.set(channel, value);
        }
        let messages = ctx.state().list(&self.messages_channel);
        let Some(plan) = ObservationPlan::new(
            messages,
            self.threshold_tokens,
            self.keep_last,
            self.chunk_tokens,
        ) else {
            return Ok(update);
        };
        let call_ctx = CallContext::for_task(&ctx);
        let observer = self
            .observer_instructions
            .as_deref()
            .unwrap_or(DEFAULT_OBSERVER_PROMPT);
        let mut observations = ctx
            .state()
            .get(&self.observations_channel)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut usage = Usage::default();
        let mut calls = 0;
        let mut stats = Vec::new();
        for range in &plan.chunks {
            let chunk = plan.chunk(messages, range);
            if chunk.is_empty() {
                continue;
            }
            let observed = observe(
                self.model.as_ref(),
                observer,
                &observations,
                &chunk,
                self.max_message_tokens,
                &call_ctx,
            )
            .await
            .map_err(|e| self.model_error(e, "observation"))?;
            usage.add(&observed.usage);
            calls += 1;
            stats.push(json!({"tokens_before": observed.tokens_before,
                              "tokens_read": observed.tokens_read,
                              "tokens_after": observed.tokens_after}));
            if !observations.is_empty() {
                observations.push('\n');
            }
            observations.push_str(&observed.text);
        }
        let before: u64 = stats
            .iter()
            .filter_map(|s| s["tokens_before"].as_u64())
            .sum();
        let after: u64 = stats
            .iter()
            .filter_map(|s| s["tokens_after"].as_u64())
            .sum();
        ctx.emit_custom(json!({
            "observational_memory": "observed",
            "messages": plan.cut - usize::from(plan.pinned.is_some()),
            "tokens_before": before,
            "tokens_after": after,
            "chunks": stats,
        }))
        .await;
        let size = estimate_tokens(&observations);
        if size > self.reflect_at {
            let reflector = self
                .reflector_instructions
                .as_deref()
                .unwrap_or(DEFAULT_REFLECTOR_PROMPT);
            let (condensed, u) = reflect(self.model.as_ref(), reflector, &observations, &call_ctx)
                .await
                .map_err(|e| self.model_error(e, "reflection"))?;
            usage.add(&u);
            calls += 1;
            if let Some(condensed) = condensed {
                ctx.emit_custom(json!({
                    "observational_memory": "reflected",
                    "tokens_before": size,
                    "tokens_after": estimate_tokens(&condensed),
                }))
                .await;
                observations = condensed;
            }
        }
        update = update
            .set(self.messages_channel.clone(), plan.messages_write(messages))
            .set(
                self.observations_channel.clone(),
                Value::String(observations),
            );
        if let Some(channel) = &self.usage_channel {
            let record = usage_record(&ctx, &usage, calls, self.pricing.as_ref());
            update = update.set(channel.clone(), record);
        }
        Ok(update)
    }
}
