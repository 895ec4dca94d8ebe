//! Code nodes: `js` runs a JavaScript function body in a QuickJS sandbox, `tool` calls a
//! registered tool directly, without a model.
//!
//! ```text
//! node total: js {
//!   code: """
//!     const sum = items.reduce((a, b) => a + b, 0)   // channels and payload keys by name
//!     return { total: sum, count: state.items.length }
//!   """
//!   time_limit: 2s                 # per call (default 5s): JS_TIMEOUT
//!   memory_limit: 16000000         # bytes per call (default 64 MB): JS_MEMORY
//! }
//! node fetch: tool { tool: http_request, args: { url: url }, output: page }
//! node sum: tool { tool: "get-sum", args: { a: a, b: b }, output: result }
//! ```
//!
//! `js` is a kind of every registry ([`crate::Registry::default`]); `tool` is registered with
//! the tools ([`crate::agents::register`]), which it finds through a [`ToolResolver`].

use crate::ast::StrLit;
use crate::registry::{EntrySpec, Registry};
use std::sync::Arc;

mod js;
pub(crate) mod sandbox;
mod tool_node;

pub(crate) use js::JsFactory;
pub use tool_node::{FromToolMap, ResolveTool, ToolLookupError, ToolResolver};

/// The entries of a `js` node.
pub(crate) fn js_entries() -> Vec<EntrySpec> {
    vec![
        EntrySpec::required("code"),
        EntrySpec::value("time_limit"),
        EntrySpec::value("memory_limit"),
    ]
}

/// Registers the `tool` kind: nodes find their tool through `resolver` at their first run.
pub fn register_tool_kind(reg: &mut Registry, resolver: Arc<dyn ToolResolver>) {
    reg.register_kind(
        "tool",
        vec![
            EntrySpec::required("tool"),
            EntrySpec::value("args"),
            EntrySpec::value("output"),
            EntrySpec::value("settings"),
            EntrySpec::value("model"),
            EntrySpec::writes("usage"),
        ],
        "calls a tool with arguments from the state and writes its result to `output`; \
         `model` hands the tool a model (tools that run sub-agents), `usage` receives their \
         usage",
        Arc::new(tool_node::ToolNodeFactory { resolver }),
    );
}

/// The byte offset in the file of `column` on `line` (both 1-based) of a code string's value.
/// A `"""` string's lines are the file's lines (after the opening line when it ends right
/// after the quotes), shifted by the indentation the dedent removed; a one-line string has no
/// finer position than its start.
pub(crate) fn code_offset(lit: &StrLit, line: usize, column: usize) -> usize {
    let raw = lit.raw.as_str();
    if !lit.triple || raw.len() < 6 {
        return lit.span.start;
    }
    let inner = &raw[3..raw.len() - 3];
    let (skipped, body) = match inner.strip_prefix('\n') {
        Some(rest) => (4, rest),
        None => (3, inner),
    };
    let indent = crate::parse::common_indent(body);
    let mut start = 0;
    for _ in 1..line {
        match body[start..].find('\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    let text = body[start..].split('\n').next().unwrap_or("");
    let leading = text.len() - text.trim_start().len();
    let mut at = start + indent.min(leading);
    // Advance `column - 1` characters, staying on the line.
    let rest = &body[at..start + text.len()];
    at += rest
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(rest.len(), |(i, _)| i);
    lit.span.start + skipped + at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(src: &str, at: usize) -> StrLit {
        let parsed = crate::parse_expr(&src[at..]).expect("a string");
        match parsed.kind {
            crate::ast::ExprKind::Str { mut lit } => {
                lit.span.start += at;
                lit.span.end += at;
                lit
            }
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn lines_of_a_triple_string_are_the_files() {
        let src = "code: \"\"\"\n    let a = 1\n      return a\n  \"\"\"";
        let l = lit(src, 6);
        assert_eq!(l.value, "let a = 1\n  return a");
        let second = code_offset(&l, 2, 3);
        assert!(src[second..].starts_with("return a"), "{}", &src[second..]);
        let first = code_offset(&l, 1, 5);
        assert!(src[first..].starts_with("a = 1"), "{}", &src[first..]);
        // Past the end of a line: its end.
        assert_eq!(&src[code_offset(&l, 1, 99)..][..1], "\n");
    }

    #[test]
    fn a_plain_string_points_at_its_start() {
        let src = "x = \"return 1\"";
        let l = lit(src, 4);
        assert_eq!(code_offset(&l, 1, 4), 4);
    }
}
