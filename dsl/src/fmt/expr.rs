//! Expressions: on one line with the fewest parentheses, or broken over lines.

use super::Printer;
use crate::ast::*;

// ---- expressions on one line ---------------------------------------------------------------

/// Binding strength: binary operators 1–5 ([`BinOp::precedence`]), prefix operators 6 (they
/// bind tighter than any binary operator), postfix forms and atoms 7.
fn prec(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary { op, .. } => op.precedence(),
        ExprKind::Unary { .. } => 6,
        _ => 7,
    }
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An object key: as written when it was a string, else the name (quoted if it must be).
fn key_text(src: &str, k: &Ident) -> String {
    match src.get(k.span.start..k.span.end) {
        Some(raw) if raw.starts_with('"') => raw.to_string(),
        _ if is_ident(&k.name) => k.name.clone(),
        _ => quote(&k.name),
    }
}

/// A float as written when the source has it, else its shortest round-trip form.
fn float_text(src: &str, span: Span, v: f64) -> String {
    let t = src.get(span.start..span.end).unwrap_or("");
    let n = t
        .bytes()
        .take_while(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
        .count();
    let lit = &t[..n];
    if lit.starts_with(|c: char| c.is_ascii_digit())
        && lit.parse::<i64>().is_err()
        && lit.parse::<f64>() == Ok(v)
    {
        lit.to_string()
    } else if v == f64::INFINITY {
        "1e999".to_string()
    } else {
        format!("{v:?}")
    }
}

fn flat_sub(src: &str, e: &Expr, parens: bool, out: &mut String) {
    if parens {
        out.push('(');
        flat_expr(src, e, out);
        out.push(')');
    } else {
        flat_expr(src, e, out);
    }
}

fn flat_list<'a>(src: &str, items: impl Iterator<Item = &'a Expr>, out: &mut String) {
    for (i, it) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        flat_expr(src, it, out);
    }
}

pub(super) fn flat_expr(src: &str, e: &Expr, out: &mut String) {
    match &e.kind {
        ExprKind::Null => out.push_str("null"),
        ExprKind::Bool { value } => out.push_str(if *value { "true" } else { "false" }),
        ExprKind::Int { value } => out.push_str(&value.to_string()),
        ExprKind::Float { value } => out.push_str(&float_text(src, e.span, *value)),
        ExprKind::Duration { text, .. } => out.push_str(text),
        ExprKind::Str { lit } => out.push_str(&lit.raw),
        ExprKind::Name { name } => out.push_str(&name.name),
        ExprKind::Field { base, field } => {
            flat_sub(src, base, prec(base) < 7, out);
            out.push('.');
            out.push_str(&field.name);
        }
        ExprKind::Index { base, index } => {
            flat_sub(src, base, prec(base) < 7, out);
            out.push('[');
            flat_expr(src, index, out);
            out.push(']');
        }
        ExprKind::Call { func, args } => {
            out.push_str(&func.name);
            out.push('(');
            flat_list(src, args.iter(), out);
            out.push(')');
        }
        ExprKind::List { items } => {
            out.push('[');
            flat_list(src, items.iter(), out);
            out.push(']');
        }
        ExprKind::Object { object } => flat_object(src, object, out),
        ExprKind::Unary { op, operand } => {
            let mut inner = String::new();
            flat_sub(src, operand, prec(operand) < 6, &mut inner);
            out.push_str(unary_prefix(*op, &inner));
            out.push_str(&inner);
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = op.precedence();
            flat_sub(src, lhs, prec(lhs) < p, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            flat_sub(src, rhs, prec(rhs) <= p, out);
        }
    }
}

fn unary_prefix(op: UnOp, operand: &str) -> &'static str {
    match op {
        UnOp::Not => "not ",
        UnOp::Neg if operand.starts_with('-') => "- ",
        UnOp::Neg => "-",
    }
}

fn flat_object(src: &str, o: &ObjectLit, out: &mut String) {
    if o.entries.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{ ");
    for (i, (k, v)) in o.entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&key_text(src, k));
        out.push_str(": ");
        flat_expr(src, v, out);
    }
    out.push_str(" }");
}

pub(super) fn flat_tool(src: &str, t: &ToolRef, out: &mut String) {
    out.push_str(&t.name.name);
    if let Some(o) = &t.options {
        out.push(' ');
        flat_object(src, o, out);
    }
}

// ---- expressions that may break over lines ------------------------------------------------

