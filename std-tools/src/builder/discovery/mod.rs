//! `submit_discovery_results`: ends the discovery phase of the multi-agent builder.
//!
//! The discovery agent submits the node types the workflow needs, each with its version, why it
//! was chosen, and the parameters that change its inputs/outputs (e.g. a vector store's `mode`).
//! The tool validates the list, writes it to the discovery channel (default
//! `discovery_context`) for the builder and configurator, and appends a completion entry to the
//! coordination log (default channel `coordination_log`, meant for an `append` reducer), from
//! which the parent graph routes deterministically to the next phase.
//!
//! The discovery context written:
//!
//! ```json
//! {"nodesFound": [{"nodeName": "@n8n/n8n-nodes-langchain.agent", "version": 2.2,
//!                  "reasoning": "…", "connectionChangingParameters": [
//!                    {"name": "hasOutputParser", "possibleValues": [true, false]}]}],
//!  "techniques": ["chatbot"], "bestPractices": "<best_practices …>…", "summary": "…"}
//! ```
//!
//! The coordination-log entry:
//!
//! ```json
//! {"phase": "discovery", "status": "completed", "timestamp": 1764000000000,
//!  "summary": "…", "output": {"nodeTypes": ["…"], "techniques": ["…"]},
//!  "metadata": {"nodesFound": 3}}
//! ```
//!
//! The tool is here; the submission's types are in `results`, its validation ([`validate`]) in
//! `validate`.

mod brief;
mod results;
mod validate;

pub use brief::discovery_brief;
pub use results::{ConnectionChangingParameter, DiscoveredNode, DiscoveryResults};
pub use validate::{looks_like_full_type, require_main_node, validate};

use super::best_practices;
use crate::catalogue::Catalogue;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::fmt;
use std::sync::Arc;

/// Default channel the discovery context is written to.
pub const DEFAULT_DISCOVERY_CHANNEL: &str = "discovery_context";
/// Default channel the coordination-log entry is appended to.
pub const DEFAULT_COORDINATION_LOG_CHANNEL: &str = "coordination_log";
/// Most nodes accepted in one submission.
pub const MAX_NODES: usize = 100;

/// Decides whether a full node type (`n8n-nodes-base.httpRequest`) exists, e.g. in a
/// catalogue.
pub type NodeTypeChecker = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// For a full node type at a version: its output kinds (`ai_document`) when it is an AI
/// sub-node, `None` when it is not (or is unknown).
pub type SubNodeChecker = Arc<dyn Fn(&str, f64) -> Option<String> + Send + Sync>;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The `submit_discovery_results` tool.
///
/// Arguments: `{"nodes": [{"nodeName", "version", "reasoning", "connectionChangingParameters":
/// [{"name", "possibleValues"}]}], "techniques"?: [...], "summary"?: "..."}`. Writes the
/// discovery context (see the module docs) and a coordination-log entry. Channels: the
/// constructor's, overridden by the tool settings `channel` and `log_channel`.
#[derive(Clone)]
pub struct SubmitDiscoveryResults {
    channel: String,
    log_channel: String,
    checker: Option<NodeTypeChecker>,
    sub_node: Option<SubNodeChecker>,
}

impl fmt::Debug for SubmitDiscoveryResults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitDiscoveryResults")
            .field("channel", &self.channel)
            .field("log_channel", &self.log_channel)
            .field("checker", &self.checker.is_some())
            .field("sub_node", &self.sub_node.is_some())
            .finish()
    }
}

impl Default for SubmitDiscoveryResults {
    fn default() -> Self {
        Self::new()
    }
}

impl SubmitDiscoveryResults {
    /// The tool, writing to `discovery_context` and `coordination_log`, checking no catalogue.
    pub fn new() -> Self {
        SubmitDiscoveryResults {
            channel: DEFAULT_DISCOVERY_CHANNEL.into(),
            log_channel: DEFAULT_COORDINATION_LOG_CHANNEL.into(),
            checker: None,
            sub_node: None,
        }
    }

