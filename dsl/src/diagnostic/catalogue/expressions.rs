//! Expressions and templates (E0205, E0230–E0233).

use super::a;
use crate::ast::Span;
use crate::diagnostic::{codes, suggestion, Diagnostic};
use crate::types::Ty;

/// A channel that is not declared; `declared` are the channels that are.
pub fn unknown_channel(span: Span, name: &str, declared: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::UNKNOWN_CHANNEL,
        span,
        format!("channel `{name}` is not declared"),
    )
    .label("unknown channel")
    .help(suggestion("channels", name, declared.iter().copied()))
}

/// A name that is no channel or variable; `candidates` are the names in scope.
pub fn unknown_name(span: Span, name: &str, candidates: &[&str]) -> Diagnostic {
    let help = if matches!(name, "True" | "False" | "None") {
        "literals are lower-case: `true`, `false`, `null`".into()
    } else {
        suggestion("names", name, candidates.iter().copied())
    };
    Diagnostic::new(
        codes::UNKNOWN_NAME,
        span,
        format!("`{name}` is not a channel or variable"),
    )
    .label("unknown name")
    .help(help)
}

/// A call of `func` (which takes `min` to `max` arguments, `doc` says what it does) with `got`.
pub fn wrong_arity(
    span: Span,
    func: &str,
    min: usize,
    max: usize,
    got: usize,
    doc: &str,
) -> Diagnostic {
    let want = if min == max {
        format!("{min}")
    } else {
        format!("{min} to {max}")
    };
    Diagnostic::new(
        codes::BAD_CALL,
        span,
        format!("`{func}` takes {want} argument(s), got {got}"),
    )
    .label("wrong number of arguments")
    .help(format!("{func}: {doc}"))
}

/// A call of an unknown function; `known` are the functions there are.
pub fn unknown_function(span: Span, func: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(codes::BAD_CALL, span, format!("unknown function `{func}`"))
        .label("not a function")
        .help(suggestion("functions", func, known.iter().copied()))
}

/// A route condition that is not a bool.
pub fn condition_not_bool(span: Span, ty: &Ty) -> Diagnostic {
    Diagnostic::new(
        codes::TYPE_MISMATCH,
        span,
        format!("a condition must be a bool, this is {}", a(ty)),
    )
    .label(format!("{ty}"))
    .help("compare it (`len(items) > 0`, `status == \"done\"`) to get a bool")
}

/// `set { channel: value }` where the value's type `got` does not fit the channel's `want`.
pub fn set_type_mismatch(
    span: Span,
    channel: &str,
    want: &Ty,
    got: &Ty,
    declared: Span,
) -> Diagnostic {
    Diagnostic::new(
        codes::TYPE_MISMATCH,
        span,
        format!("`{channel}` is {}, this is {}", a(want), a(got)),
    )
    .label(format!("{got}"))
    .with_label(declared, "declared here")
    .help(format!(
        "write {} value, or change the type of `{channel}`",
        a(want)
    ))
}

/// `send … for var in x` where `x` is of type `ty`, not a list.
pub fn send_over_non_list(span: Span, var: &str, ty: &Ty) -> Diagnostic {
    Diagnostic::new(
        codes::TYPE_MISMATCH,
        span,
        format!("`send … for {var} in` needs a list, this is {}", a(ty)),
    )
    .label("not a list")
    .help("fan out over a list: a `list<…>` channel, a list literal or `range(n)`")
}

fn type_error(span: Span, message: String, help: &str) -> Diagnostic {
    Diagnostic::new(codes::TYPE_MISMATCH, span, message)
        .label("type error")
        .help(help)
}

/// `-x` where `x` is not a number.
pub fn cannot_negate(span: Span, ty: &Ty) -> Diagnostic {
    type_error(
        span,
        format!("`-` needs a number, this is {}", a(ty)),
        "only int and float values can be negated",
    )
}

/// `l op r` comparing values that do not compare.
pub fn cannot_compare(span: Span, l: &Ty, r: &Ty, op: &str) -> Diagnostic {
    type_error(
        span,
        format!("cannot compare {} with {} using `{op}`", a(l), a(r)),
        "compare numbers with numbers and strings with strings; convert with `int(…)` or `str(…)`",
    )
}

/// `l + r` for values that do not add.
pub fn cannot_add(span: Span, l: &Ty, r: &Ty) -> Diagnostic {
    let hint = if *l.base() == Ty::String || *r.base() == Ty::String {
        "convert the other side with `str(…)`, or use a template: \"{{ count }} items\""
    } else {
        "`+` adds numbers, joins two strings and concatenates two lists"
    };
    type_error(span, format!("cannot add {} and {}", a(l), a(r)), hint)
}

/// `l op r` arithmetic on values that are not numbers.
pub fn needs_numbers(span: Span, op: &str, l: &Ty, r: &Ty) -> Diagnostic {
    type_error(
        span,
        format!("`{op}` needs numbers, got {} and {}", a(l), a(r)),
        "arithmetic works on int and float values",
    )
}

/// A template that does not parse (`message` says why).
pub fn bad_template(span: Span, message: String) -> Diagnostic {
    Diagnostic::new(codes::BAD_TEMPLATE, span, message)
        .label("bad template")
        .help("templates look like `{{ expr }}` or `{{ expr | filter }}`")
}

/// A template filter nobody registered; `known` are the filters there are.
pub fn unknown_filter(span: Span, filter: &str, known: &[&str]) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_TEMPLATE,
        span,
        format!("unknown filter `{filter}`"),
    )
    .label("in this template")
    .help(suggestion("filters", filter, known.iter().copied()))
}
