//! A scan of the raw text before pest runs: pest's rules recurse once per bracket (and per `<` of
//! a generic type), so a file nested a few thousand levels deep would overflow the stack inside
//! the parser. Brackets outside strings and comments are counted without recursion, and too deep
//! a nesting is refused (E0003) before any recursive stage sees the text.

use super::MAX_EXPR_DEPTH;
use crate::ast::Span;
use crate::diagnostic::{catalogue as diag, Diagnostic};

/// Deepest nesting of brackets (`(`, `[`, `{`, with the graph's and blocks' own braces) a file
/// may have: the expression limit plus room for the blocks around an expression.
pub const MAX_BRACKET_DEPTH: usize = MAX_EXPR_DEPTH + 16;

/// The first place `src` nests brackets deeper than [`MAX_BRACKET_DEPTH`], or `<` runs (as in
/// `list<list<…>>`) deeper than [`MAX_EXPR_DEPTH`], as an E0003 diagnostic.
pub fn too_deep(src: &str) -> Option<Diagnostic> {
    let b = src.as_bytes();
    let (mut i, mut depth, mut angles) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'#' => {
                i = src[i..].find(['\n', '\r']).map_or(b.len(), |k| i + k);
                continue;
            }
            b'"' if src[i..].starts_with("\"\"\"") => {
                i = src[i + 3..]
                    .find("\"\"\"")
                    .map_or(b.len(), |k| i + 3 + k + 3);
                angles = 0;
                continue;
            }
            b'"' => {
                i += 1;
                while i < b.len() && !matches!(b[i], b'"' | b'\n' | b'\r') {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                angles = 0;
                continue;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_BRACKET_DEPTH {
                    return Some(diag::too_deep_brackets(at(src, i), MAX_BRACKET_DEPTH));
                }
                angles = 0;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                angles = 0;
            }
            b'<' => {
                angles += 1;
                if angles > MAX_EXPR_DEPTH {
                    return Some(diag::too_deep_brackets(at(src, i), MAX_EXPR_DEPTH));
                }
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c.is_ascii_whitespace() => {}
            _ => angles = 0,
        }
        i += 1;
    }
    None
}

/// The one-byte span at `i` (an ASCII bracket, so always on a character boundary).
fn at(src: &str, i: usize) -> Span {
    Span::new(i, (i + 1).min(src.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_brackets_outside_strings_and_comments() {
        let deep = "(".repeat(145);
        assert!(too_deep(&deep).is_some());
        assert!(too_deep(&"(".repeat(144)).is_none());
        assert!(too_deep(&format!("\"{deep}\"")).is_none());
        assert!(too_deep(&format!("\"\"\"{deep}\"\"\"")).is_none());
        assert!(too_deep(&format!("# {deep}\n")).is_none());
        assert!(too_deep(&format!("# x\r{deep}")).is_some());
        assert!(too_deep(&"[]".repeat(10_000)).is_none());
    }

    #[test]
    fn counts_runs_of_angles() {
        assert!(too_deep(&"list<".repeat(129)).is_some());
        assert!(too_deep(&"list<".repeat(128)).is_none());
        assert!(too_deep(&"a < 1\n".repeat(1000).replace('\n', ",")).is_none());
    }

    #[test]
    fn reports_the_first_bracket_too_many() {
        let d = too_deep(&format!("x {}", "{".repeat(200))).map(|d| d.span.start);
        assert_eq!(d, Some(2 + 144));
    }
}
