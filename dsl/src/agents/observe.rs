//! The `observe` kind: observational memory for any agent graph
//! ([`agentgraph_agents::memory::observational`]).
//!
//! ```text
//! state {
//!   messages: messages
//!   observations: string?        # thread-scoped: what the observer kept of older messages
//!   working_memory: string?      # the principal's working memory, loaded at each step
//! }
//! node observe: observe { model: main, messages: messages, observations: observations,
//!                         threshold: 30000, keep_last: 8, chunk: 6000, reflect_at: 8000,
//!                         max_message_tokens: 2000,
//!                         observer: observer_prompt, reflector: reflector_prompt,
//!                         working_memory: working_memory, usage: usage }
//! node agent: llm { model: main, messages: messages, observations: observations,
//!                   working_memory: working_memory, tools: kit }
//! START -> observe -> agent
//! tools -> observe
//! ```
//!
//! `observer` and `reflector` are prompt names or strings; every entry but `model` is optional
//! (the defaults are the agents crate's). The tool `update_working_memory` writes the working
//! memory; every graph may name it.

use super::{model_of, prompt_or_string, usize_entry};
use crate::registry::{EntrySpec, NodeBuild, NodeFactory, Registry};
use agentgraph_agents::memory::observational::UPDATE_WORKING_MEMORY;
use agentgraph_agents::memory::observational::{ObserveNode, UpdateWorkingMemoryTool};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::Node;
use std::sync::Arc;

/// Registers the `observe` kind.
pub fn register(reg: &mut Registry) {
    reg.register_kind(
        "observe",
        vec![
            EntrySpec::required("model"),
            EntrySpec::writes("messages"),
            EntrySpec::writes("observations"),
            EntrySpec::value("threshold"),
            EntrySpec::value("keep_last"),
            EntrySpec::value("chunk"),
            EntrySpec::value("max_message_tokens"),
            EntrySpec::value("reflect_at"),
            EntrySpec::value("observer"),
            EntrySpec::value("reflector"),
            EntrySpec::writes("working_memory"),
            EntrySpec::writes("usage"),
        ],
        "observational memory: over a token threshold, the oldest messages become observations \
         (an observer model call), condensed when they grow (a reflector call); also loads the \
         user's working memory",
        Arc::new(ObserveFactory),
    );
}

/// The working-memory tool, for the tool map every graph sees.
pub fn tool() -> (String, Arc<dyn Tool>) {
    (
        UPDATE_WORKING_MEMORY.to_string(),
        Arc::new(UpdateWorkingMemoryTool),
    )
}

struct ObserveFactory;

impl NodeFactory for ObserveFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let (model, decl) = model_of(b)?;
        let mut node = ObserveNode::new(model);
        node.pricing = super::pricing(decl)?;
        if let Some(ch) = b.channel("messages") {
            node.messages_channel = ch.to_string();
        }
        if let Some(ch) = b.channel("observations") {
            node.observations_channel = ch.to_string();
        }
        let positive = |key: &str| -> Result<Option<usize>, String> {
            match usize_entry(b, key)? {
                Some(0) => Err(format!("`{key}` is a positive integer")),
                n => Ok(n),
            }
        };
        if let Some(n) = positive("threshold")? {
            node.threshold_tokens = n;
        }
        if let Some(n) = usize_entry(b, "keep_last")? {
            node.keep_last = n;
        }
        if let Some(n) = positive("chunk")? {
            node.chunk_tokens = n;
        }
        if let Some(n) = positive("max_message_tokens")? {
            node.max_message_tokens = n;
        }
        if let Some(n) = positive("reflect_at")? {
            node.reflect_at = n;
        }
        if let Some(e) = b.expr("observer") {
            node.observer_instructions = Some(prompt_or_string(b, e, "observer")?);
        }
        if let Some(e) = b.expr("reflector") {
            node.reflector_instructions = Some(prompt_or_string(b, e, "reflector")?);
        }
        node.working_memory_channel = b.channel("working_memory").map(str::to_owned);
        node.usage_channel = b.channel("usage").map(str::to_owned);
        Ok(Arc::new(node))
    }
}
