//! Structured output: a model answer that must follow a JSON schema (routing decisions,
//! extracted records), validated, with one repair attempt.
//!
//! The answer is requested as a forced call of a tool named [`RESPOND_TOOL`] whose input
//! schema is the wanted schema. Both providers support forced tool calls, so this works the
//! same on Anthropic, OpenAI-compatible servers and the scripted model. A model that answers
//! with text instead is accepted when the text is the JSON object (code fences allowed).
//!
//! When the answer does not follow the schema, the model is told what is wrong (each problem
//! with its path) and asked once more; a second invalid answer is an error that carries both
//! answers' problems.
//!
//! An answer the output limit cut inside the `respond` call is closed where it stopped and
//! used when that closing follows the schema (a small model's supervisor ran on in its
//! `reason` after a complete `next`); otherwise it counts as an invalid answer, and the repair
//! asks for a shorter one.

use super::cut_json::closings;
use super::{CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, ToolChoice};
use super::{ToolSpec, Usage};
use crate::tools::validate_args;
use serde_json::{json, Value};

/// The name of the tool the model calls to give its structured answer.
pub const RESPOND_TOOL: &str = "respond";

/// A valid structured answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    /// The answer, valid against the schema.
    pub value: Value,
    /// Usage of every call made (two when a repair was needed).
    pub usage: Usage,
    /// Whether the first answer was invalid and the repair succeeded.
    pub repaired: bool,
    /// Whether the answer used was cut off by the output limit and closed where it stopped
    /// (its last text field may end mid-sentence).
    pub cut: bool,
}

/// Why no valid structured answer came back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructuredError {
    /// The model call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Both answers broke the schema.
    #[error(
        "the model's structured answer is invalid after one repair attempt: {}",
        .problems.join("; ")
    )]
    Invalid {
        /// What was wrong with the last answer.
        problems: Vec<String>,
        /// The last answer as received.
        answer: Value,
    },
}

/// The answer carried by a response: the arguments of the `respond` call, else the text
/// parsed as JSON.
fn extract(resp: &ModelResponse) -> Result<Value, Vec<String>> {
    if let Some(call) = resp.tool_calls.iter().find(|c| c.name == RESPOND_TOOL) {
        return Ok(call.args.clone());
    }
    if let Some(call) = resp.tool_calls.first() {
        return Err(vec![format!(
            "called tool `{}` instead of `{RESPOND_TOOL}`",
            call.name
        )]);
    }
    crate::nodes::parse_json_answer(&resp.text).map_err(|e| {
        vec![format!(
            "the answer is not JSON ({e}); call `{RESPOND_TOOL}` with the answer as its arguments"
        )]
    })
}

fn check(resp: &ModelResponse, schema: &Value) -> Result<Value, (Vec<String>, Value)> {
    match extract(resp) {
        Ok(v) => match validate_args(schema, &v) {
            Ok(()) => Ok(v),
            Err(problems) => Err((problems, v)),
        },
        Err(problems) => Err((problems, Value::String(resp.text.clone()))),
    }
}

/// One call's outcome.
enum Attempt {
    /// A valid answer; `cut` when the output limit cut it and its closing was used.
    Valid {
        value: Value,
        usage: Usage,
        cut: bool,
    },
    /// An answer that breaks the schema (`response`), or one the limit cut beyond use
    /// (`response` is `None`).
    Invalid {
        problems: Vec<String>,
        answer: Value,
        response: Option<ModelResponse>,
        usage: Usage,
    },
}

