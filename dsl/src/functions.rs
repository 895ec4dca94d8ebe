//! The built-in functions of the expression language, their arities and result types.

use crate::eval::{truthy, EvalError};
use crate::types::Ty;
use serde_json::Value;

/// A built-in function: name, accepted argument counts, result type, one-line doc.
pub struct FunctionSpec {
    /// The name.
    pub name: &'static str,
    /// Minimum arguments.
    pub min: usize,
    /// Maximum arguments.
    pub max: usize,
    /// What it returns.
    pub returns: fn(&[Ty]) -> Ty,
    /// What it does.
    pub doc: &'static str,
}

fn t_int(_: &[Ty]) -> Ty {
    Ty::Int
}
fn t_bool(_: &[Ty]) -> Ty {
    Ty::Bool
}
fn t_str(_: &[Ty]) -> Ty {
    Ty::String
}
fn t_any(_: &[Ty]) -> Ty {
    Ty::Any
}
fn t_item(a: &[Ty]) -> Ty {
    match a.first() {
        Some(Ty::List(t)) => (**t).clone(),
        Some(Ty::Messages) => Ty::Message,
        _ => Ty::Any,
    }
}
fn t_list_str(_: &[Ty]) -> Ty {
    Ty::List(Box::new(Ty::String))
}
fn t_list_any(_: &[Ty]) -> Ty {
    Ty::List(Box::new(Ty::Any))
}
fn t_list_int(_: &[Ty]) -> Ty {
    Ty::List(Box::new(Ty::Int))
}
fn t_sum(a: &[Ty]) -> Ty {
    match a.first().map(Ty::base) {
        Some(Ty::List(t)) if **t == Ty::Int => Ty::Int,
        Some(Ty::List(t)) if **t == Ty::Float => Ty::Float,
        _ => Ty::Any,
    }
}
fn t_message(_: &[Ty]) -> Ty {
    Ty::Message
}
fn t_first(a: &[Ty]) -> Ty {
    a.first().cloned().unwrap_or(Ty::Any)
}
fn t_second(a: &[Ty]) -> Ty {
    match (a.get(1), a.get(2)) {
        (Some(x), Some(y)) if x == y => x.clone(),
        _ => Ty::Any,
    }
}

/// Every built-in function.
pub const FUNCTIONS: &[FunctionSpec] = &[
    FunctionSpec {
        name: "len",
        min: 1,
        max: 1,
        returns: t_int,
        doc: "length of a list, object or string",
    },
    FunctionSpec {
        name: "last",
        min: 1,
        max: 1,
        returns: t_item,
        doc: "last item of a list (null if empty)",
    },
    FunctionSpec {
        name: "first",
        min: 1,
        max: 1,
        returns: t_item,
        doc: "first item of a list (null if empty)",
    },
    FunctionSpec {
        name: "contains",
        min: 2,
        max: 2,
        returns: t_bool,
        doc: "whether a list has an item, an object a key, a string a substring",
    },
    FunctionSpec {
        name: "lower",
        min: 1,
        max: 1,
        returns: t_str,
        doc: "lower-case string",
    },
    FunctionSpec {
        name: "upper",
        min: 1,
        max: 1,
        returns: t_str,
        doc: "upper-case string",
    },
    FunctionSpec {
        name: "keys",
        min: 1,
        max: 1,
        returns: t_list_str,
        doc: "keys of an object",
    },
    FunctionSpec {
        name: "values",
        min: 1,
        max: 1,
        returns: t_list_any,
        doc: "values of an object",
    },
    FunctionSpec {
        name: "range",
        min: 1,
        max: 2,
        returns: t_list_int,
        doc: "range(n) or range(a, b): integers",
    },
    FunctionSpec {
        name: "last_human",
        min: 1,
        max: 1,
        returns: t_message,
        doc: "the last human message of a message list",
    },
    FunctionSpec {
        name: "has_tool_calls",
        min: 1,
        max: 1,
        returns: t_bool,
        doc: "whether a message has tool calls",
    },
    FunctionSpec {
        name: "tool_called",
        min: 2,
        max: 2,
        returns: t_bool,
        doc: "whether a message list holds a result of the named tool (a tool message)",
    },
    FunctionSpec {
        name: "env",
        min: 1,
        max: 2,
        returns: t_str,
        doc: "an environment variable (with a default)",
    },
    FunctionSpec {
        name: "str",
        min: 1,
        max: 1,
        returns: t_str,
        doc: "a value as a string",
    },
    FunctionSpec {
        name: "int",
        min: 1,
        max: 1,
        returns: t_int,
        doc: "a number or numeric string as an integer",
    },
    FunctionSpec {
        name: "join",
        min: 2,
        max: 2,
        returns: t_str,
        doc: "join(list, separator)",
    },
    FunctionSpec {
        name: "file",
        min: 1,
        max: 1,
        returns: t_str,
        doc: "the text of a file, relative to the graph file (resolved when the graph is loaded)",
    },
    FunctionSpec {
        name: "sum",
        min: 1,
        max: 1,
        returns: t_sum,
        doc: "sum of a list of numbers",
    },
    FunctionSpec {
        name: "coalesce",
        min: 1,
        max: 8,
        returns: t_any,
        doc: "the first argument that is not null",
    },
    FunctionSpec {
        name: "last_tool_result",
        min: 2,
        max: 2,
        returns: t_any,
        doc: "the content of the newest result of a tool in a message list, or null",
    },
    FunctionSpec {
        name: "choose",
        min: 3,
        max: 3,
        returns: t_second,
        doc: "choose(condition, a, b): `a` when the condition is true, else `b`",
    },
    FunctionSpec {
        name: "repeated_tool_error",
        min: 1,
        max: 1,
        returns: t_int,
        doc: "how often the conversation holds the newest batch's failing tool call: same tool, \
              same arguments, same error (0 when the newest batch has no error)",
    },
    FunctionSpec {
        name: "repeated_tool_error_text",
        min: 1,
        max: 1,
        returns: t_str,
        doc: "the tool and error (`tool: message`) of the call repeated_tool_error counts, or \"\"",
    },
    FunctionSpec {
        name: "overwrite",
        min: 1,
        max: 1,
        returns: t_first,
        doc: "written to a channel, replaces its value instead of going through its reducer (`log: overwrite([])` empties an append list)",
    },
];