    /// Writes the discovery context to `channel` instead.
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// Appends the coordination-log entry to `channel` instead.
    pub fn with_log_channel(mut self, channel: impl Into<String>) -> Self {
        self.log_channel = channel.into();
        self
    }

    /// Rejects node types that `checker` does not accept (`UNKNOWN_NODE_TYPE`), e.g. types
    /// missing from a catalogue.
    pub fn with_type_checker(
        mut self,
        checker: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.checker = Some(Arc::new(checker));
        self
    }

    /// Checks the submission against `catalogue`: unknown types (`UNKNOWN_NODE_TYPE`) and a
    /// list of AI sub-nodes only (`NO_MAIN_NODES`, see [`require_main_node`]).
    pub fn with_catalogue(self, catalogue: Arc<Catalogue>) -> Self {
        let known = catalogue.clone();
        let mut tool = self.with_type_checker(move |t| known.contains(t));
        tool.sub_node = Some(Arc::new(move |t: &str, version: f64| {
            let ports = catalogue.ports(t, Some(version), &json!({}))?.ok()?;
            crate::builder::state::is_sub_node(&ports).then(|| ports.output_kinds().join(", "))
        }));
        tool
    }

    fn setting<'a>(ctx: &'a ToolContext, key: &str, default: &'a str) -> &'a str {
        match ctx.settings().get(key).and_then(Value::as_str) {
            Some(c) if !c.is_empty() => c,
            _ => default,
        }
    }
}

#[async_trait]
impl Tool for SubmitDiscoveryResults {
    fn name(&self) -> &str {
        "submit_discovery_results"
    }

    fn description(&self) -> &str {
        "Submit the result of node discovery and finish the discovery phase. List every node \
         type the workflow needs exactly once (including the trigger and AI sub-nodes such as \
         chat models, memories, tools, embeddings), each with its full type name as \
         search_nodes returns it (e.g. `n8n-nodes-base.httpRequest`), the type version from \
         get_node_details, one sentence of reasoning, and the parameters that change its \
         inputs/outputs with their possible values (e.g. vector store `mode`, agent \
         `hasOutputParser`, merge `numberInputs`). Optionally name the techniques whose best \
         practices apply and a one-line summary."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodes": {
                    "type": "array",
                    "description": "Every node type the workflow needs, once each.",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "nodeName": {
                                "type": "string",
                                "description": "Full node type, e.g. `n8n-nodes-base.scheduleTrigger` or `@n8n/n8n-nodes-langchain.agent`."
                            },
                            "version": {
                                "type": "number",
                                "description": "Type version to use (from get_node_details)."
                            },
                            "reasoning": {
                                "type": "string",
                                "description": "Why the workflow needs this node."
                            },
                            "connectionChangingParameters": {
                                "type": "array",
                                "description": "Parameters whose values change the node's inputs/outputs; empty when none.",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string"},
                                        "possibleValues": {
                                            "type": "array",
                                            "items": {"type": ["string", "number", "boolean"]}
                                        }
                                    },
                                    "required": ["name", "possibleValues"]
                                }
                            }
                        },
                        "required": ["nodeName", "version", "reasoning", "connectionChangingParameters"]
                    }
                },
                "techniques": {
                    "type": "array",
                    "description": "Techniques whose best practices apply (as for get_best_practices).",
                    "items": {"type": "string", "enum": best_practices::technique_ids()}
                },
                "summary": {
                    "type": "string",
                    "description": "One line on what was discovered."
                }
            },
            "required": ["nodes"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let results = validate(&args, self.checker.as_ref())?;
        if let Some(sub_node) = &self.sub_node {
            require_main_node(&results, sub_node)?;
        }
        let channel = Self::setting(ctx, "channel", &self.channel);
        let log_channel = Self::setting(ctx, "log_channel", &self.log_channel);
        Ok(ToolOutput::text(results.confirmation())
            .write(channel, results.context_value())
            .write(log_channel, results.log_entry(now_ms())))
    }
}
