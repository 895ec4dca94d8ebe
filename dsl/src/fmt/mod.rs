//! Canonical formatting of `.ag` files (comments preserved), for `agentgraph fmt`.
//!
//! [`format_source`] parses a file and prints its tree in the canonical style; a file that does
//! not parse is never formatted (its parse errors come back unchanged). [`is_formatted`] backs
//! `fmt --check`. Formatting is idempotent and keeps the tree's shape ([`crate::ast::same_shape`]).
//!
//! # Style
//!
//! - Two-space indentation, one item, state field, node entry, route arm per line.
//! - Blank lines: the author's blank lines between two items of a block are kept, collapsed to
//!   one; there are none right after an opening or before a closing brace. At the top level a
//!   blank line always separates a graph from what comes before it.
//! - `state` fields: `private name: type = default reduce r ephemeral`. A field followed by a
//!   `private` field ends with a comma (without it the parser would read `private` as a trailing
//!   flag of the field before).
//! - Objects, lists, call arguments, tool sets, `input`/`output` lists: `{ a: 1, b: 2 }`,
//!   `[a, b]`, `f(a, b)` on one line when they fit in 80 columns and hold no comment, else one
//!   element per line, each followed by a comma.
//! - Node bodies and blocks (`set { … }`, `retry { … }`): one line (`node n: llm { a: 1 }`) when
//!   they fit, hold no nested block and no comment; else one entry per line, without commas.
//! - Routes are always multi-line, with the conditions padded so that the `=>` line up.
//! - Edges `a -> b -> c`, joins `[a, b] -> c`, fan-outs `send n for x in xs { k: v }`.
//! - Expressions get single spaces around binary operators and the fewest parentheses that keep
//!   the tree (`(a + b) * c`, `a - (b - c)`, `not (a and b)`, `(-a).b`). Strings are printed
//!   exactly as written (escapes and triple-quoted text untouched), durations and floats as
//!   written (a float without usable source text gets Rust's shortest round-trip form), quoted
//!   object keys as written.
//!
//! # Comments
//!
//! The tree has no comments, so they are found in the text and put back by position. A comment
//! on a line of its own goes before the next item, field, entry, arm or element that starts after
//! it, at that element's indentation (or before the closing brace at the end of a block, or at
//! the end of the file). A comment after code stays at the end of the line that ends the element
//! it follows. A comment inside something printed on one line (e.g. within a binary expression)
//! moves to the end of that line; when a line collects several, the first stays there and the
//! others follow on lines of their own. No comment is lost or duplicated.

mod expr;
mod items;

use crate::ast::*;
use crate::diagnostic::{catalogue as diag, Diagnostic, Severity};
use expr::flat_expr;

const WIDTH: usize = 80;

/// Formats a whole file; parse errors come back unchanged.
pub fn format_source(src: &str) -> Result<String, Vec<Diagnostic>> {
    let parsed = crate::parse::parse(src);
    if parsed
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error)
    {
        return Err(parsed.diagnostics);
    }
    let Some(file) = parsed.file else {
        return Err(vec![diag::unreadable_file(Span::new(0, src.len()))]);
    };
    let mut p = Printer::new(src);
    p.file(&file);
    Ok(p.finish())
}

/// Whether `src` is already formatted (`fmt --check`); parse errors come back unchanged.
pub fn is_formatted(src: &str) -> Result<bool, Vec<Diagnostic>> {
    format_source(src).map(|f| f == src)
}

/// Prints one expression on one line with the fewest parentheses (quoted keys and floats are
/// printed from the tree, since there is no source text).
pub fn format_expr(e: &Expr) -> String {
    let mut out = String::new();
    flat_expr("", e, &mut out);
    out
}

/// A `#` comment: `start` is the `#`, `end` the end of its line.
#[derive(Debug, Clone, Copy)]
struct Comment {
    start: usize,
    end: usize,
}

fn scan_comments(src: &str) -> Vec<Comment> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                let end = src[i..].find('\n').map_or(src.len(), |n| i + n);
                out.push(Comment { start: i, end });
                i = end;
            }
            b'"' if b[i..].starts_with(b"\"\"\"") => {
                i = src[i + 3..]
                    .find("\"\"\"")
                    .map_or(src.len(), |n| i + 3 + n + 3);
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

// ---- the printer ---------------------------------------------------------------------------

struct Printer<'s> {
    src: &'s str,
    comments: Vec<Comment>,
    /// Comments are placed in source order: those before `next` are printed.
    next: usize,
    out: String,
    indent: usize,
    /// Nothing printed yet in the current block (no blank line allowed).
    block_start: bool,
}