/// A function by name.
pub fn spec(name: &str) -> Option<&'static FunctionSpec> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

fn bad(name: &str, args: &[Value]) -> EvalError {
    let kinds: Vec<&str> = args
        .iter()
        .map(|a| match a {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "list",
            Value::Object(_) => "object",
        })
        .collect();
    EvalError(format!("{name}() does not accept ({})", kinds.join(", ")))
}

/// Calls a built-in function.
pub fn call(name: &str, args: &[Value]) -> Result<Value, EvalError> {
    let Some(s) = spec(name) else {
        return Err(EvalError(format!("unknown function `{name}`")));
    };
    if args.len() < s.min || args.len() > s.max {
        return Err(EvalError(format!(
            "{name}() takes {}..={} arguments, got {}",
            s.min,
            s.max,
            args.len()
        )));
    }
    if args.is_empty() {
        return Err(bad(name, args));
    }
    match name {
        "len" | "last" | "first" | "contains" | "keys" | "values" | "range" | "join" | "sum"
        | "coalesce" => collections(name, args),
        "choose" => Ok(if truthy(&args[0]) {
            args[1].clone()
        } else {
            args[2].clone()
        }),
        "last_human" | "has_tool_calls" | "tool_called" | "last_tool_result" => {
            conversation(name, args)
        }
        "repeated_tool_error" => match &args[0] {
            Value::Array(ms) => Ok(Value::from(repeated_tool_error(ms).map_or(0, |r| r.0))),
            Value::Null => Ok(Value::from(0)),
            _ => Err(bad(name, args)),
        },
        "repeated_tool_error_text" => match &args[0] {
            Value::Array(ms) => Ok(Value::from(
                repeated_tool_error(ms).map_or(String::new(), |r| r.1),
            )),
            Value::Null => Ok(Value::from("")),
            _ => Err(bad(name, args)),
        },
        _ => conversions(name, args),
    }
}

