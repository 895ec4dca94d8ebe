//! The QuickJS sandbox of `js` nodes: one fresh runtime per call, with no module loader and no
//! host functions (no file system, network, environment or process), a memory limit, and an
//! interrupt handler that stops the script at its deadline or when the caller gives up.
//!
//! The code is a function body. It is wrapped so that its first line stays the script's first
//! line (error positions need no shifting except the first line's columns), and so that its own
//! declarations may reuse the names given to it:
//!
//! ```text
//! (function (state, a, b) { return (() => {<code>
//! })(); })
//! ```

use rquickjs::context::EvalOptions;
use rquickjs::function::Rest;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime, Value};
use serde_json::{Map, Value as Json};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The script's file name in QuickJS positions (never shown).
const SCRIPT: &str = "agentgraph-js-node";
/// The stack QuickJS may use: deep recursion fails with a RangeError long before the thread's.
const MAX_STACK: usize = 512 * 1024;

/// Why a call did not return an update.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsError {
    /// The call ran past its time limit.
    #[error("ran longer than its time limit of {0:?}")]
    Timeout(Duration),
    /// The call needed more memory than its limit.
    #[error("needed more than its memory limit of {0} bytes")]
    Memory(usize),
    /// The run was cancelled (or the node's task given up) while the call ran.
    #[error("cancelled")]
    Cancelled,
    /// The code threw (or did not parse); `line` is the line inside the code, when known.
    #[error("{message}")]
    Thrown {
        /// `Name: message` of an error, or the thrown value.
        message: String,
        /// The 1-based line inside the code.
        line: Option<usize>,
        /// The 1-based column on that line.
        column: Option<usize>,
    },
    /// The code returned something that is not an object of channel writes.
    #[error("{0}")]
    BadReturn(String),
    /// QuickJS itself failed (the runtime could not be created).
    #[error("the JavaScript engine failed: {0}")]
    Engine(String),
}

/// What one call may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock time of the call.
    pub time: Duration,
    /// Bytes QuickJS may allocate.
    pub memory: usize,
}

/// Why the interrupt handler stopped the script.
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const STOPPED: u8 = 2;

/// Names that cannot be parameters of a strict function, that would hide a built-in value, or
/// that the code gets already (`state`).
const RESERVED: &str = "\
    arguments await break case catch class const continue debugger default delete do \
    else enum eval export extends false finally for function if implements import in \
    instanceof interface let new null package private protected public return state \
    static super switch this throw true try typeof var void while with yield undefined \
    NaN Infinity";

/// Whether `name` can be given to the code as a parameter.
pub fn usable_name(name: &str) -> bool {
    let mut chars = name.chars();
    let head = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$');
    head && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !RESERVED.split_whitespace().any(|r| r == name)
}

/// What comes before the code on the script's first line.
fn prefix(names: &[&str]) -> String {
    let mut params = String::from("state");
    for n in names {
        params.push_str(", ");
        params.push_str(n);
    }
    format!("(function ({params}) {{ return (() => {{")
}

/// The script for `code` with parameters `state` and `names`; its first line is the code's.
fn script(code: &str, names: &[&str]) -> String {
    format!("{}{code}\n}})(); }})", prefix(names))
}

/// A fresh runtime with the memory limit and an interrupt handler for `deadline` and `stop`.
fn runtime(
    limits: Limits,
    stop: Arc<dyn Fn() -> bool + Send + Sync>,
) -> Result<(Runtime, Context, Arc<AtomicU8>), JsError> {
    let rt = Runtime::new().map_err(|e| JsError::Engine(e.to_string()))?;
    rt.set_max_stack_size(MAX_STACK);
    let why = Arc::new(AtomicU8::new(RUNNING));
    let flag = why.clone();
    let deadline = Instant::now() + limits.time;
    rt.set_interrupt_handler(Some(Box::new(move || {
        let reason = if stop() {
            STOPPED
        } else if Instant::now() >= deadline {
            TIMED_OUT
        } else {
            return false;
        };
        flag.store(reason, Ordering::SeqCst);
        true
    })));
    let cx = Context::full(&rt).map_err(|e| JsError::Engine(e.to_string()))?;
    // Set after the context's built-ins are in place, so the limit is the code's to use.
    rt.set_memory_limit(limits.memory);
    Ok((rt, cx, why))
}

