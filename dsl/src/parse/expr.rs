//! Building expressions: operators by precedence (a Pratt parser), postfix access, atoms,
//! strings and objects.

use super::items::ident;
use super::{dedent, span, Builder, Rule, MAX_EXPR_DEPTH, P};
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use std::sync::OnceLock;

fn pratt() -> &'static PrattParser<Rule> {
    static PRATT: OnceLock<PrattParser<Rule>> = OnceLock::new();
    PRATT.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::op_or, Assoc::Left))
            .op(Op::infix(Rule::op_and, Assoc::Left))
            .op(Op::infix(Rule::op_eq, Assoc::Left)
                | Op::infix(Rule::op_ne, Assoc::Left)
                | Op::infix(Rule::op_lt, Assoc::Left)
                | Op::infix(Rule::op_le, Assoc::Left)
                | Op::infix(Rule::op_gt, Assoc::Left)
                | Op::infix(Rule::op_ge, Assoc::Left))
            .op(Op::infix(Rule::op_add, Assoc::Left) | Op::infix(Rule::op_sub, Assoc::Left))
            .op(Op::infix(Rule::op_mul, Assoc::Left)
                | Op::infix(Rule::op_div, Assoc::Left)
                | Op::infix(Rule::op_rem, Assoc::Left))
            .op(Op::prefix(Rule::op_not) | Op::prefix(Rule::op_neg))
    })
}

impl Builder<'_> {
    pub(super) fn object(&mut self, p: P) -> ObjectLit {
        let s = span(&p);
        let mut entries = Vec::new();
        for e in p.into_inner() {
            let mut it = e.into_inner();
            let (Some(k), Some(v)) = (it.next(), it.next()) else {
                continue;
            };
            let key = match k.as_rule() {
                Rule::string => {
                    let lit = self.string(k);
                    Ident {
                        name: lit.value,
                        span: lit.span,
                    }
                }
                _ => ident(k),
            };
            entries.push((key, self.expr(v)));
        }
        ObjectLit { entries, span: s }
    }

    pub(super) fn string(&mut self, p: P) -> StrLit {
        let s = span(&p);
        let raw = p.as_str().to_string();
        let triple = raw.starts_with("\"\"\"");
        let value = if triple {
            dedent(&raw[3..raw.len() - 3])
        } else {
            let (value, bad) = unescape(&raw[1..raw.len() - 1]);
            if let Some((at, len)) = bad {
                let start = s.start + 1 + at;
                self.diags
                    .push(diag::bad_escape(Span::new(start, start + len)));
            }
            value
        };
        StrLit {
            value,
            triple,
            raw,
            span: s,
        }
    }

    pub(super) fn expr(&mut self, p: P) -> Expr {
        let s = span(&p);
        let pairs = p.into_inner();
        // Operators are counted before anything recurses: the Pratt parser recurses once per
        // prefix operator, and the tree once per level.
        let (mut run, mut longest, mut infix) = (0usize, 0usize, 0usize);
        for q in pairs.clone() {
            match q.as_rule() {
                Rule::op_not | Rule::op_neg => {
                    run += 1;
                    longest = longest.max(run);
                }
                Rule::postfix_expr => run = 0,
                _ => infix += 1,
            }
        }
        let reach = self.depth + 1 + longest;
        if reach > MAX_EXPR_DEPTH || infix > 4 * MAX_EXPR_DEPTH {
            self.diags
                .push(diag::too_deep(s, reach.max(infix + 1), MAX_EXPR_DEPTH));
            return Expr {
                kind: ExprKind::Null,
                span: s,
            };
        }
        self.depth += 1 + longest;
        let mut primaries: std::collections::VecDeque<Expr> = pairs
            .clone()
            .filter(|q| q.as_rule() == Rule::postfix_expr)
            .map(|q| self.postfix(q))
            .collect();
        self.depth -= 1 + longest;
        let result = pratt()
            .map_primary(|_| {
                primaries.pop_front().unwrap_or(Expr {
                    kind: ExprKind::Null,
                    span: s,
                })
            })
            .map_prefix(|op, rhs| {
                let sp = span(&op).to(rhs.span);
                let op = if op.as_rule() == Rule::op_not {
                    UnOp::Not
                } else {
                    UnOp::Neg
                };
                Expr {
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(rhs),
                    },
                    span: sp,
                }
            })
            .map_infix(|lhs, op, rhs| {
                let sp = lhs.span.to(rhs.span);
                let op = match op.as_rule() {
                    Rule::op_or => BinOp::Or,
                    Rule::op_and => BinOp::And,
                    Rule::op_eq => BinOp::Eq,
                    Rule::op_ne => BinOp::Ne,
                    Rule::op_lt => BinOp::Lt,
                    Rule::op_le => BinOp::Le,
                    Rule::op_gt => BinOp::Gt,
                    Rule::op_ge => BinOp::Ge,
                    Rule::op_add => BinOp::Add,
                    Rule::op_sub => BinOp::Sub,
                    Rule::op_mul => BinOp::Mul,
                    Rule::op_div => BinOp::Div,
                    _ => BinOp::Rem,
                };
                Expr {
                    kind: ExprKind::Binary {
                        op,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    },
                    span: sp,
                }
            })
            .parse(pairs);
        let d = depth(&result);
        if d > MAX_EXPR_DEPTH {
            self.diags.push(diag::too_deep(s, d, MAX_EXPR_DEPTH));
            return Expr {
                kind: ExprKind::Null,
                span: s,
            };
        }
        Expr { span: s, ..result }
    }
}