impl<'s> Printer<'s> {
    fn new(src: &'s str) -> Self {
        Printer {
            src,
            comments: scan_comments(src),
            next: 0,
            out: String::new(),
            indent: 0,
            block_start: true,
        }
    }

    fn finish(mut self) -> String {
        self.leading(self.src.len(), false, false);
        let len = self.out.trim_end().len();
        self.out.truncate(len);
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }

    // ---- positions in the source ----

    /// The end of a span without the whitespace and comments the parser may have included.
    fn end(&self, span: Span) -> usize {
        let b = self.src.as_bytes();
        let mut pos = span.end.min(b.len());
        loop {
            while pos > span.start && b[pos - 1].is_ascii_whitespace() {
                pos -= 1;
            }
            let i = self.comments.partition_point(|c| c.start < pos);
            match i.checked_sub(1).map(|i| self.comments[i]) {
                Some(c) if pos <= c.end && c.start >= span.start => pos = c.start,
                _ => return pos,
            }
        }
    }

    /// The first `ch` at or after `from`, outside comments (`from` when there is none).
    fn find(&self, from: usize, ch: u8) -> usize {
        let b = self.src.as_bytes();
        let mut i = from;
        while i < b.len() {
            match b[i] {
                b'#' => i = self.src[i..].find('\n').map_or(b.len(), |n| i + n),
                c if c == ch => return i,
                _ => i += 1,
            }
        }
        from
    }

    /// Whether an unplaced comment starts in `start..end`.
    fn has_comment(&self, start: usize, end: usize) -> bool {
        let i = self.comments.partition_point(|c| c.start < start);
        self.comments
            .get(i.max(self.next))
            .is_some_and(|c| c.start < end)
    }

    /// Whether the line before the one `pos` starts is blank (and `pos` starts its line).
    fn blank_before(&self, pos: usize) -> bool {
        let src = self.src;
        let line = src[..pos].rfind('\n').map_or(0, |i| i + 1);
        if line == 0 || !src[line..pos].trim().is_empty() {
            return false;
        }
        let prev = src[..line - 1].rfind('\n').map_or(0, |i| i + 1);
        src[prev..line - 1].trim().is_empty()
    }

    fn text(&self, i: usize) -> &'s str {
        let c = self.comments[i];
        self.src[c.start..c.end].trim_end()
    }

    // ---- output ----

    fn col(&self) -> usize {
        let line = self.out.rfind('\n').map_or(0, |i| i + 1);
        self.out[line..].chars().count()
    }

    fn fits(&self, s: &str) -> bool {
        !s.contains('\n') && self.col() + s.chars().count() <= WIDTH
    }

    fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn begin_line(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.block_start = false;
    }

    /// Prints the unplaced comments before `pos` on lines of their own, then the blank line due
    /// before the element at `pos` (when `item`).
    fn leading(&mut self, pos: usize, mut force_blank: bool, item: bool) {
        while let Some(&c) = self.comments.get(self.next).filter(|c| c.start < pos) {
            let i = self.next;
            self.next += 1;
            if !self.block_start && (force_blank || self.blank_before(c.start)) {
                self.out.push('\n');
            }
            force_blank = false;
            self.begin_line();
            self.push(self.text(i));
            self.out.push('\n');
        }
        if item && !self.block_start && (force_blank || self.blank_before(pos)) {
            self.out.push('\n');
        }
    }

    /// Ends a line whose code reaches `anchor` in the source. The first unplaced comment goes to
    /// the end of the line when it lies before `anchor` (inside the code just printed) or after
    /// it on the same source line; any other comment before `anchor` stays unplaced, so that the
    /// next element (or closing brace) prints it on a line of its own.
    fn eol(&mut self, anchor: usize) {
        if let Some(&c) = self.comments.get(self.next) {
            let i = self.next;
            let same_line = self
                .src
                .get(anchor..c.start)
                .is_some_and(|g| g.bytes().all(|b| b" \t,".contains(&b)));
            if c.start < anchor || same_line {
                self.next += 1;
                self.push("  ");
                self.push(self.text(i));
            }
        }
        self.out.push('\n');
    }

    fn open(&mut self, anchor: usize) {
        self.eol(anchor);
        self.indent += 1;
        self.block_start = true;
    }

    fn close(&mut self, end: usize, closer: &str) {
        self.leading(end, false, false);
        self.indent = self.indent.saturating_sub(1);
        self.begin_line();
        self.push(closer);
    }
}