/// An element of a bracketed sequence printed one per line.
#[derive(Clone, Copy)]
pub(super) enum Elem<'a> {
    Expr(&'a Expr),
    Entry(&'a Ident, &'a Expr),
    Tool(&'a ToolRef),
    Name(&'a Ident),
}

impl Elem<'_> {
    fn start(&self) -> usize {
        match self {
            Elem::Expr(e) => e.span.start,
            Elem::Entry(k, _) => k.span.start,
            Elem::Tool(t) => t.name.span.start,
            Elem::Name(n) => n.span.start,
        }
    }
    fn end(&self) -> usize {
        match self {
            Elem::Expr(e) | Elem::Entry(_, e) => e.span.end,
            Elem::Tool(t) => t.options.as_ref().map_or(t.name.span.end, |o| o.span.end),
            Elem::Name(n) => n.span.end,
        }
    }
}

impl Printer<'_> {
    pub(super) fn object(&mut self, o: &ObjectLit) {
        let mut flat = String::new();
        flat_object(self.src, o, &mut flat);
        let end = self.end(o.span);
        let elems: Vec<Elem> = o.entries.iter().map(|(k, v)| Elem::Entry(k, v)).collect();
        self.flat_or_seq(&flat, ["{", "}"], o.span.start, end, &elems);
    }

    /// `flat` where it fits on the line and no comment stands between `open` and `end`; else
    /// the elements one per line between `delims` (see [`Printer::seq`]).
    pub(super) fn flat_or_seq(
        &mut self,
        flat: &str,
        [opener, closer]: [&str; 2],
        open: usize,
        end: usize,
        elems: &[Elem],
    ) {
        if self.fits(flat) && !self.has_comment(open, end) {
            self.push(flat);
        } else {
            self.seq(opener, closer, open, end, elems);
        }
    }

    /// Elements one per line, each followed by a comma.
    pub(super) fn seq(
        &mut self,
        opener: &str,
        closer: &str,
        open: usize,
        end: usize,
        elems: &[Elem],
    ) {
        self.push(opener);
        self.open(open + 1);
        for el in elems {
            self.leading(el.start(), false, true);
            self.begin_line();
            match *el {
                Elem::Expr(e) => self.expr(e),
                Elem::Entry(k, v) => {
                    self.push(&format!("{}: ", key_text(self.src, k)));
                    self.expr(v);
                }
                Elem::Tool(t) => {
                    self.push(&t.name.name);
                    if let Some(o) = &t.options {
                        self.push(" ");
                        self.object(o);
                    }
                }
                Elem::Name(n) => self.push(&n.name),
            }
            self.push(",");
            self.eol(self.end(Span::new(el.start(), el.end())));
        }
        self.close(end, closer);
    }

    fn sub(&mut self, e: &Expr, parens: bool) {
        if parens {
            self.push("(");
            self.expr(e);
            self.push(")");
        } else {
            self.expr(e);
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) {
        let mut flat = String::new();
        flat_expr(self.src, e, &mut flat);
        let end = self.end(e.span);
        if self.fits(&flat) && !self.has_comment(e.span.start, end) {
            self.push(&flat);
            return;
        }
        match &e.kind {
            ExprKind::List { items } => {
                let elems: Vec<Elem> = items.iter().map(Elem::Expr).collect();
                self.seq("[", "]", self.find(e.span.start, b'['), end, &elems);
            }
            ExprKind::Call { func, args } => {
                self.push(&func.name);
                let elems: Vec<Elem> = args.iter().map(Elem::Expr).collect();
                self.seq("(", ")", self.find(func.span.end, b'('), end, &elems);
            }
            ExprKind::Object { object } => self.object(object),
            ExprKind::Field { base, field } => {
                self.sub(base, prec(base) < 7);
                self.push(&format!(".{}", field.name));
            }
            ExprKind::Index { base, index } => {
                self.sub(base, prec(base) < 7);
                self.push("[");
                self.expr(index);
                self.push("]");
            }
            ExprKind::Unary { op, operand } => {
                let mut inner = String::new();
                flat_sub(self.src, operand, prec(operand) < 6, &mut inner);
                self.push(unary_prefix(*op, &inner));
                self.sub(operand, prec(operand) < 6);
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                self.sub(lhs, prec(lhs) < p);
                self.push(&format!(" {} ", op.symbol()));
                self.sub(rhs, prec(rhs) <= p);
            }
            _ => self.push(&flat),
        }
    }
}
