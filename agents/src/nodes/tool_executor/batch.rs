//! Which calls of one answer run: a call identical to an earlier one of the same answer is not
//! run again (`DUPLICATE_CALL`), and calls past the executor's `max_batch` are not run
//! (`TOO_MANY_CALLS`). Both are answered with a tool error the model can act on.
//!
//! A small model can fill its whole output limit with tool calls — one recorded answer made
//! 23 `search_nodes` calls, the next another 23 — and every result lands in the conversation,
//! which then outgrows the model's context. Identical calls would also repeat their effects
//! (two identical `add_nodes` add two nodes).

use super::{CallResult, Outcome};
use crate::tools::ToolError;
use serde_json::{json, Value};

/// For each call, `None` (run it) or the error that answers it instead. Only calls that run
/// count towards the limit and can be duplicated.
pub(super) fn plan(calls: &[Value], max_batch: Option<usize>) -> Vec<Option<ToolError>> {
    let mut seen: Vec<(&str, &Value, String)> = Vec::new();
    let mut run = 0usize;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            let args = call.get("args").unwrap_or(&Value::Null);
            if let Some((_, _, first)) = seen.iter().find(|(n, a, _)| *n == name && *a == args) {
                return Some(ToolError::new(
                    "DUPLICATE_CALL",
                    format!(
                        "not run: the same call (same tool, same arguments) as `{first}` earlier \
                         in this answer; use that call's result"
                    ),
                ));
            }
            if max_batch.is_some_and(|max| run >= max) {
                let max = max_batch.unwrap_or_default();
                return Some(ToolError::new(
                    "TOO_MANY_CALLS",
                    format!(
                        "not run: one answer may make at most {max} tool calls; read these \
                         results, then send the calls that are still needed"
                    ),
                ));
            }
            seen.push((name, args, call_id(call, i)));
            run += 1;
            None
        })
        .collect()
}

fn call_id(call: &Value, index: usize) -> String {
    call.get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("call#{index}"))
}

/// The result of a call that was not run.
pub(super) fn skipped(call: &Value, index: usize, err: ToolError) -> CallResult {
    CallResult {
        call_id: call_id(call, index),
        name: call
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        args: call.get("args").cloned().unwrap_or_else(|| json!({})),
        outcome: Outcome::Failed(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(plan: &[Option<ToolError>]) -> Vec<&str> {
        plan.iter()
            .map(|p| p.as_ref().map(|e| e.code.as_str()).unwrap_or("run"))
            .collect()
    }

    #[test]
    fn duplicates_and_the_limit() {
        let calls = vec![
            json!({"id": "a", "name": "search", "args": {"q": "gmail"}}),
            json!({"id": "b", "name": "search", "args": {"q": "gmail"}}),
            json!({"id": "c", "name": "search", "args": {"q": "slack"}}),
            json!({"id": "d", "name": "add", "args": {"q": "gmail"}}),
            json!({"id": "e", "name": "search", "args": {"q": "sheets"}}),
        ];
        let p = plan(&calls, None);
        assert_eq!(codes(&p), ["run", "DUPLICATE_CALL", "run", "run", "run"]);
        assert!(p[1].as_ref().is_some_and(|e| e.message.contains("`a`")));
        // The limit counts the calls that run; duplicates do not use it up.
        let p = plan(&calls, Some(2));
        assert_eq!(
            codes(&p),
            [
                "run",
                "DUPLICATE_CALL",
                "run",
                "TOO_MANY_CALLS",
                "TOO_MANY_CALLS"
            ]
        );
        assert!(p[3]
            .as_ref()
            .is_some_and(|e| e.message.contains("at most 2")));
    }
}
