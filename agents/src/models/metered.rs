//! A [`ChatModel`] wrapper that adds up the usage of the calls made through it, for callers
//! that hand a model to code that does not report usage itself (tools making nested calls).

use super::{CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, Usage};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

/// Forwards every call to the inner model and tallies the successful calls' usage.
///
/// ```
/// use agentgraph_agents::models::{ChatModel, MeteredModel};
/// use agentgraph_agents::models::scripted::ScriptedModel;
/// use std::sync::Arc;
/// let inner: Arc<dyn ChatModel> = Arc::new(ScriptedModel::from_json(
///     serde_json::json!({"responses": []}),
/// ).unwrap());
/// let metered = MeteredModel::new(inner);
/// let (usage, calls) = metered.tally();
/// assert_eq!((usage.input_tokens, calls), (0, 0));
/// ```
pub struct MeteredModel {
    inner: Arc<dyn ChatModel>,
    tally: Mutex<(Usage, u64)>,
}

impl MeteredModel {
    /// Meters `inner`.
    pub fn new(inner: Arc<dyn ChatModel>) -> Self {
        Self {
            inner,
            tally: Mutex::new((Usage::default(), 0)),
        }
    }

    /// The usage of the calls so far, and how many calls answered.
    pub fn tally(&self) -> (Usage, u64) {
        *self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl ChatModel for MeteredModel {
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
        let response = self.inner.complete(req, ctx).await?;
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        tally.0.add(&response.usage);
        tally.1 += 1;
        Ok(response)
    }
}
