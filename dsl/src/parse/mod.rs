//! Parsing: pest pairs → our AST, with error recovery per line and parse errors phrased in the
//! language's terms. Items and node bodies are built in `items`, expressions and literals in
//! `expr`, and syntax errors are explained in `explain`.

use crate::ast::*;
use crate::diagnostic::{catalogue as diag, Diagnostic};
use crate::habits;
use explain::{first_token, pest_error};
use pest::iterators::Pair;
use pest::Parser;

mod depth;
mod explain;
mod expr;
mod items;

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct AgParser;

type P<'i> = Pair<'i, Rule>;

fn span(p: &P) -> Span {
    let s = p.as_span();
    Span::new(s.start(), trim_trivia(s.get_input(), s.start(), s.end()))
}

/// The end of `src[start..end]` without trailing whitespace and comments: pest includes in a
/// rule's span the trivia it skipped before a repetition that then matched nothing.
fn trim_trivia(src: &str, start: usize, end: usize) -> usize {
    let text = &src[start..end];
    if !text.ends_with(char::is_whitespace) && !text.contains('#') {
        return end;
    }
    let b = text.as_bytes();
    let (mut i, mut last) = (0, 0);
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => i = text[i..].find(['\n', '\r']).map_or(b.len(), |k| i + k),
            b'"' if text[i..].starts_with("\"\"\"") => {
                i = text[i + 3..]
                    .find("\"\"\"")
                    .map_or(b.len(), |k| i + 3 + k + 3);
                last = i;
            }
            b'"' => {
                i += 1;
                while i < b.len() && !matches!(b[i], b'"' | b'\n' | b'\r') {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i < b.len() && b[i] == b'"' {
                    i += 1;
                }
                i = i.min(b.len());
                last = i;
            }
            _ => {
                i += 1;
                last = i;
            }
        }
    }
    while !text.is_char_boundary(last) {
        last += 1;
    }
    start + last
}

/// The result of parsing: the tree (when the file's outline could be read) and diagnostics.
pub struct Parsed {
    /// The tree; `None` when nothing could be recovered.
    pub file: Option<File>,
    /// Parse errors, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses a whole file. A leading byte order mark is read as three spaces (its length in UTF-8),
/// so that every span still points into `src`.
pub fn parse(src: &str) -> Parsed {
    let unmarked;
    let src = match src.strip_prefix('\u{feff}') {
        Some(rest) => {
            unmarked = format!("   {rest}");
            unmarked.as_str()
        }
        None => src,
    };
    pest::set_error_detail(true);
    let mut diags = Vec::new();
    if let Some(d) = depth::too_deep(src) {
        diags.push(d);
        return Parsed {
            file: None,
            diagnostics: diags,
        };
    }
    match AgParser::parse(Rule::file, src) {
        Ok(mut pairs) => {
            let Some(file_pair) = pairs.next() else {
                return Parsed {
                    file: None,
                    diagnostics: diags,
                };
            };
            let mut b = Builder {
                src,
                diags: &mut diags,
                depth: 0,
            };
            let file = b.file(file_pair);
            diags.sort_by_key(|d| d.span.start);
            Parsed {
                file: Some(file),
                diagnostics: diags,
            }
        }
        Err(e) => {
            diags.push(pest_error(src, 0, &e, Context::Top));
            Parsed {
                file: None,
                diagnostics: diags,
            }
        }
    }
}

/// Parses one expression (used by tests and tools).
pub fn parse_expr(src: &str) -> Result<Expr, Diagnostic> {
    pest::set_error_detail(true);
    if let Some(d) = depth::too_deep(src) {
        return Err(d);
    }
    let mut pairs = AgParser::parse(Rule::strict_expr, src)
        .map_err(|e| pest_error(src, 0, &e, Context::Expr))?;
    let strict = pairs
        .next()
        .ok_or_else(|| diag::empty_expression(Span::new(0, src.len())))?;
    let mut diags = Vec::new();
    let mut b = Builder {
        src,
        diags: &mut diags,
        depth: 0,
    };
    let expr_pair = strict
        .into_inner()
        .find(|p| p.as_rule() == Rule::expr)
        .ok_or_else(|| diag::expected_expression(Span::new(0, src.len())))?;
    Ok(b.expr(expr_pair))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Top,
    Graph,
    State,
    Body,
    Expr,
}

struct Builder<'a> {
    src: &'a str,
    diags: &'a mut Vec<Diagnostic>,
    /// How deep the expression being built is nested, counting prefix operators: building
    /// refuses to recurse past [`MAX_EXPR_DEPTH`].
    depth: usize,
}

impl Builder<'_> {
    fn bad(&mut self, p: &P, ctx: Context) {
        let text = p.as_str();
        let at = span(p).start;
        // The body of a route that did not parse (the edge before it took `route` for a node):
        // parse it again behind an edge to say what is wrong inside it.
        if ctx == Context::Graph
            && text.starts_with('{')
            && self.src[..at].trim_end().ends_with("route")
        {
            const EDGE: &str = "a -> route ";
            let edge = format!("{EDGE}{}", text.trim_end());
            if let (Err(e), Some(offset)) = (
                AgParser::parse(Rule::strict_item, &edge),
                at.checked_sub(EDGE.len()),
            ) {
                let help = if text.contains("->") {
                    "route arms use `=>`, not `->`: `condition => target`, and last `else => target`"
                } else {
                    "a route holds arms `condition => target` and ends with `else => target`; a target is a node, END, `[a, b]` or `send …`"
                };
                self.diags
                    .push(pest_error(self.src, offset, &e, ctx).help(help));
                return;
            }
        }
        if let Some(d) = habits::detect(text, at, ctx == Context::Graph || ctx == Context::Top) {
            self.diags.push(d);
            return;
        }
        if ctx == Context::Top && AgParser::parse(Rule::strict_item, text.trim_end()).is_ok() {
            self.diags.push(diag::outside_graph(span(p)));
            return;
        }
        let rule = match ctx {
            Context::Top => Rule::strict_top,
            Context::Graph => Rule::strict_item,
            Context::State => Rule::strict_field,
            Context::Body => Rule::strict_entry,
            Context::Expr => Rule::strict_expr,
        };
        let d = match AgParser::parse(rule, text.trim_end()) {
            Err(e) => pest_error(self.src, at, &e, ctx),
            Ok(_) => diag::skipped_line(span(p), first_token(text)),
        };
        self.diags.push(d);
    }
}

/// Deepest nesting an expression may have (checks, formatting and evaluation recurse on it).
pub const MAX_EXPR_DEPTH: usize = 128;

/// The indentation [`dedent`] removes from every line of `body`: the least of its non-blank
/// lines'.
pub(crate) fn common_indent(body: &str) -> usize {
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0)
}

/// Removes the common indentation of a triple-quoted string and a leading/trailing blank line.
pub fn dedent(s: &str) -> String {
    let body = s.strip_prefix('\n').unwrap_or(s);
    let body = match body.rfind('\n') {
        Some(i) if body[i + 1..].trim().is_empty() => &body[..i],
        _ => body,
    };
    let indent = common_indent(body);
    body.lines()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