/// Functions over lists, objects and strings as collections.
fn collections(name: &str, args: &[Value]) -> Result<Value, EvalError> {
    let a0 = &args[0];
    Ok(match name {
        "len" => Value::from(match a0 {
            Value::Array(a) => a.len(),
            Value::Object(o) => o.len(),
            Value::String(s) => s.chars().count(),
            Value::Null => 0,
            _ => return Err(bad(name, args)),
        }),
        "last" | "first" => match a0 {
            Value::Array(a) => (if name == "last" { a.last() } else { a.first() })
                .cloned()
                .unwrap_or(Value::Null),
            Value::Null => Value::Null,
            _ => return Err(bad(name, args)),
        },
        "contains" => Value::Bool(match (a0, &args[1]) {
            (Value::Array(a), x) => a.contains(x),
            (Value::Object(o), Value::String(k)) => o.contains_key(k),
            (Value::String(s), Value::String(sub)) => s.contains(sub.as_str()),
            (Value::Null, _) => false,
            _ => return Err(bad(name, args)),
        }),
        "keys" => match a0 {
            Value::Object(o) => Value::Array(o.keys().cloned().map(Value::String).collect()),
            _ => return Err(bad(name, args)),
        },
        "values" => match a0 {
            Value::Object(o) => Value::Array(o.values().cloned().collect()),
            _ => return Err(bad(name, args)),
        },
        "range" => {
            let (lo, hi) = match (a0.as_i64(), args.get(1).map(Value::as_i64)) {
                (Some(n), None) => (0, n),
                (Some(a), Some(Some(b))) => (a, b),
                _ => return Err(bad(name, args)),
            };
            if hi.saturating_sub(lo) > 100_000 {
                return Err(EvalError("range() is limited to 100000 items".into()));
            }
            Value::Array((lo..hi).map(Value::from).collect())
        }
        "join" => match (a0, &args[1]) {
            (Value::Array(a), Value::String(sep)) => Value::String(
                a.iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(sep),
            ),
            _ => return Err(bad(name, args)),
        },
        "sum" => match a0 {
            Value::Array(items) => {
                if items.iter().all(|v| v.as_i64().is_some()) {
                    Value::from(
                        items
                            .iter()
                            .filter_map(Value::as_i64)
                            .try_fold(0i64, i64::checked_add)
                            .ok_or_else(|| {
                                EvalError(
                                    "integer overflow: the sum is outside the 64-bit integer range"
                                        .into(),
                                )
                            })?,
                    )
                } else if items.iter().all(Value::is_number) {
                    serde_json::Number::from_f64(items.iter().filter_map(Value::as_f64).sum())
                        .map(Value::Number)
                        .unwrap_or(Value::Null)
                } else {
                    return Err(bad(name, args));
                }
            }
            _ => return Err(bad(name, args)),
        },
        "coalesce" => args
            .iter()
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null),
        _ => return Err(EvalError(format!("unknown function `{name}`"))),
    })
}

/// Functions over a conversation (a message list) and its messages.
fn conversation(name: &str, args: &[Value]) -> Result<Value, EvalError> {
    let a0 = &args[0];
    Ok(match name {
        "last_human" => match a0 {
            Value::Array(_) => agentgraph_runtime::messages::last_of_type(a0, "human")
                .cloned()
                .unwrap_or(Value::Null),
            Value::Null => Value::Null,
            _ => return Err(bad(name, args)),
        },
        "has_tool_calls" => Value::Bool(
            a0.get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty()),
        ),
        "tool_called" => {
            let tool = args[1].as_str().ok_or_else(|| bad(name, args))?;
            Value::Bool(match a0 {
                Value::Array(ms) => ms.iter().any(|m| {
                    m.get("type").and_then(Value::as_str) == Some("tool")
                        && m.get("name").and_then(Value::as_str) == Some(tool)
                }),
                Value::Null => false,
                _ => return Err(bad(name, args)),
            })
        }
        "last_tool_result" => {
            let tool = args[1].as_str().ok_or_else(|| bad(name, args))?;
            match a0 {
                Value::Array(ms) => ms
                    .iter()
                    .rev()
                    .find(|m| {
                        m.get("type").and_then(Value::as_str) == Some("tool")
                            && m.get("name").and_then(Value::as_str) == Some(tool)
                    })
                    .and_then(|m| m.get("content").cloned())
                    .unwrap_or(Value::Null),
                Value::Null => Value::Null,
                _ => return Err(bad(name, args)),
            }
        }
        _ => return Err(EvalError(format!("unknown function `{name}`"))),
    })
}

