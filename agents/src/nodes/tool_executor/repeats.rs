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

/// The ids of the calls `name(args)` in the AI messages of `history`, oldest first.
fn call_ids<'a>(history: &'a [Value], name: &str, args: &Value) -> Vec<&'a str> {
    history
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("ai"))
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter(|c| {
            c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("args").unwrap_or(&Value::Null) == args
        })
        .filter_map(|c| c.get("id").and_then(Value::as_str))
        .collect()
}

/// How many times in a row, counting the attempt that just failed with `error`, the call
/// `name(args)` has failed with that same error in `history` (the conversation before the
/// current AI message). Earlier attempts of the same call are read newest first; a success or
/// another error ends the run. Other calls in between do not.
pub(super) fn streak(history: &[Value], name: &str, args: &Value, error: &ToolError) -> usize {
    let attempts = call_ids(history, name, args);
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

/// Whether `calls` (the current answer's) repeat the previous answer exactly — the same calls
/// with the same arguments, in the same order, every one of which succeeded — with nothing but
/// their tool messages in between. Running them again would give the same results, so a model
/// answering this way is looping (a small model sent the same `search_nodes` call in three
/// answers in a row).
pub(super) fn repeats_previous_answer(history: &[Value], calls: &[Value]) -> bool {
    let key = |c: &Value| {
        (
            c.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            c.get("args").cloned().unwrap_or(Value::Null),
        )
    };
    let kind = |m: &Value| {
        m.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut results: Vec<&Value> = Vec::new();
    for m in history.iter().rev() {
        match kind(m).as_str() {
            "tool" => results.push(m),
            "ai" => {
                let previous: Vec<&Value> = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(|c| c.iter().collect())
                    .unwrap_or_default();
                if previous.is_empty() || previous.len() != calls.len() {
                    return false;
                }
                let same = previous.iter().zip(calls).all(|(a, b)| key(a) == key(b));
                if !same {
                    return false;
                }
                let result_of = |c: &Value| {
                    let id = c.get("id").and_then(Value::as_str);
                    results
                        .iter()
                        .find(|r| r.get("tool_call_id").and_then(Value::as_str) == id)
                        .map(|r| attempt_error(r))
                };
                // The same answer refused as a repeat: what counts is the one before it (a
                // small model alternated an identical search and its refusal, so every other
                // copy ran).
                let refused = previous.iter().all(
                    |c| matches!(result_of(c), Some(Some((code, _))) if code == REPEATED_CALL),
                );
                if refused {
                    results.clear();
                    continue;
                }
                return previous.iter().all(|c| matches!(result_of(c), Some(None)));
            }
            _ => return false,
        }
    }
    false
}

/// The result of an earlier call `name(args)` in `history` that succeeded (its tool message is
/// there and is not an error), as text: the result is in the conversation already. `None`
/// when there is none.
pub(super) fn earlier_success(history: &[Value], name: &str, args: &Value) -> Option<String> {
    let ids = call_ids(history, name, args);
    let result = history.iter().find(|m| {
        m.get("type").and_then(Value::as_str) == Some("tool")
            && m.get("tool_call_id")
                .and_then(Value::as_str)
                .is_some_and(|id| ids.contains(&id))
            && attempt_error(m).is_none()
    })?;
    Some(match result.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    })
}

/// How much of the earlier result a repeat's answer quotes.
const EXCERPT_CHARS: usize = 400;

/// The error answering a call of a pure tool that already succeeded with the same arguments;
/// it quotes the start of that earlier `result`, so a model that lost it in a long
/// conversation has the gist without the whole result again.
pub(super) fn answered_before(name: &str, result: &str) -> ToolError {
    let result = result.trim();
    let excerpt: String = result.chars().take(EXCERPT_CHARS).collect();
    let more = if excerpt.len() < result.len() {
        " …"
    } else {
        ""
    };
    ToolError::new(
        REPEATED_CALL,
        format!(
            "not run: `{name}` was called with these same arguments earlier in this \
             conversation and succeeded; its result is above and would be the same. It began: \
             \"{excerpt}{more}\". Use it and take the next step (another tool, other \
             arguments), or finish and answer."
        ),
    )
}

/// The error answering each call of an answer that repeats the previous one.
pub(super) fn repeated_answer() -> ToolError {
    ToolError::new(
        REPEATED_CALL,
        "not run: this answer repeats your previous answer exactly (the same calls with the same \
         arguments), and those calls succeeded: their results are above and would be the same. \
         Use them and take the next step, or finish and answer.",
    )
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
    fn an_answer_repeating_the_previous_successful_one_is_recognised() {
        let ok = |id: &str| json!({"type": "tool", "tool_call_id": id, "content": "results"});
        let calls =
            |id: &str, args: Value| vec![json!({"id": id, "name": "connect", "args": args})];
        let args = json!({"a": "X"});
        let history = vec![
            json!({"type": "human", "content": "build"}),
            ai("1", args.clone()),
            ok("1"),
        ];
        assert!(repeats_previous_answer(&history, &calls("2", args.clone())));
        // Other arguments, another count of calls, a failed previous call, a human message in
        // between: not a repeat.
        assert!(!repeats_previous_answer(
            &history,
            &calls("2", json!({"a": "Y"}))
        ));
        let mut two = calls("2", args.clone());
        two.extend(calls("3", args.clone()));
        assert!(!repeats_previous_answer(&history, &two));
        let failed_before = vec![ai("1", args.clone()), failed("1", "NODE_NOT_FOUND")];
        assert!(!repeats_previous_answer(
            &failed_before,
            &calls("2", args.clone())
        ));
        let mut nudged = history.clone();
        nudged.push(json!({"type": "human", "content": "go on"}));
        assert!(!repeats_previous_answer(&nudged, &calls("2", args.clone())));
        assert!(!repeats_previous_answer(&[], &calls("2", args.clone())));
        // The shape recorded from a small model: the search ran, its copy was refused, and the
        // third copy is still a repeat of the one that ran.
        let mut alternating = history.clone();
        alternating.push(ai("2", args.clone()));
        alternating.push(
            json!({"type": "tool", "tool_call_id": "2", "status": "error",
            "content": {"error": {"code": REPEATED_CALL, "message": "not run"}}}),
        );
        assert!(repeats_previous_answer(
            &alternating,
            &calls("3", args.clone())
        ));
        // A refused copy with nothing that ran before it is not.
        let refused_only = alternating[2..].to_vec();
        assert!(!repeats_previous_answer(&refused_only, &calls("3", args)));
    }

    #[test]
    fn a_call_that_succeeded_anywhere_before_is_recognised_by_name_and_arguments() {
        let ok = |id: &str| json!({"type": "tool", "tool_call_id": id, "content": "results"});
        let args = json!({"a": "X"});
        let history = vec![
            json!({"type": "human", "content": "build"}),
            ai("1", args.clone()),
            ok("1"),
            ai("2", json!({"a": "Y"})),
            failed("2", "NODE_NOT_FOUND"),
            json!({"type": "human", "content": "go on"}),
        ];
        // Other calls and messages in between do not matter.
        assert_eq!(
            earlier_success(&history, "connect", &args).as_deref(),
            Some("results")
        );
        // Another tool, other arguments, a call that failed: not answered before.
        assert_eq!(earlier_success(&history, "search", &args), None);
        assert_eq!(
            earlier_success(&history, "connect", &json!({"a": "Z"})),
            None
        );
        assert_eq!(
            earlier_success(&history, "connect", &json!({"a": "Y"})),
            None
        );
        // A call with no tool message yet (cut history) does not count.
        assert_eq!(earlier_success(&history[..2], "connect", &args), None);
        // The answer quotes the start of the earlier result.
        let long = "Found 3 nodes: ".to_string() + &"x".repeat(1000);
        let e = answered_before("connect", &long);
        assert!(e.message.contains("`connect`"), "{e}");
        assert!(e.message.contains("It began: \"Found 3 nodes: xxx"), "{e}");
        assert!(e.message.contains(" …\""), "{e}");
        assert!(e.message.len() < 800, "{e}");
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
