//! Parsing: pest pairs → our AST, with error recovery per line and parse errors phrased in the
//! language's terms.

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::habits;
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;
use std::sync::OnceLock;

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
            b'#' => i = text[i..].find('\n').map_or(b.len(), |k| i + k),
            b'"' if text[i..].starts_with("\"\"\"") => {
                i = text[i + 3..]
                    .find("\"\"\"")
                    .map_or(b.len(), |k| i + 3 + k + 3);
                last = i;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
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

/// The result of parsing: the tree (when the file's outline could be read) and diagnostics.
pub struct Parsed {
    /// The tree; `None` when nothing could be recovered.
    pub file: Option<File>,
    /// Parse errors, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses a whole file.
pub fn parse(src: &str) -> Parsed {
    pest::set_error_detail(true);
    let mut diags = Vec::new();
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
    let mut pairs = AgParser::parse(Rule::strict_expr, src)
        .map_err(|e| pest_error(src, 0, &e, Context::Expr))?;
    let strict = pairs
        .next()
        .ok_or_else(|| Diagnostic::error("E0001", Span::new(0, src.len()), "empty expression"))?;
    let mut diags = Vec::new();
    let mut b = Builder {
        src,
        diags: &mut diags,
    };
    let expr_pair = strict
        .into_inner()
        .find(|p| p.as_rule() == Rule::expr)
        .ok_or_else(|| {
            Diagnostic::error("E0001", Span::new(0, src.len()), "expected an expression")
        })?;
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
            self.diags.push(
                Diagnostic::error("E0001", span(p), "this item is outside of any graph")
                    .label("outside the graph")
                    .help("move it inside `graph name { … }`, before the graph's closing `}`"),
            );
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
            Ok(_) => Diagnostic::error(
                "E0002",
                span(p),
                format!("unexpected `{}`", first_token(text)),
            )
            .label("not understood here"),
        };
        self.diags.push(d);
    }

    fn file(&mut self, p: P) -> File {
        let mut f = File {
            uses: Vec::new(),
            graphs: Vec::new(),
        };
        let mut unclosed = false;
        for item in p.into_inner() {
            match item.as_rule() {
                Rule::use_decl => {
                    let s = span(&item);
                    let mut it = item.into_inner().filter(|x| !is_kw(x));
                    if let (Some(path), Some(alias)) = (it.next(), it.next()) {
                        f.uses.push(UseDecl {
                            path: self.string(path),
                            alias: ident(alias),
                            span: s,
                        });
                    }
                }
                Rule::graph_decl => f.graphs.push(self.graph(item)),
                // Everything after a graph that is never closed belongs to it: one error.
                Rule::bad_top if unclosed => {}
                Rule::bad_top => match unclosed_graph(self.src, span(&item).start) {
                    Some(d) => {
                        self.diags.push(d);
                        unclosed = true;
                    }
                    None => self.bad(&item, Context::Top),
                },
                _ => {}
            }
        }
        f
    }

    fn graph(&mut self, p: P) -> GraphDecl {
        let s = span(&p);
        let mut it = p.into_inner().filter(|x| !is_kw(x));
        let name = it.next().map(ident).unwrap_or_else(|| Ident {
            name: String::new(),
            span: s,
        });
        let mut items = Vec::new();
        for item in it {
            if let Some(gi) = self.graph_item(item) {
                items.push(gi);
            }
        }
        GraphDecl {
            name,
            items,
            span: s,
        }
    }

    fn graph_item(&mut self, p: P) -> Option<GraphItem> {
        let s = span(&p);
        Some(match p.as_rule() {
            Rule::state_block => {
                let mut fields = Vec::new();
                for f in p.into_inner().filter(|x| !is_kw(x)) {
                    match f.as_rule() {
                        Rule::field => fields.push(self.field(f)),
                        Rule::bad_item => self.bad(&f, Context::State),
                        _ => {}
                    }
                }
                GraphItem::State(StateBlock { fields, span: s })
            }
            Rule::input_block => GraphItem::Input(name_list_of(p, s)),
            Rule::output_block => GraphItem::Output(name_list_of(p, s)),
            Rule::model_decl => {
                let mut it = p.into_inner().filter(|x| !is_kw(x));
                let name = ident(it.next()?);
                let provider = ident(it.next()?);
                let options = self.object(it.next()?);
                GraphItem::Model(ModelDecl {
                    name,
                    provider,
                    options,
                    span: s,
                })
            }
            Rule::prompt_decl => {
                let mut it = p.into_inner().filter(|x| !is_kw(x));
                let name = ident(it.next()?);
                let value = self.expr(it.next()?);
                GraphItem::Prompt(PromptDecl {
                    name,
                    value,
                    span: s,
                })
            }
            Rule::tools_decl => {
                let mut it = p.into_inner().filter(|x| !is_kw(x));
                let name = ident(it.next()?);
                let tools = it
                    .filter_map(|t| {
                        let mut ti = t.into_inner();
                        let name = ident(ti.next()?);
                        let options = ti.next().map(|o| self.object(o));
                        Some(ToolRef { name, options })
                    })
                    .collect();
                GraphItem::Tools(ToolsDecl {
                    name,
                    tools,
                    span: s,
                })
            }
            Rule::node_decl => GraphItem::Node(self.node(p)?),
            Rule::edge_stmt => GraphItem::Edge(self.edge(p)?),
            Rule::interrupt_stmt => {
                let mut it = p.into_inner().filter(|x| !is_kw(x));
                let after = it.next()?.as_str() == "after";
                let nodes = it
                    .next()
                    .map(|l| l.into_inner().map(ident).collect())
                    .unwrap_or_default();
                GraphItem::Interrupt(InterruptStmt {
                    after,
                    nodes,
                    span: s,
                })
            }
            Rule::config_block => {
                let obj = p.into_inner().find(|x| x.as_rule() == Rule::object)?;
                GraphItem::Config(self.object(obj))
            }
            Rule::bad_item => {
                self.bad(&p, Context::Graph);
                return None;
            }
            _ => return None,
        })
    }

    fn field(&mut self, p: P) -> Field {
        let s = span(&p);
        let mut f = Field {
            name: Ident {
                name: String::new(),
                span: s,
            },
            ty: TypeExpr {
                name: Ident {
                    name: "json".into(),
                    span: s,
                },
                arg: None,
                optional: false,
                span: s,
            },
            default: None,
            reducer: None,
            private: false,
            ephemeral: false,
            span: s,
        };
        let mut after_reduce = false;
        for part in p.into_inner() {
            match part.as_rule() {
                Rule::private_flag => f.private = true,
                Rule::ephemeral_flag => f.ephemeral = true,
                Rule::ident if after_reduce => f.reducer = Some(ident(part)),
                Rule::ident => f.name = ident(part),
                Rule::type_expr => f.ty = type_expr(part),
                Rule::expr => f.default = Some(self.expr(part)),
                Rule::kw_reduce => after_reduce = true,
                _ => {}
            }
        }
        f
    }

    fn node(&mut self, p: P) -> Option<NodeDecl> {
        let s = span(&p);
        let mut it = p.into_inner().filter(|x| !is_kw(x));
        let name = ident(it.next()?);
        let mut kind = None;
        let mut body = Vec::new();
        let mut has_body = false;
        for part in it {
            match part.as_rule() {
                Rule::node_kind => {
                    let inner = part.into_inner().next()?;
                    kind = Some(match inner.as_rule() {
                        Rule::subgraph_kind => {
                            let target = inner.into_inner().find(|x| !is_kw(x))?;
                            NodeKind::Subgraph(match target.as_rule() {
                                Rule::string => SubgraphRef::Path(self.string(target)),
                                _ => SubgraphRef::Alias(ident(target)),
                            })
                        }
                        _ => NodeKind::Named(ident(inner)),
                    });
                }
                Rule::node_body => {
                    has_body = true;
                    body = self.entries(part);
                }
                _ => {}
            }
        }
        Some(NodeDecl {
            name,
            kind,
            body,
            has_body,
            span: s,
        })
    }

    fn entries(&mut self, p: P) -> Vec<Entry> {
        p.into_inner()
            .filter_map(node_entry_inner)
            .filter_map(|e| self.entry_one(e))
            .collect()
    }

    fn entry_one(&mut self, inner: P) -> Option<Entry> {
        match inner.as_rule() {
            Rule::value_entry => {
                let mut it = inner.into_inner();
                let k = it.next()?;
                let v = it.next()?;
                Some(Entry::Value {
                    key: ident(k),
                    value: self.expr(v),
                })
            }
            Rule::block_entry => {
                let s = span(&inner);
                let mut it = inner.into_inner();
                let key = ident(it.next()?);
                let mut entries = Vec::new();
                for sub in it {
                    entries.extend(self.entry_one(node_entry_inner(sub)?));
                }
                Some(Entry::Block {
                    key,
                    entries,
                    span: s,
                })
            }
            Rule::bad_item => {
                self.bad(&inner, Context::Body);
                None
            }
            _ => None,
        }
    }

    fn edge(&mut self, p: P) -> Option<EdgeStmt> {
        let s = span(&p);
        let mut it = p.into_inner().filter(|x| x.as_rule() != Rule::arrow);
        let ep = it.next()?.into_inner().next()?;
        let from = match ep.as_rule() {
            Rule::join_sources => {
                let js = span(&ep);
                let list = ep.into_inner().next()?;
                Endpoint::Join(NameList {
                    names: list.into_inner().map(ident).collect(),
                    span: js,
                })
            }
            _ => Endpoint::Node(ident(ep)),
        };
        let mut hops = Vec::new();
        for t in it {
            let inner = t.into_inner().next()?;
            // `a -> route` followed by a `{` that did not parse as a route: reported there.
            let end = span(&inner).end;
            if inner.as_str() == "route" && self.src[end..].trim_start().starts_with('{') {
                continue;
            }
            hops.push(match inner.as_rule() {
                Rule::route_block => Target::Route(self.route(inner)?),
                Rule::send_expr => Target::Send(self.send(inner)?),
                _ => Target::Node(ident(inner)),
            });
        }
        Some(EdgeStmt {
            from,
            hops,
            span: s,
        })
    }

    fn route(&mut self, p: P) -> Option<RouteBlock> {
        let s = span(&p);
        let mut arms = Vec::new();
        for arm in p.into_inner().filter(|x| x.as_rule() == Rule::route_arm) {
            let a_span = span(&arm);
            let mut it = arm.into_inner();
            let cond_pair = it.next()?.into_inner().next()?;
            let cond = match cond_pair.as_rule() {
                Rule::else_kw => None,
                _ => Some(self.expr(cond_pair)),
            };
            let targets_pair = it.next()?;
            let mut targets = Vec::new();
            for t in targets_pair.into_inner() {
                let inner = t.into_inner().next()?;
                targets.push(match inner.as_rule() {
                    Rule::send_expr => RouteTarget::Send(self.send(inner)?),
                    _ => RouteTarget::Node(ident(inner)),
                });
            }
            arms.push(RouteArm {
                cond,
                targets,
                span: a_span,
            });
        }
        Some(RouteBlock { arms, span: s })
    }

    fn send(&mut self, p: P) -> Option<SendExpr> {
        let s = span(&p);
        let mut it = p.into_inner().filter(|x| !is_kw(x));
        let node = ident(it.next()?);
        let var = ident(it.next()?);
        let iter = self.expr(it.next()?);
        let payload = self.object(it.next()?);
        Some(SendExpr {
            node,
            var,
            iter,
            payload,
            span: s,
        })
    }

    fn object(&mut self, p: P) -> ObjectLit {
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

    fn string(&mut self, p: P) -> StrLit {
        let s = span(&p);
        let raw = p.as_str().to_string();
        let triple = raw.starts_with("\"\"\"");
        let value = if triple {
            dedent(&raw[3..raw.len() - 3])
        } else {
            unescape(&raw[1..raw.len() - 1])
        };
        StrLit {
            value,
            triple,
            raw,
            span: s,
        }
    }

    fn expr(&mut self, p: P) -> Expr {
        let s = span(&p);
        let pairs = p.into_inner();
        let result = pratt()
            .map_primary(|prim| self_primary(self.src, prim))
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
            self.diags.push(
                Diagnostic::error(
                    "E0003",
                    s,
                    format!(
                        "this expression is nested {d} levels deep; the limit is {MAX_EXPR_DEPTH}"
                    ),
                )
                .label("too deep")
                .help("split it: compute parts in separate `set` entries or nodes"),
            );
            return Expr {
                kind: ExprKind::Null,
                span: s,
            };
        }
        Expr { span: s, ..result }
    }
}