/// Runs `code` as a function body with `state` (an object) and `names` (each given by name)
/// in scope; returns the object it returned, `None` for `undefined` or `null`.
pub fn run(
    code: &str,
    state: &Json,
    names: &[(String, Json)],
    limits: Limits,
    stop: Arc<dyn Fn() -> bool + Send + Sync>,
) -> Result<Option<Map<String, Json>>, JsError> {
    let (_rt, cx, why) = runtime(limits, stop)?;
    let params: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    let src = script(code, &params);
    let shift = prefix(&params).chars().count();
    let out = cx.with(|ctx| -> Result<Option<Map<String, Json>>, JsError> {
        let thrown = |e: CaughtError<'_>| thrown(e, shift);
        let f: Function = ctx
            .eval_with_options(src, options())
            .catch(&ctx)
            .map_err(|e| unclosed(thrown(e), code))?;
        let mut args = vec![to_js(&ctx, state).catch(&ctx).map_err(thrown)?];
        for (_, v) in names {
            args.push(to_js(&ctx, v).catch(&ctx).map_err(thrown)?);
        }
        let mut result: Value = f.call((Rest(args),)).catch(&ctx).map_err(thrown)?;
        if let Some(p) = result.as_promise().cloned() {
            result = match p.finish() {
                Err(rquickjs::Error::WouldBlock) => {
                    return Err(JsError::BadReturn(
                        "returned a promise that never settles".into(),
                    ))
                }
                settled => settled.catch(&ctx).map_err(thrown)?,
            };
        }
        returned(&ctx, result)
    });
    match why.load(Ordering::SeqCst) {
        TIMED_OUT => Err(JsError::Timeout(limits.time)),
        STOPPED => Err(JsError::Cancelled),
        _ => out.map_err(|e| match e {
            JsError::Thrown { message, .. } | JsError::BadReturn(message)
                if message.ends_with("out of memory") =>
            {
                JsError::Memory(limits.memory)
            }
            other => other,
        }),
    }
}

/// Parses `code` (without running it): the syntax error, if any, with its line and column in
/// the code.
pub fn syntax_error(code: &str) -> Option<JsError> {
    let limits = Limits {
        time: Duration::from_secs(2),
        memory: 64 * 1024 * 1024,
    };
    let (_rt, cx, _) = match runtime(limits, Arc::new(|| false)) {
        Ok(r) => r,
        Err(e) => return Some(e),
    };
    let shift = prefix(&[]).chars().count();
    cx.with(|ctx| {
        let parsed: rquickjs::Result<Function> =
            ctx.eval_with_options(script(code, &[]), options());
        parsed
            .catch(&ctx)
            .err()
            .map(|e| unclosed(thrown(e, shift), code))
    })
}

/// A syntax error found after the code's last line (in the wrapper's closing brackets) says
/// that the code left something open.
fn unclosed(e: JsError, code: &str) -> JsError {
    match e {
        JsError::Thrown {
            line: Some(l),
            column,
            ..
        } if l > code.lines().count().max(1) => JsError::Thrown {
            message: "SyntaxError: the code ends inside a block, a call or a literal (a `}`, `)` \
                      or `]` is missing)"
                .into(),
            line: Some(l),
            column,
        },
        other => other,
    }
}

fn options() -> EvalOptions {
    let mut o = EvalOptions::default();
    o.strict = true;
    o.filename = Some(SCRIPT.to_string());
    o
}

/// A JSON value as a JavaScript value.
fn to_js<'js>(ctx: &Ctx<'js>, v: &Json) -> rquickjs::Result<Value<'js>> {
    ctx.json_parse(v.to_string())
}

/// The object of writes a call returned.
fn returned<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> Result<Option<Map<String, Json>>, JsError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let what = if v.is_array() {
        "an array"
    } else if v.is_function() {
        "a function"
    } else if v.is_object() {
        ""
    } else if v.is_string() {
        "a string"
    } else if v.is_number() {
        "a number"
    } else if v.is_bool() {
        "a boolean"
    } else {
        "a value that is not an object"
    };
    if !what.is_empty() {
        let shown = ctx
            .json_stringify(v)
            .ok()
            .flatten()
            .and_then(|s| s.to_string().ok())
            .map(|s| format!(" ({})", clip(&s)))
            .unwrap_or_default();
        return Err(JsError::BadReturn(format!(
            "returned {what}{shown}; return an object of channel writes such as `{{ total: 3 }}`, or nothing"
        )));
    }
    let text = ctx
        .json_stringify(v)
        .catch(ctx)
        .map_err(|e| JsError::BadReturn(format!("its result is not JSON: {}", describe(&e))))?
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| "null".into());
    match serde_json::from_str(&text) {
        Ok(Json::Object(m)) => Ok(Some(m)),
        Ok(_) | Err(_) => Err(JsError::BadReturn(format!(
            "returned {}, which is not an object of channel writes",
            clip(&text)
        ))),
    }
}

