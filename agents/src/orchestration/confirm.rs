//! Human confirmation before a destructive action: an interrupt that says what will change,
//! and the reading of the answer.

use crate::tools::{ToolContext, ToolError};
use serde_json::{json, Value};

/// What a tool asks the user to confirm.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The action (usually the tool's name).
    pub action: String,
    /// One sentence for the user: what will happen.
    pub message: String,
    /// What will change, item by item (shown to the user).
    pub changes: Vec<String>,
    /// Extra data for the client (ids, the current state).
    pub details: Value,
}

/// Whether an answer approves: `true`, a clear yes (`"yes"`, `"ok"`, `"approve"`, …) or
/// `{"approved": true}`. Anything else declines.
pub fn approved(answer: &Value) -> bool {
    match answer {
        Value::Bool(b) => *b,
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "y" | "yes" | "ok" | "run" | "approve" | "approved" | "confirm" | "confirmed"
        ),
        Value::Object(o) => o.get("approved").and_then(Value::as_bool).unwrap_or(false),
        _ => false,
    }
}

/// Asks the user to confirm `what` (an interrupt `{"kind": "confirm", "action", "message",
/// "changes", "details"}` keyed by `key`, so its id does not depend on call order). Returns
/// whether the user approved; the first time it returns the interrupt as the error (return it
/// with `?`).
pub fn confirm(ctx: &ToolContext, key: &str, what: &Confirmation) -> Result<bool, ToolError> {
    let answer = ctx.interrupt_keyed(
        key,
        json!({
            "kind": "confirm",
            "action": what.action,
            "message": what.message,
            "changes": what.changes,
            "details": what.details,
        }),
    )?;
    Ok(approved(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_clear_yes_approves() {
        for yes in [json!(true), json!(" Yes "), json!({"approved": true})] {
            assert!(approved(&yes), "{yes}");
        }
        for no in [
            json!(false),
            json!("no"),
            json!(null),
            json!({"approved": "yes"}),
        ] {
            assert!(!approved(&no), "{no}");
        }
    }
}
