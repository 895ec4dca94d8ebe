//! Expressions and templates (E0205, E0230–E0234).

use super::a;
use crate::ast::{Expr, ExprKind, Span};
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

/// `l == r` or `l != r` (`equal`: which) with sides of types that are never equal.
pub fn never_equal(span: Span, equal: bool, l: (&Expr, &Ty), r: (&Expr, &Ty)) -> Diagnostic {
    let (op, always) = if equal {
        ("==", "false")
    } else {
        ("!=", "true")
    };
    Diagnostic::new(
        codes::NEVER_EQUAL,
        span,
        format!(
            "{} never equals {}: this `{op}` is always {always}",
            a(l.1),
            a(r.1)
        ),
    )
    .label(format!("always {always}"))
    .help(equality_hint(op, l, r))
}

/// How to write the comparison that was meant.
fn equality_hint(op: &str, l: (&Expr, &Ty), r: (&Expr, &Ty)) -> String {
    let text = crate::fmt::format_expr;
    for ((other, ot), (lit, lt)) in [(l, r), (r, l)] {
        let side = text(other);
        let family = |t: &Ty| match t.base() {
            Ty::Int | Ty::Float => "number",
            Ty::Bool => "bool",
            Ty::String => "string",
            Ty::List(_) | Ty::Messages => "list",
            _ => "",
        };
        match (family(ot), &lit.kind) {
            ("number", ExprKind::Str { lit: s }) if s.value.trim().parse::<f64>().is_ok() => {
                return format!("compare with the number: `{side} {op} {}`", s.value.trim())
            }
            ("string", ExprKind::Int { .. } | ExprKind::Float { .. }) => {
                return format!("compare with the string: `{side} {op} \"{}\"`", text(lit))
            }
            ("bool", ExprKind::Str { lit: s }) if matches!(s.value.as_str(), "true" | "false") => {
                return format!("compare with the bool: `{side} {op} {}`", s.value)
            }
            ("bool", ExprKind::Int { value: v @ (0 | 1) }) => {
                return format!("compare with the bool: `{side} {op} {}`", *v == 1)
            }
            ("list", _) if !matches!(family(lt), "list" | "") => {
                let not = if op == "!=" { "not " } else { "" };
                return format!(
                    "to ask whether the list holds it: `{not}contains({side}, {})`",
                    text(lit)
                );
            }
            _ => {}
        }
    }
    let (lf, rf) = (l.1.base(), r.1.base());
    if matches!(
        (lf, rf),
        (Ty::String, Ty::Int | Ty::Float) | (Ty::Int | Ty::Float, Ty::String)
    ) {
        return "convert one side: `str(…)` gives a string, `int(…)` a number".into();
    }
    "compare values of the same type (`json` values compare with anything)".into()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn help(src: &str, l: Ty, r: Ty) -> String {
        let Ok(e) = crate::parse_expr(src) else {
            panic!("{src} does not parse")
        };
        let ExprKind::Binary { op, lhs, rhs } = &e.kind else {
            panic!("{src} is not a comparison")
        };
        let d = never_equal(e.span, op.symbol() == "==", (lhs, &l), (rhs, &r));
        d.help.unwrap_or_default()
    }

    #[test]
    fn the_hint_writes_the_comparison_that_was_meant() {
        for (src, l, r, want) in [
            (
                "status == 200",
                Ty::String,
                Ty::Int,
                "compare with the string: `status == \"200\"`",
            ),
            (
                "\"2.5\" != ratio",
                Ty::String,
                Ty::Float,
                "compare with the number: `ratio != 2.5`",
            ),
            (
                "done == \"true\"",
                Ty::Bool,
                Ty::String,
                "compare with the bool: `done == true`",
            ),
            (
                "done != 0",
                Ty::Bool,
                Ty::Int,
                "compare with the bool: `done != false`",
            ),
            (
                "tags == name",
                Ty::List(Box::new(Ty::String)),
                Ty::String,
                "to ask whether the list holds it: `contains(tags, name)`",
            ),
            (
                "count == name",
                Ty::Int,
                Ty::String,
                "convert one side: `str(…)` gives a string, `int(…)` a number",
            ),
            (
                "meta == tags",
                Ty::Map(Box::new(Ty::String)),
                Ty::List(Box::new(Ty::String)),
                "compare values of the same type (`json` values compare with anything)",
            ),
        ] {
            assert_eq!(help(src, l, r), want, "{src}");
        }
    }
}