/// A long value cut for a message.
fn clip(s: &str) -> String {
    const MAX: usize = 120;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// `Name: message`, or the thrown value.
fn describe(e: &CaughtError<'_>) -> String {
    match e {
        CaughtError::Exception(x) => {
            let name: Option<String> = x.as_object().get("name").ok();
            let message = x.message().unwrap_or_default();
            match name {
                Some(n) if !n.is_empty() && !message.is_empty() => format!("{n}: {message}"),
                Some(n) if !n.is_empty() => n,
                _ => message,
            }
        }
        CaughtError::Value(v) => {
            let text = v
                .ctx()
                .json_stringify(v.clone())
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| format!("a {}", v.type_name()));
            format!("threw {}", clip(&text))
        }
        CaughtError::Error(e) => e.to_string(),
    }
}

/// A caught error with its position in the code (`shift`: the wrapper's columns on line 1).
fn thrown(e: CaughtError<'_>, shift: usize) -> JsError {
    let (line, column) = match &e {
        CaughtError::Exception(x) => position(&x.stack().unwrap_or_default()),
        _ => (None, None),
    };
    let column = match (line, column) {
        (Some(1), Some(c)) => Some(c.saturating_sub(shift).max(1)),
        (_, c) => c,
    };
    let message = match &e {
        CaughtError::Error(rquickjs::Error::Allocation) => "out of memory".to_string(),
        _ => describe(&e),
    };
    JsError::Thrown {
        message,
        line,
        column,
    }
}

/// The line and column of the first frame of `stack` inside the code.
fn position(stack: &str) -> (Option<usize>, Option<usize>) {
    let marker = format!("{SCRIPT}:");
    let Some(at) = stack.find(&marker) else {
        return (None, None);
    };
    let mut parts = stack[at + marker.len()..].split(|c: char| !c.is_ascii_digit());
    let line = parts.next().and_then(|l| l.parse().ok());
    let column = parts.next().and_then(|c| c.parse().ok());
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            time: Duration::from_secs(2),
            memory: 16 * 1024 * 1024,
        }
    }

    fn go(code: &str) -> Result<Option<Map<String, Json>>, JsError> {
        run(
            code,
            &serde_json::json!({}),
            &[],
            limits(),
            Arc::new(|| false),
        )
    }

    #[test]
    fn positions_come_from_the_first_frame() {
        assert_eq!(
            position(
                "    at <anonymous> (agentgraph-js-node:3:11)\n    at f (agentgraph-js-node:9:1)"
            ),
            (Some(3), Some(11))
        );
        assert_eq!(
            position("    at agentgraph-js-node:2:12\n"),
            (Some(2), Some(12))
        );
        assert_eq!(position(""), (None, None));
    }

    #[test]
    fn names_that_cannot_be_parameters_are_left_out() {
        assert!(usable_name("total"));
        assert!(usable_name("_x1"));
        assert!(!usable_name("state"));
        assert!(!usable_name("default"));
        assert!(!usable_name("any key"));
        assert!(!usable_name("1x"));
        assert!(!usable_name(""));
    }

    #[test]
    fn a_syntax_error_on_the_first_line_has_the_code_column() {
        // `return +;`: the `;` is the code's 9th column.
        let Some(JsError::Thrown { line, column, .. }) = syntax_error("return +;") else {
            panic!("a syntax error")
        };
        assert_eq!((line, column), (Some(1), Some(9)));
    }

    #[test]
    fn declarations_may_reuse_given_names() {
        let out = run(
            "let total = 1;\nreturn { total: total + n }",
            &serde_json::json!({}),
            &[
                ("total".into(), serde_json::json!(5)),
                ("n".into(), serde_json::json!(2)),
            ],
            limits(),
            Arc::new(|| false),
        );
        assert_eq!(
            out,
            Ok(serde_json::json!({"total": 3}).as_object().cloned())
        );
    }

    #[test]
    fn a_promise_result_is_awaited() {
        let out = go("return (async () => ({ n: 4 }))()");
        assert_eq!(out, Ok(serde_json::json!({"n": 4}).as_object().cloned()));
    }

    #[test]
    fn a_promise_that_never_settles_is_a_bad_return() {
        assert_eq!(
            go("return new Promise(() => {})"),
            Err(JsError::BadReturn(
                "returned a promise that never settles".into()
            ))
        );
        let Err(JsError::Thrown { message, .. }) = go("return Promise.reject(new TypeError('no'))")
        else {
            panic!("a rejection is thrown")
        };
        assert_eq!(message, "TypeError: no");
    }

    #[test]
    fn a_stop_request_interrupts() {
        let out = run(
            "while (true) {}",
            &serde_json::json!({}),
            &[],
            limits(),
            Arc::new(|| true),
        );
        assert_eq!(out, Err(JsError::Cancelled));
    }
}
