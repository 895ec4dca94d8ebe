//! Ready-made nodes for agent graphs: [`LlmNode`] calls a chat model, [`ToolExecutorNode`]
//! runs the tool calls of the last AI message, [`CompactNode`] summarizes a long history and
//! [`AgentOutputNode`] writes the final answer in a format. Wire them as a loop with
//! [`has_tool_calls`] as the route out of the model node:
//!
//! ```text
//! START → agent ─(has tool calls)→ tools → agent
//!               └─(otherwise)────→ END
//! ```

mod agent_output;
mod compact;
mod llm;
mod tool_executor;
mod usage;

pub use agent_output::{parse_json_answer, AgentOutputNode, OutputFormat};
pub use compact::CompactNode;
pub use llm::{ContextFn, LlmNode, OverflowCompaction};
pub use tool_executor::{ToolExecutorNode, REPEATED_CALL};
pub use usage::UsageSum;
pub(crate) use usage::{add_usage, usage_record};

use agentgraph_runtime::StateView;
use serde_json::Value;

/// Whether the last message of `channel` is an AI message with at least one tool call: the
/// route condition from the model node to the tool executor.
pub fn has_tool_calls(state: &StateView, channel: &str) -> bool {
    state
        .list(channel)
        .last()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("ai"))
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .is_some_and(|calls| !calls.is_empty())
}
