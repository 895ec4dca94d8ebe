//! Building an [`LlmNode`] (its options) and the request it sends for a state.

use super::{LlmNode, OverflowCompaction};
use crate::memory::ChatMemory;
use crate::models::{ChatModel, ModelRequest, Pricing, SystemPart, ToolChoice, ToolSpec};
use crate::tools::ListedTools;
use agentgraph_runtime::{NodeError, StateView};
use serde_json::{json, Value};
use std::sync::Arc;

impl LlmNode {
    /// A node calling `model` on the `messages` channel, with no system prompt and no tools.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        LlmNode {
            model,
            system: Vec::new(),
            context: None,
            messages_channel: "messages".into(),
            tools: Vec::new(),
            listed: ListedTools::default(),
            tool_choice: ToolChoice::Auto,
            tool_choice_by_state: None,
            parallel_tool_calls: None,
            context_as_message: false,
            max_tokens: None,
            temperature: None,
            usage_channel: None,
            pricing: None,
            structured: None,
            memory: None,
            store_memory: None,
            max_iterations: None,
            on_overflow: Some(OverflowCompaction::default()),
            max_calls: None,
            deferred: None,
            state_parts: Vec::new(),
            close_cut_calls: false,
        }
    }

    /// Shows `channel`'s value (a string as is, other JSON as text) to the model as a system
    /// part `<tag>…</tag>` after the static parts, when it is set and not empty: observations
    /// and working memory ([`crate::memory::observational`]).
    pub fn state_part(mut self, channel: impl Into<String>, tag: impl Into<String>) -> Self {
        self.state_parts.push((channel.into(), tag.into()));
        self
    }

    /// Sets how a context overflow is handled (`None`: fail at once).
    pub fn on_overflow(mut self, policy: Option<OverflowCompaction>) -> Self {
        self.on_overflow = policy;
        self
    }

    /// Adds the cost of each call (at these prices) to the usage record.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// Asks for a JSON answer following `schema`, written to `channel`.
    pub fn structured(mut self, schema: Value, channel: impl Into<String>) -> Self {
        self.structured = Some((schema, channel.into()));
        self
    }

    /// Loads and saves the conversation in `memory` (see the type docs).
    pub fn memory(mut self, memory: Arc<dyn ChatMemory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Loads and saves the conversation in the graph's store, under the namespace `spec`
    /// computes for each task (the conversation is shared by every thread with that namespace).
    pub fn store_memory(mut self, spec: crate::memory::StoreMemorySpec) -> Self {
        self.store_memory = Some(spec);
        self
    }

    /// Fails with `MAX_ITERATIONS` after `n` answers to one human message.
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// Fails with `MAX_CALLS` once the conversation holds `n` AI answers.
    pub fn max_calls(mut self, n: usize) -> Self {
        self.max_calls = Some(n);
        self
    }

    /// Sends the rendered context as a final human message after the conversation.
    pub fn context_as_message(mut self) -> Self {
        self.context_as_message = true;
        self
    }

    /// Picks the tool choice from the state and the task's send payload on each call.
    pub fn tool_choice_fn<F>(mut self, f: F) -> Self
    where
        F: Fn(&StateView, Option<&Value>) -> Result<ToolChoice, NodeError> + Send + Sync + 'static,
    {
        self.tool_choice_by_state = Some(Arc::new(f));
        self
    }

    /// Adds a static, cacheable system prompt part.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system.push(SystemPart {
            text: text.into(),
            cacheable: true,
        });
        self
    }

    /// Sets the templated system part rendered on each call from the state and the task's
    /// send payload.
    pub fn context<F>(mut self, f: F) -> Self
    where
        F: Fn(&StateView, Option<&Value>) -> Result<String, NodeError> + Send + Sync + 'static,
    {
        self.context = Some(Arc::new(f));
        self
    }

    /// Reads and writes the conversation in `channel` instead of `messages`.
    pub fn messages_channel(mut self, channel: impl Into<String>) -> Self {
        self.messages_channel = channel.into();
        self
    }

    /// Binds tools (e.g. `tools.iter().map(|t| t.spec())`).
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolSpec>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Offers the tools of sources listed at the first call as well (an MCP server's).
    pub fn listed_tools(mut self, listed: ListedTools) -> Self {
        self.listed = listed;
        self
    }

    /// Offers the core tools of `deferred` on every call and the others only once their
    /// names are in its loaded-tools channel.
    pub fn deferred(mut self, deferred: crate::orchestration::DeferredTools) -> Self {
        self.deferred = Some(deferred);
        self
    }

    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Allows or forbids several tool calls in one answer (forbidding them keeps a small
    /// model from sending dozens of calls per answer).
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Makes a tool call the output limit cut as far as it was complete: closed after its last
    /// complete value, or without the unfinished last item of a list, when the tool's schema
    /// accepts that (never with a cut string). Off by default: the model is then called again
    /// with a note. For tools whose calls are lists of items (a small model repeating one item
    /// until the limit), the items before the cut are the call that was meant.
    pub fn close_cut_calls(mut self, close: bool) -> Self {
        self.close_cut_calls = close;
        self
    }

    /// Sets the output limit.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Records usage in `channel` (declare it with the [`UsageSum`] reducer).
    pub fn usage_channel(mut self, channel: impl Into<String>) -> Self {
        self.usage_channel = Some(channel.into());
        self
    }

    /// The request this node sends for a state and a send payload (`None`: no send).
    pub fn request(
        &self,
        state: &StateView,
        payload: Option<&Value>,
    ) -> Result<ModelRequest, NodeError> {
        let mut system = self.system.clone();
        for (channel, tag) in &self.state_parts {
            let text = match state.get(channel) {
                Some(Value::String(s)) => s.trim().to_string(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            if !text.is_empty() {
                system.push(SystemPart {
                    text: format!("<{tag}>\n{text}\n</{tag}>"),
                    cacheable: true,
                });
            }
        }
        let mut messages = state.list(&self.messages_channel).to_vec();
        if let Some(render) = &self.context {
            let text = render(state, payload)?;
            if !text.is_empty() && self.context_as_message {
                messages.push(json!({"type": "human", "id": "context", "content": text}));
            } else if !text.is_empty() {
                system.push(SystemPart {
                    text,
                    cacheable: false,
                });
            }
        }
        let tool_choice = match &self.tool_choice_by_state {
            Some(pick) => pick(state, payload)?,
            None => self.tool_choice.clone(),
        };
        Ok(ModelRequest {
            system,
            messages,
            tools: match &self.deferred {
                Some(d) => self
                    .tools
                    .iter()
                    .filter(|t| d.offers(state, &t.name))
                    .cloned()
                    .collect(),
                None => self.tools.clone(),
            },
            tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            response_schema: None,
        })
    }
}
