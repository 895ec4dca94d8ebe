//! Syntax errors (E0001–E0004).

use crate::ast::Span;
use crate::diagnostic::{codes, Diagnostic};

/// `parse_expr` on text with no expression at all.
pub fn empty_expression(span: Span) -> Diagnostic {
    Diagnostic::new(codes::SYNTAX, span, "empty expression")
}

/// `parse_expr` on text that holds no expression rule.
pub fn expected_expression(span: Span) -> Diagnostic {
    Diagnostic::new(codes::SYNTAX, span, "expected an expression")
}

/// A graph item written after the graph's closing `}`.
pub fn outside_graph(span: Span) -> Diagnostic {
    Diagnostic::new(codes::SYNTAX, span, "this item is outside of any graph")
        .label("outside the graph")
        .help("move it inside `graph name { … }`, before the graph's closing `}`")
}

/// The parser expected `what` and found `found` (both already phrased for people).
pub fn expected(span: Span, what: &str, found: &str, help: String) -> Diagnostic {
    Diagnostic::new(
        codes::SYNTAX,
        span,
        format!("expected {what}, found {found}"),
    )
    .label(format!("expected {what}"))
    .help(help)
}

/// A `graph name {` whose braces never balance; `suspect` is the block that likely lacks its `}`.
pub fn unclosed_graph(open: Span, name: &str, suspect: Option<Span>) -> Diagnostic {
    let d = Diagnostic::new(codes::SYNTAX, open, format!("graph `{name}` is never closed"))
        .label("this `{` has no matching `}`")
        .help("add the missing `}` at the end of the graph, or at the end of a block inside it (state, node, set, route …)");
    match suspect {
        Some(s) => d.with_label(s, "this block's `}` may be the one missing"),
        None => d,
    }
}

/// A plain string not closed on its line.
pub fn unclosed_string(span: Span) -> Diagnostic {
    Diagnostic::new(codes::SYNTAX, span, "this string is not closed")
        .label("no closing `\"` on this line")
        .help("end it with `\"` on the same line; text over several lines goes in `\"\"\"…\"\"\"`")
}

/// An operator with nothing on its right.
pub fn missing_operand(span: Span, op: &str) -> Diagnostic {
    Diagnostic::new(
        codes::SYNTAX,
        span,
        format!("expected an expression after `{op}`"),
    )
    .label("nothing on this operator's right")
    .help(format!(
        "finish the expression (e.g. `count {op} 1`) or remove the `{op}`"
    ))
}

/// The formatter got no tree at all.
pub fn unreadable_file(span: Span) -> Diagnostic {
    Diagnostic::new(codes::SYNTAX, span, "the file could not be read")
}

/// A skipped line that parses on its own (a fallback of error recovery).
pub fn skipped_line(span: Span, token: &str) -> Diagnostic {
    Diagnostic::new(codes::SKIPPED_LINE, span, format!("unexpected `{token}`"))
        .label("not understood here")
}

/// An expression nested `depth` levels deep, over `max`.
pub fn too_deep(span: Span, depth: usize, max: usize) -> Diagnostic {
    Diagnostic::new(
        codes::TOO_DEEP,
        span,
        format!("this expression is nested {depth} levels deep; the limit is {max}"),
    )
    .label("too deep")
    .help("split it: compute parts in separate `set` entries or nodes")
}

/// Brackets (or a generic type's `<`) nested deeper than `max`, found before parsing.
pub fn too_deep_brackets(span: Span, max: usize) -> Diagnostic {
    Diagnostic::new(
        codes::TOO_DEEP,
        span,
        format!("brackets are nested more than {max} levels deep here"),
    )
    .label("too deep")
    .help("split it: compute parts in separate `set` entries or nodes")
}

/// An integer literal above the largest `int`.
pub fn int_too_large(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_LITERAL,
        span,
        "this integer is larger than the largest `int` (9223372036854775807)",
    )
    .label("too large")
    .help("write a smaller number, or a float such as `1e19`")
}

/// A duration literal whose milliseconds do not fit 64 bits.
pub fn duration_too_large(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_LITERAL,
        span,
        "this duration is longer than the longest one (18446744073709551615ms)",
    )
    .label("too long")
    .help("write a shorter duration")
}

/// A `\uXXXX` escape naming no character (a lone surrogate, `\uD800`–`\uDFFF`).
pub fn bad_escape(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::BAD_LITERAL,
        span,
        "this escape names no character (a lone surrogate)",
    )
    .label("not a character")
    .help("write the character itself, or a `\\u` escape outside `D800`–`DFFF`")
}
