//! Habits from other formats (E0101–E0106).

use crate::ast::Span;
use crate::diagnostic::{codes, Diagnostic};

/// A LangGraph Python API call such as `add_edge`; `instead` says what to write.
pub fn python_api(span: Span, call: &str, instead: &str) -> Diagnostic {
    Diagnostic::new(
        codes::PYTHON_API,
        span,
        format!("`{call}` is LangGraph's Python API, not this language"),
    )
    .label("Python API call")
    .help(format!("write {instead}"))
}

/// `={{ … }}`, another tool's expression syntax.
pub fn foreign_template(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::FOREIGN_TEMPLATE,
        span,
        "`={{ … }}` is another tool's expression syntax",
    )
    .label("not a template here")
    .help("templates here are plain `{{ expr }}` inside a string, e.g. \"Hello {{ name }}\"")
}

/// `=>` outside a route.
pub fn fat_arrow(span: Span) -> Diagnostic {
    Diagnostic::new(codes::FAT_ARROW, span, "`=>` only appears inside a route")
        .label("route arm outside a route")
        .help("write an edge with `->`, or a conditional route: `a -> route { cond => b  else => END }`")
}

/// A YAML list item `- x`.
pub fn yaml_list_item(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::YAML_LIST_ITEM,
        span,
        "this looks like a YAML list item",
    )
    .label("YAML syntax")
    .help("list nodes as `node name: kind { … }` items and connect them with `a -> b`")
}

/// A YAML-style `key:` line; `hint` says what to write instead.
pub fn yaml_key(span: Span, key: &str, hint: String) -> Diagnostic {
    Diagnostic::new(
        codes::YAML_KEY,
        span,
        format!("unexpected `{key}:` in a graph body"),
    )
    .label("YAML-style key")
    .help(hint)
}

/// An `if`/`elif` statement.
pub fn if_statement(span: Span) -> Diagnostic {
    Diagnostic::new(
        codes::IF_STATEMENT,
        span,
        "`if` statements are not part of the language",
    )
    .label("control flow goes through routes")
    .help("branch with a route: `a -> route { condition => b  else => c }`")
}
