//! `ask_user`: a question to the user, as an interrupt; the answer is the tool's result.

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// Asks the user a question and returns the answer.
pub struct AskUserTool;

#[async_trait::async_trait]
impl Tool for AskUserTool {
    fn name(&self) -> &str {
        ASK_USER
    }

    fn description(&self) -> &str {
        "Ask the user a question when you cannot go on without their answer (a choice, a \
         missing value). The run pauses until they answer; their answer is the result."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in one or two sentences."},
                "options": {"type": "array", "items": {"type": "string"}, "description": "Answers to choose from, if any."}
            },
            "required": ["question"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let answer = ctx.interrupt_keyed(
            "ask_user",
            json!({"kind": "question", "question": args["question"], "options": args.get("options").cloned().unwrap_or(json!([]))}),
        )?;
        Ok(ToolOutput {
            content: json!({"answer": answer}),
            writes: Vec::new(),
        })
    }
}