/// Deepest nesting an expression may have (checks, formatting and evaluation recurse on it).
pub const MAX_EXPR_DEPTH: usize = 128;

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

/// Builds a postfix expression (`primary postfix*`).
fn self_primary(src: &str, p: P) -> Expr {
    let mut diags = Vec::new();
    let mut b = Builder {
        src,
        diags: &mut diags,
    };
    let mut it = p.into_inner();
    let Some(first) = it.next() else {
        return Expr {
            kind: ExprKind::Null,
            span: Span::default(),
        };
    };
    let mut e = b.atom(first);
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
                let idx = post.into_inner().next().map(|x| b.expr(x)).unwrap_or(Expr {
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

impl Builder<'_> {
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
                    Err(_) => ExprKind::Float {
                        value: t.parse().unwrap_or(f64::NAN),
                    },
                }
            }
            Rule::duration => {
                let t = p.as_str();
                let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
                let n: u64 = digits.parse().unwrap_or(u64::MAX);
                let ms = match &t[digits.len()..] {
                    "ms" => n,
                    "s" => n.saturating_mul(1000),
                    "m" => n.saturating_mul(60_000),
                    _ => n.saturating_mul(3_600_000),
                };
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

/// The entry a `node_entry` wraps (other pairs are entries already).
fn node_entry_inner(p: P) -> Option<P> {
    match p.as_rule() {
        Rule::node_entry => p.into_inner().next(),
        _ => Some(p),
    }
}

fn is_kw(p: &P) -> bool {
    matches!(
        p.as_rule(),
        Rule::kw_use
            | Rule::kw_as
            | Rule::kw_graph
            | Rule::kw_state
            | Rule::kw_input
            | Rule::kw_output
            | Rule::kw_model
            | Rule::kw_prompt
            | Rule::kw_tools
            | Rule::kw_node
            | Rule::kw_subgraph
            | Rule::kw_route
            | Rule::kw_send
            | Rule::kw_for
            | Rule::kw_in
            | Rule::kw_interrupt
            | Rule::kw_config
    )
}

fn ident(p: P) -> Ident {
    Ident {
        name: p.as_str().to_string(),
        span: span(&p),
    }
}

fn name_list_of(p: P, s: Span) -> NameList {
    let names = p
        .into_inner()
        .filter(|x| x.as_rule() == Rule::ident_list)
        .flat_map(|l| l.into_inner().map(ident).collect::<Vec<_>>())
        .collect();
    NameList { names, span: s }
}

fn type_expr(p: P) -> TypeExpr {
    let s = span(&p);
    let mut optional = false;
    let mut name = Ident {
        name: String::new(),
        span: s,
    };
    let mut arg = None;
    for part in p.into_inner() {
        match part.as_rule() {
            Rule::optional => optional = true,
            Rule::type_base => {
                if let Some(inner) = part.into_inner().next() {
                    match inner.as_rule() {
                        Rule::generic_type => {
                            let mut it = inner.into_inner();
                            if let Some(n) = it.next() {
                                name = ident(n);
                            }
                            arg = it.next().map(|a| Box::new(type_expr(a)));
                        }
                        _ => name = ident(inner),
                    }
                }
            }
            _ => {}
        }
    }
    TypeExpr {
        name,
        arg,
        optional,
        span: s,
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Removes the common indentation of a triple-quoted string and a leading/trailing blank line.
pub fn dedent(s: &str) -> String {
    let body = s.strip_prefix('\n').unwrap_or(s);
    let body = match body.rfind('\n') {
        Some(i) if body[i + 1..].trim().is_empty() => &body[..i],
        _ => body,
    };
    let indent = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
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

fn first_token(text: &str) -> &str {
    let t = text.trim_start();
    let end = t
        .char_indices()
        .find(|(i, c)| c.is_whitespace() || (*i > 0 && !c.is_alphanumeric() && *c != '_'))
        .map_or(t.len(), |(i, _)| i);
    if end == 0 {
        // Two-character operators read as one token (`found `=>``, not `found `=``).
        let two = ["->", "=>", "==", "!=", "<=", ">=", "&&", "||"]
            .into_iter()
            .find(|op| t.starts_with(op));
        &t[..two.map_or_else(|| t.chars().next().map_or(0, char::len_utf8), str::len)]
    } else {
        &t[..end]
    }
}

/// Names a grammar rule the way an author would.
fn describe(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::ident => "a name",
        Rule::expr | Rule::postfix_expr => "an expression",
        Rule::arrow => "`->`",
        Rule::node_kind => "a node kind: llm, tool_executor, set, interrupt, subgraph, or a registered kind",
        Rule::type_expr | Rule::type_base => "a type: string, int, float, bool, json, messages, list<T>, map<T>",
        Rule::string | Rule::plain_string | Rule::triple_string => "a string",
        Rule::object => "`{`",
        Rule::node_body => "a node body `{ … }`",
        Rule::target => "a target: a node, END, `route { … }` or `send …`",
        Rule::route_arm => "a route arm `condition => target` or `else => target`",
        Rule::route_targets | Rule::route_target => "a target node, END or `send …`",
        Rule::endpoint | Rule::join_sources => "a node name or `[a, b]`",
        Rule::field => "a state field `name: type`",
        Rule::private_flag => "`private`",
        Rule::ephemeral_flag => "`ephemeral`",
        Rule::graph_item | Rule::bad_item => {
            "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config"
        }
        Rule::state_block => "`state { … }`",
        Rule::node_decl => "`node name: kind { … }`",
        Rule::edge_stmt => "an edge `a -> b`",
        Rule::model_decl => "`model name = provider { … }`",
        Rule::value_entry | Rule::block_entry | Rule::node_entry => "an entry `key: value` or `key { … }`",
        Rule::interrupt_when => "`before` or `after`",
        Rule::ident_list => "a list of names",
        Rule::use_decl | Rule::graph_decl => "`graph name { … }` or `use \"file.ag\" as name`",
        Rule::EOI => "the end of the file",
        Rule::kw_use => "`use`",
        Rule::kw_as => "`as`",
        Rule::kw_graph => "`graph`",
        Rule::kw_reduce => "`reduce`",
        Rule::kw_for => "`for`",
        Rule::kw_in => "`in`",
        Rule::kw_route => "`route`",
        Rule::kw_send => "`send`",
        Rule::op_eq | Rule::op_ne | Rule::op_lt | Rule::op_le | Rule::op_gt | Rule::op_ge | Rule::op_add
        | Rule::op_sub | Rule::op_mul | Rule::op_div | Rule::op_rem | Rule::op_or | Rule::op_and => "an operator",
        Rule::field_access | Rule::index_access => "`.field` or `[index]`",
        Rule::object_entry => "an entry `key: value`",
        Rule::list => "`[`",
        _ => return None,
    })
}

/// Turns a pest error into a diagnostic; `offset` maps positions of a re-parsed fragment back
/// into the file.
fn pest_error(src: &str, offset: usize, e: &pest::error::Error<Rule>, ctx: Context) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let mut rel = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((a, _)) => a,
    };
    let mut expected: Vec<String> = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives
            .iter()
            .filter_map(|r| describe(*r))
            .map(str::to_string)
            .collect(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    // pest reports only rules; its parse attempts also know the punctuation it expected at the
    // farthest position reached (`:` after a field name, `}` …).
    if let Some(att) = e.parse_attempts() {
        if att.max_position >= rel {
            if att.max_position > rel {
                expected.clear();
            }
            rel = att.max_position;
            for t in att.expected_tokens() {
                let token = t.to_string();
                let is_space = matches!(token.as_str(), " " | "\t" | "\r" | "\n" | "#");
                if !is_space
                    && !token.trim().is_empty()
                    && !token.contains("..")
                    && token != "BUILTIN_RULE"
                {
                    expected.push(format!("`{token}`"));
                }
            }
        }
    }
    // Point at the next token, not at the whitespace or comment before it.
    let mut pos = rel + offset;
    pos += src.get(pos..).map_or(0, leading_trivia);
    let rest = src.get(pos..).unwrap_or("");
    let found = if rest.trim().is_empty() {
        "the end of the file".to_string()
    } else {
        format!("`{}`", first_token(rest))
    };
    expected.sort_unstable();
    expected.dedup();
    group_tokens(&mut expected);
    let what = match expected.len() {
        0 => match ctx {
            Context::Graph => "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config".to_string(),
            Context::State => "a state field `name: type`".to_string(),
            Context::Body => "an entry `key: value` or `key { … }`".to_string(),
            Context::Expr => "an expression".to_string(),
            Context::Top => "`graph name { … }` or `use \"file.ag\" as name`".to_string(),
        },
        1 => expected[0].clone(),
        _ => {
            let (last, init) = expected.split_last().map(|(l, i)| (l.clone(), i.to_vec())).unwrap_or_default();
            format!("{} or {}", init.join(", "), last)
        }
    };
    let len = first_token(rest).len().max(1).min(rest.len().max(1));
    let end = (pos + len).min(src.len());
    Diagnostic::error(
        "E0001",
        Span::new(pos.min(src.len()), end),
        format!("expected {what}, found {found}"),
    )
    .label(format!("expected {what}"))
    .help(context_help(ctx, first_token(rest), &expected))
}

/// A `graph name {` at `at` whose braces never balance, as one error at its `{` (rather than one
/// per line that follows). The first block whose `}` sits at another indentation than its line
/// is pointed at as the likely culprit.
fn unclosed_graph(src: &str, at: usize) -> Option<Diagnostic> {
    let rest = &src[at..];
    let header = rest
        .strip_prefix("graph")
        .filter(|h| h.starts_with(char::is_whitespace))?;
    let open = at + rest.find('{')?;
    let indent = |pos: usize| {
        let line = &src[src[..pos].rfind('\n').map_or(0, |i| i + 1)..];
        line.len() - line.trim_start_matches([' ', '\t']).len()
    };
    let (mut stack, mut suspect) = (Vec::new(), None);
    let b = src.as_bytes();
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'#' => i += src[i..].find('\n').unwrap_or(src.len() - i),
            b'"' if src[i..].starts_with("\"\"\"") => {
                i += 3 + src[i + 3..]
                    .find("\"\"\"")
                    .map_or(src.len() - i - 3, |k| k + 2)
            }
            b'"' => i += 1 + src[i + 1..].find(['"', '\n']).unwrap_or(src.len() - i - 1),
            b'{' => stack.push(i),
            b'}' => {
                let o = stack.pop()?;
                let line_start = src[..i].rfind('\n').map_or(0, |k| k + 1);
                if suspect.is_none()
                    && src[line_start..i].trim().is_empty()
                    && indent(o) != i - line_start
                {
                    suspect = Some(o);
                }
                if stack.is_empty() {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let name = first_token(header);
    let d = Diagnostic::error("E0001", Span::new(open, open + 1), format!("graph `{name}` is never closed"))
        .label("this `{` has no matching `}`")
        .help("add the missing `}` at the end of the graph, or at the end of a block inside it (state, node, set, route …)");
    Some(match suspect {
        Some(o) => d.with_label(
            Span::new(o, o + 1),
            "this block's `}` may be the one missing",
        ),
        None => d,
    })
}

/// The length of the whitespace and comments at the start of `s`.
fn leading_trivia(s: &str) -> usize {
    let mut i = 0;
    loop {
        let t = &s[i..];
        let trimmed = t.trim_start();
        i += t.len() - trimmed.len();
        if !trimmed.starts_with('#') {
            return i;
        }
        i += trimmed.find('\n').unwrap_or(trimmed.len());
    }
}

/// What a syntax error's help says: the shape expected where it happened.
fn context_help(ctx: Context, found: &str, expected: &[String]) -> String {
    if found == ";" {
        return "remove the `;`: items and entries end at the end of the line (or with `,`)".into();
    }
    if expected.iter().any(|e| e == "`->`") && matches!(found, "-" | "=" | ">" | "→") {
        return "an edge is `a -> b`; a chain is `a -> b -> c`".into();
    }
    match ctx {
        Context::Top => match crate::diagnostic::did_you_mean(found, ["graph", "use"]) {
            Some(kw) if kw != found => format!("did you mean `{kw}`?"),
            _ => "a file holds `use \"file.ag\" as name` lines and `graph name { … }`; everything else goes inside the graph".into(),
        },
        Context::Graph => "a graph holds `state { … }`, `node name: kind { … }`, edges `a -> b`, `model`, `prompt`, `tools`, `interrupt before|after a` and `config { … }`".into(),
        Context::State => "a state field is `name: type`, optionally with `= default` and `reduce reducer`, e.g. `count: int = 0`".into(),
        Context::Body => "a node holds entries `key: value` and blocks `key { … }`, e.g. `set { count: count + 1 }`".into(),
        Context::Expr => "an expression is a literal, a channel name, a call `f(x)`, or operators such as `a + b`".into(),
    }
}

/// Replaces families of expected tokens by what they start: an expression, a name, an item.
fn group_tokens(expected: &mut Vec<String>) {
    const EXPR: [&str; 10] = [
        "`\"\"\"`", "`\"`", "`(`", "`-`", "`[`", "`false`", "`not`", "`null`", "`true`", "`{`",
    ];
    const ITEM: [&str; 9] = [
        "`state`",
        "`input`",
        "`output`",
        "`model`",
        "`prompt`",
        "`tools`",
        "`node`",
        "`interrupt`",
        "`config`",
    ];
    let has =
        |set: &[&str], e: &Vec<String>| set.iter().filter(|t| e.iter().any(|x| x == *t)).count();
    if has(&EXPR, expected) >= 4 {
        expected.retain(|x| !EXPR.contains(&x.as_str()) && x != "`_`");
        expected.push("an expression".into());
    }
    if has(&ITEM, expected) >= 4 {
        expected.retain(|x| !ITEM.contains(&x.as_str()) && x != "`[`" && x != "`_`");
        expected.push(
            "an item: state, input, output, model, prompt, tools, node, an edge `a -> b`, interrupt or config".into(),
        );
    }
    if expected.iter().any(|x| x == "`route`") && expected.iter().any(|x| x == "`send`") {
        expected.retain(|x| x != "`route`" && x != "`send`" && x != "`_`");
        expected.push("a target: a node, END, `route { … }` or `send …`".into());
    }
    if let Some(i) = expected.iter().position(|x| x == "`_`") {
        expected[i] = "a name".into();
    }
    expected.sort_unstable();
    expected.dedup();
}