/// The nesting depth of an expression, computed without recursion.
fn depth(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        match &e.kind {
            ExprKind::Field { base, .. } => stack.push((base, d + 1)),
            ExprKind::Index { base, index } => {
                stack.push((base, d + 1));
                stack.push((index, d + 1));
            }
            ExprKind::Call { args, .. } => stack.extend(args.iter().map(|a| (a, d + 1))),
            ExprKind::List { items } => stack.extend(items.iter().map(|a| (a, d + 1))),
            ExprKind::Object { object } => {
                stack.extend(object.entries.iter().map(|(_, v)| (v, d + 1)))
            }
            ExprKind::Unary { operand, .. } => stack.push((operand, d + 1)),
            ExprKind::Binary { lhs, rhs, .. } => {
                stack.push((lhs, d + 1));
                stack.push((rhs, d + 1));
            }
            _ => {}
        }
    }
    max
}

impl Builder<'_> {
    /// Builds a postfix expression (`primary postfix*`).
    fn postfix(&mut self, p: P) -> Expr {
        let s = span(&p);
        let mut it = p.into_inner();
        let reach = self.depth + it.clone().count();
        if reach > MAX_EXPR_DEPTH {
            self.diags.push(diag::too_deep(s, reach, MAX_EXPR_DEPTH));
            return Expr {
                kind: ExprKind::Null,
                span: s,
            };
        }
        let Some(first) = it.next() else {
            return Expr {
                kind: ExprKind::Null,
                span: Span::default(),
            };
        };
        let mut e = self.atom(first);
        for post in it {
            let sp = e.span.to(span(&post));
            e = match post.as_rule() {
                Rule::field_access => {
                    let f = post.into_inner().next().map(ident).unwrap_or(Ident {
                        name: String::new(),
                        span: sp,
                    });
                    Expr {
                        kind: ExprKind::Field {
                            base: Box::new(e),
                            field: f,
                        },
                        span: sp,
                    }
                }
                _ => {
                    let idx = post
                        .into_inner()
                        .next()
                        .map(|x| self.expr(x))
                        .unwrap_or(Expr {
                            kind: ExprKind::Null,
                            span: sp,
                        });
                    Expr {
                        kind: ExprKind::Index {
                            base: Box::new(e),
                            index: Box::new(idx),
                        },
                        span: sp,
                    }
                }
            };
        }
        e
    }

    fn atom(&mut self, p: P) -> Expr {
        let s = span(&p);
        let kind = match p.as_rule() {
            Rule::kw_true => ExprKind::Bool { value: true },
            Rule::kw_false => ExprKind::Bool { value: false },
            Rule::kw_null => ExprKind::Null,
            Rule::number => {
                let t = p.as_str();
                match t.parse::<i64>() {
                    Ok(v) => ExprKind::Int { value: v },
                    Err(_) if t.bytes().all(|c| c.is_ascii_digit()) => {
                        // Reported; the tree keeps an int so that no second error follows.
                        self.diags.push(diag::int_too_large(s));
                        ExprKind::Int { value: i64::MAX }
                    }
                    Err(_) => ExprKind::Float {
                        value: t.parse().unwrap_or(f64::NAN),
                    },
                }
            }
            Rule::duration => {
                let t = p.as_str();
                let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
                let unit: u64 = match &t[digits.len()..] {
                    "ms" => 1,
                    "s" => 1000,
                    "m" => 60_000,
                    _ => 3_600_000,
                };
                let ms = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(unit));
                let ms = ms.unwrap_or_else(|| {
                    self.diags.push(diag::duration_too_large(s));
                    u64::MAX
                });
                ExprKind::Duration {
                    ms,
                    text: t.to_string(),
                }
            }
            Rule::string => ExprKind::Str {
                lit: self.string(p),
            },
            Rule::ident => ExprKind::Name { name: ident(p) },
            Rule::paren => match p.into_inner().next() {
                Some(inner) => {
                    return Expr {
                        span: s,
                        ..self.expr(inner)
                    }
                }
                None => ExprKind::Null,
            },
            Rule::call => {
                let mut it = p.into_inner();
                let func = it.next().map(ident).unwrap_or(Ident {
                    name: String::new(),
                    span: s,
                });
                let args = it.map(|a| self.expr(a)).collect();
                ExprKind::Call { func, args }
            }
            Rule::list => ExprKind::List {
                items: p.into_inner().map(|a| self.expr(a)).collect(),
            },
            Rule::object => ExprKind::Object {
                object: self.object(p),
            },
            Rule::expr => return self.expr(p),
            _ => ExprKind::Null,
        };
        Expr { kind, span: s }
    }
}

/// The value of a plain string's body, and where its first `\\uXXXX` escape naming no character
/// (a lone surrogate) is: its offset in `s` and its length.
fn unescape(s: &str) -> (String, Option<(usize, usize)>) {
    let mut out = String::with_capacity(s.len());
    let mut bad = None;
    let mut chars = s.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next().map(|(_, c)| c) {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        bad = bad.or(Some((at, 2 + hex.len())));
                    }
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    (out, bad)
}