/// For each failing tool message after the last AI message: how many failing tool messages of
/// the conversation have its tool, its call's arguments and its error; the largest count, with
/// that call's `tool: error message`.
/// A failing tool message's error as `{"error": {"code", "message"}}`: a tool executor's
/// `REPEATED_CALL` answer stands for the error it repeats, so a repeat keeps counting as the
/// same failure.
fn error_of(content: &Value) -> Value {
    let parsed = match content {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| content.clone()),
        other => other.clone(),
    };
    let Some(err) = parsed.get("error") else {
        return parsed;
    };
    let err = err.get("repeated").unwrap_or(err);
    serde_json::json!({"error": {"code": err.get("code"), "message": err.get("message")}})
}

fn repeated_tool_error(ms: &[Value]) -> Option<(usize, String)> {
    let field = |m: &Value, k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    // (tool, arguments, error) of a failing tool message.
    let failure = |m: &Value| -> Option<(Value, Value, Value)> {
        if field(m, "type") != "tool" || field(m, "status") != "error" {
            return None;
        }
        let call_id = field(m, "tool_call_id");
        let args = ms
            .iter()
            .filter_map(|a| a.get("tool_calls").and_then(Value::as_array))
            .flatten()
            .find(|c| field(c, "id") == call_id)
            .map(|c| field(c, "args"))
            .unwrap_or(Value::Null);
        Some((field(m, "name"), args, error_of(&field(m, "content"))))
    };
    let newest_batch = ms
        .iter()
        .rposition(|m| field(m, "type") == "ai")
        .map_or(0, |i| i + 1);
    // Answers about the shape of one answer (a duplicate within it, calls past its limit) are
    // not attempts; the same failure twice in one answer counts once.
    let attempt = |f: &(Value, Value, Value)| {
        !matches!(
            f.2.pointer("/error/code").and_then(Value::as_str),
            Some("DUPLICATE_CALL" | "TOO_MANY_CALLS")
        )
    };
    let mut all: Vec<(usize, (Value, Value, Value))> = Vec::new();
    let mut answer = 0;
    for m in ms {
        if field(m, "type") == "ai" {
            answer += 1;
        }
        if let Some(f) = failure(m).filter(attempt) {
            if !all.contains(&(answer, f.clone())) {
                all.push((answer, f));
            }
        }
    }
    let text = |(tool, _, error): &(Value, Value, Value)| {
        let message = error
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        format!("{}: {message}", tool.as_str().unwrap_or("?"))
    };
    ms[newest_batch..]
        .iter()
        .filter_map(failure)
        .filter(attempt)
        .map(|f| (all.iter().filter(|(_, g)| *g == f).count(), text(&f)))
        .max_by_key(|(n, _)| *n)
}

