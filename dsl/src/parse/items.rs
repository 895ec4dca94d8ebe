//! Building items: files, graphs, state fields, nodes and their entries, edges, routes and
//! sends.

use super::explain::unclosed_graph;
use super::{span, Builder, Context, Rule, P};
use crate::ast::*;

impl Builder<'_> {
    pub(super) fn file(&mut self, p: P) -> File {
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
                let body = it.next()?;
                let (tools, source) = match body.as_rule() {
                    Rule::tool_source => {
                        let mut bi = body.into_inner();
                        let kind = ident(bi.next()?);
                        let options = self.object(bi.next()?);
                        (Vec::new(), Some(ToolSource { kind, options }))
                    }
                    _ => {
                        let tools = body
                            .into_inner()
                            .filter_map(|t| {
                                let mut ti = t.into_inner();
                                let name = ident(ti.next()?);
                                let options = ti.next().map(|o| self.object(o));
                                Some(ToolRef { name, options })
                            })
                            .collect();
                        (tools, None)
                    }
                };
                GraphItem::Tools(ToolsDecl {
                    name,
                    tools,
                    source,
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
}

/// The entry a `node_entry` wraps (other pairs are entries already).
fn node_entry_inner(p: P) -> Option<P> {
    match p.as_rule() {
        Rule::node_entry => p.into_inner().next(),
        _ => Some(p),
    }
}

pub(super) fn is_kw(p: &P) -> bool {
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

pub(super) fn ident(p: P) -> Ident {
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
