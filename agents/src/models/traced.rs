//! Model calls as OpenTelemetry GenAI spans.
//!
//! Every model call of the agent layer runs inside a `chat {model}` span carrying the GenAI
//! semantic-convention attributes: `gen_ai.operation.name`, `gen_ai.provider.name` (from the
//! `provider/model` name), `gen_ai.request.model`, `gen_ai.response.model`,
//! `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `error.type`, and
//! `agentgraph.usage.cost_usd` when the graph prices its model. The `llm` node opens the span
//! itself (it also answers with structured output); calls made elsewhere — by tools, by
//! compaction — go through [`TracedModel`]. Exported over OTLP and timed for `/metrics` by the
//! application's subscriber (see the server crate's `telemetry`).

use super::{CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, Pricing, Usage};
use async_trait::async_trait;
use std::sync::Arc;
use tracing::field::Empty;
use tracing::Instrument;

/// The span of one call to the model named `model` (`provider/model`).
pub fn chat_span(model: &str) -> tracing::Span {
    let (provider, request_model) = model.split_once('/').unwrap_or(("", model));
    tracing::info_span!(
        "chat",
        otel.name = %format!("chat {model}"),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %request_model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        agentgraph.usage.cost_usd = Empty,
        error.type = Empty,
    )
}

/// Records what a call used (and what it cost, when priced) on its span.
pub fn record_usage(
    span: &tracing::Span,
    response_model: Option<&str>,
    usage: &Usage,
    pricing: Option<&Pricing>,
) {
    if let Some(m) = response_model.filter(|m| !m.is_empty()) {
        span.record("gen_ai.response.model", m);
    }
    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    if let Some(p) = pricing {
        span.record("agentgraph.usage.cost_usd", p.cost(usage));
    }
}

/// Records why a call failed on its span (`error.type`).
pub fn record_error(span: &tracing::Span, error: &ModelError) {
    span.record("error.type", tracing::field::debug(error));
}

/// Forwards every call to the inner model inside a [`chat_span`].
pub struct TracedModel {
    inner: Arc<dyn ChatModel>,
    pricing: Option<Pricing>,
}

impl TracedModel {
    /// Traces the calls to `inner`, pricing them with `pricing` when given.
    pub fn new(inner: Arc<dyn ChatModel>, pricing: Option<Pricing>) -> Self {
        Self { inner, pricing }
    }
}

#[async_trait]
impl ChatModel for TracedModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn hints_named_tool_choice(&self) -> bool {
        self.inner.hints_named_tool_choice()
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        let span = chat_span(&self.inner.name());
        let result = self.inner.complete(req, ctx).instrument(span.clone()).await;
        match &result {
            Ok(r) => record_usage(&span, Some(&r.model), &r.usage, self.pricing.as_ref()),
            Err(e) => record_error(&span, e),
        }
        result
    }
}
