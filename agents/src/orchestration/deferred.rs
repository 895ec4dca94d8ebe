//! Deferred tools: an agent is offered its core tools on every call and the others only once
//! it found them (`search_tools`) and activated them (`load_tool`); activated names are kept in
//! a thread channel ([`LOADED_TOOLS`] by default), so they stay offered for the rest of the
//! thread. [`crate::nodes::LlmNode::deferred`] does the filtering.

use super::ToolPool;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// `search_tools`'s name.
pub const SEARCH_TOOLS: &str = "search_tools";
/// `load_tool`'s name.
pub const LOAD_TOOL: &str = "load_tool";
/// The default channel of loaded tool names (`list<string>`, reducer `append`).
pub const LOADED_TOOLS: &str = "loaded_tools";

/// Which tools an `llm` node offers: the core ones, plus those named in a channel.
#[derive(Debug, Clone)]
pub struct DeferredTools {
    /// Always offered.
    pub core: BTreeSet<String>,
    /// The channel listing the names activated so far.
    pub loaded_channel: String,
}

impl DeferredTools {
    /// Whether the tool `name` is offered in `state`.
    pub fn offers(&self, state: &StateView, name: &str) -> bool {
        self.core.contains(name)
            || state
                .get(&self.loaded_channel)
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|v| v.as_str() == Some(name)))
    }
}

/// The searchable tools: the pool minus the core ones (set by the tool's settings `core`).
fn searchable<'a>(pool: &'a ToolPool, ctx: &ToolContext) -> Vec<&'a std::sync::Arc<dyn Tool>> {
    let core: BTreeSet<&str> = ctx.settings()["core"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    pool.values().filter(|t| !core.contains(t.name())).collect()
}

/// Finds deferred tools by what they do.
pub struct SearchToolsTool {
    pool: ToolPool,
}

impl SearchToolsTool {
    /// Searches `pool` (the tools the agent can load).
    pub fn new(pool: ToolPool) -> Self {
        SearchToolsTool { pool }
    }
}

/// How well `text` matches the query words: the number of words found (name matches count
/// double).
fn score(name: &str, description: &str, words: &[String]) -> usize {
    let name = name.to_lowercase().replace('_', " ");
    let description = description.to_lowercase();
    words
        .iter()
        .map(|w| {
            2 * usize::from(name.contains(w.as_str()))
                + usize::from(description.contains(w.as_str()))
        })
        .sum()
}

#[async_trait::async_trait]
impl Tool for SearchToolsTool {
    fn name(&self) -> &str {
        SEARCH_TOOLS
    }

    fn description(&self) -> &str {
        "Find more tools by what they do (e.g. \"list executions\", \"delete workflow\"). \
         Returns names and descriptions; activate one with load_tool before calling it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing the action."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let words: Vec<String> = args["query"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(|w| w.trim_end_matches('s').to_string())
            .collect();
        if words.is_empty() {
            return Err(ToolError::new(
                "INVALID_ARGUMENTS",
                "`query` needs at least one word of three letters or more",
            ));
        }
        let limit = args["limit"].as_u64().unwrap_or(5) as usize;
        let mut hits: Vec<(usize, &str, &str)> = searchable(&self.pool, ctx)
            .into_iter()
            .map(|t| {
                (
                    score(t.name(), t.description(), &words),
                    t.name(),
                    t.description(),
                )
            })
            .filter(|(s, _, _)| *s > 0)
            .collect();
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let tools: Vec<Value> = hits
            .into_iter()
            .take(limit)
            .map(|(_, n, d)| json!({"name": n, "description": d}))
            .collect();
        let note = if tools.is_empty() {
            "no tool matches; try other words"
        } else {
            "call load_tool with a name to use it"
        };
        Ok(ToolOutput {
            content: json!({"tools": tools, "note": note}),
            writes: Vec::new(),
        })
    }
}

/// Activates deferred tools for the rest of the thread.
pub struct LoadToolTool {
    pool: ToolPool,
}

impl LoadToolTool {
    /// Loads tools of `pool`.
    pub fn new(pool: ToolPool) -> Self {
        LoadToolTool { pool }
    }
}

#[async_trait::async_trait]
impl Tool for LoadToolTool {
    fn name(&self) -> &str {
        LOAD_TOOL
    }

    fn description(&self) -> &str {
        "Activate tools found with search_tools: they are offered from your next step on, for \
         the rest of the conversation."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            },
            "required": ["names"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let channel = ctx.settings()["channel"]
            .as_str()
            .unwrap_or(LOADED_TOOLS)
            .to_string();
        if ctx.state().schema().index_of(&channel).is_none() {
            return Err(ToolError::new(
                "NOT_CONFIGURED",
                format!(
                    "load_tool needs a `{channel}: list<string>` channel with reducer append in \
                     the graph's state"
                ),
            ));
        }
        let names: Vec<&str> = args["names"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let unknown: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !self.pool.contains_key(*n))
            .collect();
        if !unknown.is_empty() {
            return Err(ToolError::new(
                "UNKNOWN_TOOL",
                format!(
                    "no tool named {}; find names with search_tools",
                    unknown.join(", ")
                ),
            ));
        }
        let already: BTreeSet<&str> = ctx
            .state()
            .get(&channel)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let new: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !already.contains(n))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut out = ToolOutput {
            content: json!({"loaded": names, "note": "offered from your next step"}),
            writes: Vec::new(),
        };
        if !new.is_empty() {
            out = out.write(channel, json!(new));
        }
        Ok(out)
    }
}