/// Makes one call and checks its answer. An answer the output limit cut inside the `respond`
/// call is closed where it stopped ([`closings`]) and used when a closing follows the schema
/// (a runaway free-text field after the fields that matter); otherwise it is invalid.
async fn attempt(
    model: &dyn ChatModel,
    req: &ModelRequest,
    schema: &Value,
    ctx: &CallContext,
) -> Result<Attempt, ModelError> {
    let response = match model.complete(req, ctx).await {
        Ok(response) => response,
        Err(ModelError::OutputTruncated {
            tool,
            partial,
            usage,
            max_tokens,
            ..
        }) if tool == RESPOND_TOOL => {
            let closed = closings(&partial);
            if let Some(value) = closed.iter().find(|v| validate_args(schema, v).is_ok()) {
                tracing::warn!(
                    ?max_tokens,
                    "a structured answer cut off by max_tokens was closed and used"
                );
                return Ok(Attempt::Valid {
                    value: value.clone(),
                    usage,
                    cut: true,
                });
            }
            let limit = max_tokens
                .map(|n| format!("{n} tokens"))
                .unwrap_or_else(|| "the output limit".into());
            let problems = match closed.first().map(|v| validate_args(schema, v)) {
                Some(Err(found)) => found,
                _ => vec!["the answer is not a JSON object".into()],
            };
            return Ok(Attempt::Invalid {
                problems: std::iter::once(format!(
                    "the answer was cut off at {limit} before it was complete; keep every text \
                     field to one short sentence"
                ))
                .chain(problems)
                .collect(),
                answer: Value::String(partial),
                response: None,
                usage,
            });
        }
        Err(e) => return Err(e),
    };
    let usage = response.usage;
    Ok(match check(&response, schema) {
        Ok(value) => Attempt::Valid {
            value,
            usage,
            cut: false,
        },
        Err((problems, answer)) => Attempt::Invalid {
            problems,
            answer,
            response: Some(response),
            usage,
        },
    })
}

/// Asks `model` for an answer following `schema` (see the module docs). `req` carries the
/// system prompt and conversation; its tools and tool choice are replaced.
pub async fn complete_structured(
    model: &dyn ChatModel,
    req: &ModelRequest,
    schema: &Value,
    ctx: &CallContext,
) -> Result<Structured, StructuredError> {
    let mut req = req.clone();
    req.tools = vec![ToolSpec {
        name: RESPOND_TOOL.into(),
        description: "Give your answer. Call this exactly once with the answer as arguments."
            .into(),
        input_schema: schema.clone(),
    }];
    req.tool_choice = ToolChoice::Tool(RESPOND_TOOL.into());
    // One answer is wanted: the answer ends where a second call would begin (a small model
    // streamed 41 `respond` calls, 700 kB, until its 4 096-token limit).
    req.parallel_tool_calls = Some(false);
    let (problems, first, mut usage) = match attempt(model, &req, schema, ctx).await? {
        Attempt::Valid { value, usage, cut } => {
            return Ok(Structured {
                value,
                usage,
                repaired: false,
                cut,
            })
        }
        Attempt::Invalid {
            problems,
            response,
            usage,
            ..
        } => (problems, response, usage),
    };
    // One repair: show the model its answer and what is wrong with it.
    let feedback = format!(
        "Your answer does not follow the required schema: {}. Call `{RESPOND_TOOL}` again \
         with a corrected answer.",
        problems.join("; ")
    );
    match &first {
        Some(first) if !first.tool_calls.is_empty() => {
            req.messages.push(first.to_message("structured-answer-1"));
            let call_id = &first.tool_calls[0].id;
            for c in &first.tool_calls {
                let content = if &c.id == call_id {
                    feedback.clone()
                } else {
                    format!("not run: only `{RESPOND_TOOL}` may be called")
                };
                req.messages.push(json!({"type": "tool",
                    "id": format!("structured-repair-{}", c.id),
                    "tool_call_id": c.id, "name": c.name, "content": content,
                    "status": "error"}));
            }
        }
        Some(first) => {
            req.messages.push(first.to_message("structured-answer-1"));
            req.messages
                .push(json!({"type": "human", "id": "structured-repair", "content": feedback}));
        }
        // A cut answer is not shown again: its length is the problem.
        None => req
            .messages
            .push(json!({"type": "human", "id": "structured-repair", "content": feedback})),
    }
    match attempt(model, &req, schema, ctx).await? {
        Attempt::Valid {
            value,
            usage: second,
            cut,
        } => {
            usage.add(&second);
            Ok(Structured {
                value,
                usage,
                repaired: true,
                cut,
            })
        }
        Attempt::Invalid {
            problems, answer, ..
        } => Err(StructuredError::Invalid { problems, answer }),
    }
}
