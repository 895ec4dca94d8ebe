//! Edges and routes (E0220–E0224, W0304).

use crate::ast::Span;
use crate::diagnostic::{codes, suggestion, Diagnostic};

/// START as the target of an edge.
pub fn start_as_target(span: Span) -> Diagnostic {
    Diagnostic::new(codes::START_END_MISPLACED, span, "START cannot be a target")
        .label("edges lead out of START, never into it")
        .help("to loop back to the first node, name that node")
}

/// END as the source of an edge.
pub fn end_as_source(span: Span) -> Diagnostic {
    Diagnostic::new(codes::START_END_MISPLACED, span, "END cannot be a source")
        .label("nothing runs after END")
        .help("edges end at END: `last -> END`")
}

/// END among the sources of a join.
pub fn end_waited_on(span: Span) -> Diagnostic {
    Diagnostic::new(codes::START_END_MISPLACED, span, "END cannot be waited on")
        .label("not a source")
        .help("wait on the nodes that run before END instead")
}

/// A hop after END in a chain.
pub fn after_end(span: Span) -> Diagnostic {
    Diagnostic::new(codes::START_END_MISPLACED, span, "nothing can follow END")
        .label("END ends the chain")
        .help("end the chain at END, and start a new edge for what runs next")
}

/// A node name that is not defined; `defined` are the nodes that are.
pub fn unknown_node(span: Span, name: &str, defined: &[&str]) -> Diagnostic {
    let help = if name.eq_ignore_ascii_case("end") || name.eq_ignore_ascii_case("start") {
        format!("write `{}` in capitals", name.to_uppercase())
    } else {
        suggestion("nodes", name, defined.iter().copied())
    };
    Diagnostic::new(
        codes::UNKNOWN_NODE,
        span,
        format!("node `{name}` is not defined"),
    )
    .label("unknown node")
    .help(help)
}

/// A route without `else`.
pub fn route_without_else(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::ROUTE_WITHOUT_ELSE,
        span,
        "this route has no `else` arm",
    )
    .label("what happens when no condition holds?")
    .help("add `else => END` (or another node) as the last arm")
}

/// A hop after a route.
pub fn route_not_last(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::NOT_LAST_HOP,
        span,
        "a route must be the last hop of an edge",
    )
    .label("something follows this route")
    .help("route targets go inside the route; start a new edge from them")
}

/// A hop after a `send` to `node`.
pub fn send_not_last(span: Span, node: &str) -> Diagnostic {
    Diagnostic::new(
        codes::NOT_LAST_HOP,
        span,
        "a `send` must be the last hop of an edge",
    )
    .label("something follows this send")
    .help(format!(
        "add the edge from the send's node separately: `{node} -> …`"
    ))
}

/// A route arm after `else`.
pub fn arm_after_else(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::ARM_AFTER_ELSE,
        span,
        "this arm comes after `else` and never runs",
    )
    .label("unreachable arm")
    .help("move the `else` arm to the end of the route, or remove this arm")
}
