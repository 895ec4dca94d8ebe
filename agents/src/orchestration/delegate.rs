//! `delegate`: the orchestrator composes a sub-agent on the fly — a role, its instructions
//! (the sub-agent's system prompt), a subset of the registered tools — and gets its final
//! answer as the result. Sub-agents cannot delegate (no cascading).

use super::subagent::{SubAgent, DEFAULT_MAX_STEPS};
use super::{ToolPool, ORCHESTRATION_TOOLS};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};
use std::sync::Arc;

/// The tool's name.
pub const DELEGATE: &str = "delegate";

/// Runs a sub-agent composed by the caller over tools of a registered pool.
pub struct DelegateTool {
    pool: ToolPool,
    max_steps: usize,
}

impl DelegateTool {
    /// A delegate tool whose sub-agents may use tools of `pool` (orchestration tools are never
    /// given), with [`DEFAULT_MAX_STEPS`] model calls each.
    pub fn new(pool: ToolPool) -> Self {
        DelegateTool {
            pool,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }

    /// Sets the most model calls of each sub-agent.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.max_steps = n.max(1);
        self
    }

    /// The tools named in `names`, checked against the pool: an unknown or forbidden name is
    /// an error listing what may be named.
    pub fn pick(pool: &ToolPool, names: &[String]) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        for name in names {
            if ORCHESTRATION_TOOLS.contains(&name.as_str()) {
                return Err(ToolError::new(
                    "FORBIDDEN_TOOL",
                    format!(
                        "`{name}` cannot be given to a sub-agent (sub-agents cannot delegate, \
                         plan or load tools); remove it from `tools`"
                    ),
                ));
            }
            match pool.get(name) {
                Some(t) => {
                    if !out.iter().any(|o: &Arc<dyn Tool>| o.name() == name) {
                        out.push(t.clone());
                    }
                }
                None => bad.push(name.as_str()),
            }
        }
        if !bad.is_empty() {
            let known: Vec<&str> = pool.keys().map(String::as_str).collect();
            return Err(ToolError::new(
                "UNKNOWN_TOOL",
                format!(
                    "no registered tool named {}; a sub-agent may be given: {}",
                    bad.iter()
                        .map(|b| format!("`{b}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    known.join(", ")
                ),
            ));
        }
        Ok(out)
    }
}

fn text(args: &Value, key: &str) -> Result<String, ToolError> {
    match args.get(key).and_then(Value::as_str).map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ToolError::new(
            "INVALID_ARGUMENTS",
            format!("`{key}` must be a non-empty string"),
        )),
    }
}

#[async_trait::async_trait]
impl Tool for DelegateTool {
    fn name(&self) -> &str {
        DELEGATE
    }

    fn description(&self) -> &str {
        "Hand a focused, multi-step task to a sub-agent with a clean context. Give it a role, \
         instructions (its whole system prompt: goal, context it needs, what to return) and the \
         names of the tools it needs. It returns its final answer. Simple reads stay with you."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "role": {"type": "string", "description": "Free-form role, e.g. \"execution debugger\"."},
                "instructions": {"type": "string", "description": "The sub-agent's system prompt: goal, context, expected answer."},
                "task": {"type": "string", "description": "The concrete request it starts with."},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "Names of registered tools it may call."}
            },
            "required": ["role", "instructions", "task", "tools"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let role = text(&args, "role")?;
        let instructions = text(&args, "instructions")?;
        let task = text(&args, "task")?;
        let names: Vec<String> = args["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let tools = Self::pick(&self.pool, &names)?;
        let agent = SubAgent {
            role: role.clone(),
            instructions,
            tools,
            max_steps: self.max_steps,
        };
        let answer = agent.run(ctx, "delegate", &task).await?;
        Ok(ToolOutput {
            content: json!({"role": role, "answer": answer}),
            writes: Vec::new(),
        })
    }
}