/// Conversions, text case, the environment and channel writes.
fn conversions(name: &str, args: &[Value]) -> Result<Value, EvalError> {
    let a0 = &args[0];
    Ok(match name {
        "lower" | "upper" => match a0 {
            Value::String(s) => Value::String(if name == "lower" {
                s.to_lowercase()
            } else {
                s.to_uppercase()
            }),
            _ => return Err(bad(name, args)),
        },
        "env" => {
            let key = a0.as_str().ok_or_else(|| bad(name, args))?;
            match std::env::var(key) {
                Ok(v) => Value::String(v),
                Err(_) => args.get(1).cloned().unwrap_or(Value::Null),
            }
        }
        "str" => Value::String(match a0 {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        "int" => match a0 {
            Value::Number(n) => Value::from(n.as_f64().unwrap_or(0.0) as i64),
            Value::String(s) => Value::from(s.trim().parse::<i64>().map_err(|_| bad(name, args))?),
            Value::Bool(b) => Value::from(i64::from(*b)),
            _ => return Err(bad(name, args)),
        },
        "overwrite" => agentgraph_runtime::reducer::overwrite(a0.clone()),
        "file" => {
            return Err(EvalError(
                "file() is resolved when the graph is loaded".into(),
            ))
        }
        _ => return Err(EvalError(format!("unknown function `{name}`"))),
    })
}

/// Whether a value counts as true in a route condition.
pub fn is_true(v: &Value) -> bool {
    truthy(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn choose_picks_by_truthiness() {
        let pick = |c: Value| call("choose", &[c, json!("required"), json!("auto")]).unwrap();
        assert_eq!(pick(json!(true)), json!("required"));
        assert_eq!(pick(json!(false)), json!("auto"));
        assert_eq!(pick(json!([])), json!("auto"));
        assert_eq!(pick(json!(null)), json!("auto"));
    }

    fn ai(id: &str, args: Value) -> Value {
        json!({"type": "ai", "content": "", "tool_calls": [{"id": id, "name": "submit", "args": args}]})
    }

    fn failed(id: &str, message: &str) -> Value {
        json!({"type": "tool", "tool_call_id": id, "name": "submit", "status": "error",
               "content": {"error": {"code": "INVALID_ARGUMENTS", "message": message}}})
    }

    fn repeated(ms: &[Value]) -> Value {
        call("repeated_tool_error", &[Value::Array(ms.to_vec())]).unwrap()
    }

    /// One answer's identical failures count once, and its DUPLICATE_CALL / TOO_MANY_CALLS
    /// answers not at all (a recorded answer held four copies of one call).
    #[test]
    fn one_answer_counts_once_and_batch_answers_not_at_all() {
        let bad = json!({"nodes": "x"});
        let call_of = |id: &str| json!({"id": id, "name": "submit", "args": bad.clone()});
        let shape = |id: &str, code: &str| {
            json!({"type": "tool", "tool_call_id": id, "name": "submit", "status": "error",
                   "content": {"error": {"code": code, "message": "not run"}}})
        };
        let ms = vec![
            json!({"type": "ai", "content": "", "tool_calls": [call_of("a"), call_of("b"), call_of("c"), call_of("d")]}),
            failed("a", "nodes must be a list"),
            failed("b", "nodes must be a list"),
            shape("c", "DUPLICATE_CALL"),
            shape("d", "TOO_MANY_CALLS"),
        ];
        assert_eq!(repeated(&ms), json!(1));
        let only_shape = vec![
            json!({"type": "ai", "content": "", "tool_calls": [call_of("a"), call_of("b")]}),
            json!({"type": "tool", "tool_call_id": "a", "name": "submit", "content": "ok"}),
            shape("b", "DUPLICATE_CALL"),
        ];
        assert_eq!(repeated(&only_shape), json!(0));
    }

    /// A tool executor's REPEATED_CALL answer (sent as a JSON string) is the failure it repeats.
    #[test]
    fn a_repeated_call_answer_counts_as_the_error_it_repeats() {
        let bad = json!({"nodes": "x"});
        let mut ms = vec![ai("c1", bad.clone()), failed("c1", "nodes must be a list")];
        ms.push(ai("c2", bad));
        ms.push(
            json!({"type": "tool", "tool_call_id": "c2", "name": "submit", "status": "error",
            "content": json!({"error": {"code": "REPEATED_CALL", "message": "same call again",
                "repeats": 2, "repeated": {"code": "INVALID_ARGUMENTS",
                "message": "nodes must be a list"}}}).to_string()}),
        );
        assert_eq!(repeated(&ms), json!(2));
    }

    #[test]
    fn repeated_tool_error_counts_the_same_failing_call() {
        let bad = json!({"nodes": "x"});
        let mut ms = vec![json!({"type": "human", "content": "go"})];
        assert_eq!(repeated(&ms), json!(0));
        ms.extend([ai("c1", bad.clone()), failed("c1", "nodes must be a list")]);
        assert_eq!(repeated(&ms), json!(1));
        ms.extend([ai("c2", bad.clone()), failed("c2", "nodes must be a list")]);
        assert_eq!(repeated(&ms), json!(2));
        // Other arguments: another failure, counted on its own.
        ms.extend([
            ai("c3", json!({"nodes": []})),
            failed("c3", "nodes must be a list"),
        ]);
        assert_eq!(repeated(&ms), json!(1));
        // The same call again: its earlier two count.
        ms.extend([ai("c4", bad), failed("c4", "nodes must be a list")]);
        assert_eq!(repeated(&ms), json!(3));
        assert_eq!(
            call("repeated_tool_error_text", &[Value::Array(ms.clone())]).unwrap(),
            json!("submit: nodes must be a list")
        );
        // A batch that succeeded: nothing repeated.
        ms.extend([
            ai("c5", json!({"nodes": []})),
            json!({"type": "tool", "tool_call_id": "c5", "name": "submit", "content": "ok"}),
        ]);
        assert_eq!(repeated(&ms), json!(0));
        assert_eq!(
            call("repeated_tool_error", &[Value::Null]).unwrap(),
            json!(0)
        );
    }
}
