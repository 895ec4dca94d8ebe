//! The `agent_output` node: turns the end of an agent loop into the run's output, in the
//! formats of the generic agent (text, JSON, or full with metadata).

use agentgraph_runtime::Update;
use agentgraph_runtime::{Node, NodeError, TaskContext};
use async_trait::async_trait;
use serde_json::{json, Value};

/// The output formats of [`AgentOutputNode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The final answer's text.
    Text,
    /// The final answer parsed as JSON (a fenced ```json block is accepted).
    Json,
    /// `{"response", "iterations", "tools_used", "tool_calls", "usage"}`.
    Full,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(OutputFormat::Text),
            "json" => Ok(OutputFormat::Json),
            "full" => Ok(OutputFormat::Full),
            other => Err(format!(
                "unknown output format `{other}`; use text, json or full"
            )),
        }
    }
}

/// Writes the final AI answer of `messages_channel` to `output_channel` in a format.
///
/// `iterations` counts the AI messages after the last human message, `tools_used` the
/// distinct tools they called (first use first), `tool_calls` all calls; `usage` is this run's
/// entry of the usage channel (see [`crate::nodes::LlmNode`]) when one is set. A JSON format
/// whose answer is not JSON fails with `OUTPUT_NOT_JSON`.
#[derive(Debug, Clone)]
pub struct AgentOutputNode {
    /// The conversation.
    pub messages_channel: String,
    /// Where the output goes.
    pub output_channel: String,
    /// The format.
    pub format: OutputFormat,
    /// The usage channel, for the `full` format.
    pub usage_channel: Option<String>,
}

impl AgentOutputNode {
    /// Reads `messages`, writes `output`.
    pub fn new(format: OutputFormat) -> Self {
        AgentOutputNode {
            messages_channel: "messages".into(),
            output_channel: "output".into(),
            format,
            usage_channel: None,
        }
    }
}

fn kind(m: &Value) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Parses a model's JSON answer, allowing a fenced code block around it.
pub fn parse_json_answer(text: &str) -> Result<Value, serde_json::Error> {
    let t = text.trim();
    let body = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|b| b.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    serde_json::from_str(body)
}

#[async_trait]
impl Node for AgentOutputNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let messages = ctx.state().list(&self.messages_channel);
        let turn: Vec<&Value> = messages
            .iter()
            .rev()
            .take_while(|m| kind(m) != "human")
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let answer = turn
            .iter()
            .rev()
            .find(|m| kind(m) == "ai")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let output = match self.format {
            OutputFormat::Text => Value::String(answer),
            OutputFormat::Json => parse_json_answer(&answer).map_err(|e| {
                NodeError::fatal(format!(
                    "the agent's answer is not JSON ({e}); ask for JSON in the system prompt \
                     or use the text format. Answer: {answer}"
                ))
                .with_code("OUTPUT_NOT_JSON")
            })?,
            OutputFormat::Full => {
                let mut tools_used: Vec<&str> = Vec::new();
                let mut tool_calls = 0;
                for m in turn.iter().filter(|m| kind(m) == "ai") {
                    for c in m
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        tool_calls += 1;
                        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                        if !tools_used.contains(&name) {
                            tools_used.push(name);
                        }
                    }
                }
                let usage = self
                    .usage_channel
                    .as_deref()
                    .and_then(|ch| ctx.state().get(ch))
                    .and_then(|u| u.get("runs"))
                    .and_then(|r| r.get(ctx.run_id()))
                    .cloned()
                    .unwrap_or(Value::Null);
                json!({
                    "response": answer,
                    "iterations": turn.iter().filter(|m| kind(m) == "ai").count(),
                    "tools_used": tools_used,
                    "tool_calls": tool_calls,
                    "usage": usage,
                })
            }
        };
        Ok(Update::new().set(self.output_channel.clone(), output))
    }
}
