//! The shape of a graph: entry point, reachability, shared writes (E0290, W0301–W0303, W0305).

use crate::ast::Span;
use crate::diagnostic::{codes, Diagnostic};
use crate::types::Ty;

/// No edge leaves START.
pub fn no_entry_point(span: Span, graph: &str) -> Diagnostic {
    Diagnostic::new(
        codes::GRAPH_REJECTED,
        span,
        format!("graph `{graph}` has no entry point: no edge leaves START"),
    )
    .label("nothing would run")
    .help("add an edge from START to the first node, e.g. `START -> first_node`")
}

/// The runtime's graph builder refused the graph.
pub fn graph_rejected(span: Span, error: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::new(
        codes::GRAPH_REJECTED,
        span,
        format!("the graph does not compile: {error}"),
    )
    .label("in this graph")
}

/// A node no path from START reaches.
pub fn unreachable(span: Span, node: &str) -> Diagnostic {
    Diagnostic::new(
        codes::UNREACHABLE,
        span,
        format!("node `{node}` is never reached from START"),
    )
    .label("unreachable")
    .help(format!(
        "connect it (`START -> {node}` or `some_node -> {node}`), or remove it"
    ))
}

/// A node without outgoing edges: the run stops after it.
pub fn no_outgoing_edge(span: Span, node: &str) -> Diagnostic {
    Diagnostic::new(
        codes::DEAD_END,
        span,
        format!("node `{node}` has no outgoing edge"),
    )
    .label("the run stops here without reaching END")
    .help(format!("say where it goes, e.g. `{node} -> END`"))
}

/// A node every path from which loops without reaching END.
pub fn no_path_to_end(span: Span, node: &str) -> Diagnostic {
    Diagnostic::new(
        codes::DEAD_END,
        span,
        format!("node `{node}` has no path to END"),
    )
    .label("runs can never finish from here")
    .help(format!(
        "add an edge or a route arm that reaches END, e.g. `{node} -> END`"
    ))
}

/// Nodes `first` and `second` can run in one step and both write replace channel `channel`.
pub fn shared_write(
    first: (&str, Span),
    second: (&str, Span),
    channel: &str,
    channel_span: Span,
) -> Diagnostic {
    Diagnostic::new(
        codes::SHARED_WRITE,
        second.1,
        format!(
            "`{}` and `{}` can run in the same step and both write `{channel}`",
            first.0, second.0
        ),
    )
    .label("second writer")
    .with_label(first.1, "first writer")
    .with_label(channel_span, "a replace channel takes one write per step")
    .help(format!(
        "give `{channel}` a reducer (`reduce append`, `reduce merge`, …) or let one node write it"
    ))
}

/// Every `node` task a `send` (at `send`) starts writes `channel` (at `write`): a replace
/// channel, with its type and where it is declared.
pub fn send_shared_write(
    node: &str,
    write: Span,
    send: Span,
    channel: (&str, &Ty, Span),
) -> Diagnostic {
    let (channel, ty, declared) = channel;
    let reducer = match ty.base() {
        Ty::List(_) => "`reduce append`, each task writing a list of its items".into(),
        Ty::Int | Ty::Float => "`reduce sum` (or `max`, `min`)".into(),
        Ty::Map(_) => "`reduce merge`, each task writing its own keys".into(),
        Ty::Messages => "`reduce add_messages`".into(),
        other => format!(
            "make it a `list<{other}>` with `reduce append`, each task writing a one-item list"
        ),
    };
    Diagnostic::new(
        codes::SEND_SHARED_WRITE,
        write,
        format!("the parallel `{node}` tasks of a `send` all write `{channel}`, which has no reducer"),
    )
    .label("each task writes this")
    .with_label(send, format!("one `{node}` task per item, all in one step"))
    .with_label(
        declared,
        "a replace channel takes one write per step: a second fails the run",
    )
    .help(format!(
        "give `{channel}` a reducer that combines the tasks' writes: {reducer}; or write it from a node after the fan-out"
    ))
}
