//! Repeated failing calls: the same tool called with the same arguments, failing with the same
//! error, several times in a row.

use crate::tools::ToolError;
use serde_json::{json, Value};

/// The code of the error that answers a repeated failing call.
pub const REPEATED_CALL: &str = "REPEATED_CALL";

/// The error of a finished attempt, read from its tool message: `(code, message)`; for an
/// answer that was itself a repeat, the error it repeated. `None` for a success.
fn attempt_error(tool_message: &Value) -> Option<(String, String)> {
    if tool_message.get("status").and_then(Value::as_str) != Some("error") {
        return None;
    }
    // A notice may have been appended to the content, turning it into text.
    let content = match tool_message.get("content") {
        Some(Value::String(s)) => serde_json::Deserializer::from_str(s)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
            .unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    let err = content.get("error")?;
    let err = err.get("repeated").unwrap_or(err);
    let text = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Some((text("code"), text("message")))
}

/// How many times in a row, counting the attempt that just failed with `error`, the call
/// `name(args)` has failed with that same error in `history` (the conversation before the
/// current AI message). Earlier attempts of the same call are read newest first; a success or
/// another error ends the run. Other calls in between do not.
pub(super) fn streak(history: &[Value], name: &str, args: &Value, error: &ToolError) -> usize {
    let mut attempts: Vec<&str> = Vec::new();
    for m in history {
        let is_ai = m.get("type").and_then(Value::as_str) == Some("ai");
        let calls = m.get("tool_calls").and_then(Value::as_array);
        for c in calls.into_iter().flatten().filter(|_| is_ai) {
            let same = c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("args").unwrap_or(&Value::Null) == args;
            if let (true, Some(id)) = (same, c.get("id").and_then(Value::as_str)) {
                attempts.push(id);
            }
        }
    }
    let result_of = |id: &str| {
        history.iter().rev().find(|m| {
            m.get("type").and_then(Value::as_str) == Some("tool")
                && m.get("tool_call_id").and_then(Value::as_str) == Some(id)
        })
    };
    let mut n = 1;
    for id in attempts.iter().rev() {
        let Some(result) = result_of(id) else {
            continue;
        };
        match attempt_error(result) {
            Some((code, message)) if code == error.code && message == error.message => n += 1,
            _ => break,
        }
    }
    n
}

/// The error answering a call that failed with `error` for the `n`th time in a row.
pub(super) fn repeated(name: &str, error: &ToolError, n: usize) -> ToolError {
    ToolError::new(
        REPEATED_CALL,
        format!(
            "this exact call (`{name}` with the same arguments) has now failed {n} times in a \
             row with the same error: {}: {} Calling it again unchanged will fail again: change \
             the arguments, first call another tool that removes the cause, or stop and explain \
             the problem in your answer.",
            error.code,
            error.message.trim_end()
        ),
    )
}

/// The tool message content of a repeat: the repeat error with the error it repeats and the
/// count.
pub(super) fn repeated_content(repeat: &ToolError, original: &ToolError, n: usize) -> Value {
    json!({"error": {
        "code": repeat.code,
        "message": repeat.message,
        "repeats": n,
        "repeated": {"code": original.code, "message": original.message},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ai(id: &str, args: Value) -> Value {
        json!({"type": "ai", "content": "", "tool_calls": [{"id": id, "name": "connect", "args": args}]})
    }

    fn failed(id: &str, code: &str) -> Value {
        json!({"type": "tool", "tool_call_id": id, "status": "error",
               "content": {"error": {"code": code, "message": "no such node"}}})
    }

    #[test]
    fn identical_failures_in_a_row_are_counted_until_a_success_or_another_error() {
        let args = json!({"a": "X"});
        let err = ToolError::new("NODE_NOT_FOUND", "no such node");
        let history = vec![
            ai("1", args.clone()),
            json!({"type": "tool", "tool_call_id": "1", "content": "ok"}),
            ai("2", args.clone()),
            failed("2", "NODE_NOT_FOUND"),
            ai("3", json!({"a": "Y"})),
            failed("3", "NODE_NOT_FOUND"),
            ai("4", args.clone()),
            json!({"type": "tool", "tool_call_id": "4", "status": "error",
                   "content": "{\"error\": {\"code\": \"NODE_NOT_FOUND\", \"message\": \"no such node\"}}\n\n[workflow update] note"}),
        ];
        // 2 and 4 failed the same way; 1 succeeded; 3 had other arguments.
        assert_eq!(streak(&history, "connect", &args, &err), 3);
        assert_eq!(
            streak(&history, "connect", &args, &ToolError::new("OTHER", "x")),
            1
        );
        let repeat = repeated("connect", &err, 3);
        let mut more = history.clone();
        more.push(ai("5", args.clone()));
        more.push(
            json!({"type": "tool", "tool_call_id": "5", "status": "error",
            "content": repeated_content(&repeat, &err, 3)}),
        );
        assert_eq!(streak(&more, "connect", &args, &err), 4);
        assert!(repeat.message.contains("failed 3 times in a row"));
    }
}
