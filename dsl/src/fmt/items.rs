//! Files, graphs and their items.

use super::expr::{flat_expr, flat_tool, Elem};
use super::Printer;
use crate::ast::*;

enum Top<'a> {
    Use(&'a UseDecl),
    Graph(&'a GraphDecl),
}

impl Printer<'_> {
    /// The `use` declarations and graphs in source order; a blank line before every graph.
    pub(super) fn file(&mut self, f: &File) {
        let mut top: Vec<(usize, Top)> =
            f.uses.iter().map(|u| (u.span.start, Top::Use(u))).collect();
        top.extend(f.graphs.iter().map(|g| (g.span.start, Top::Graph(g))));
        top.sort_by_key(|t| t.0);
        let mut prev_graph = None;
        for (start, t) in top {
            let is_graph = matches!(t, Top::Graph(_));
            self.leading(start, prev_graph.is_some_and(|p| p || is_graph), true);
            self.begin_line();
            match t {
                Top::Use(u) => {
                    self.push(&format!("use {} as {}", u.path.raw, u.alias.name));
                    self.eol(self.end(u.span));
                }
                Top::Graph(g) => self.graph(g),
            }
            prev_graph = Some(is_graph);
        }
    }

    fn graph(&mut self, g: &GraphDecl) {
        self.push(&format!("graph {} ", g.name.name));
        let open = self.find(g.name.span.end, b'{');
        let end = self.end(g.span);
        if g.items.is_empty() && !self.has_comment(open, end) {
            self.push("{}");
        } else {
            self.push("{");
            self.open(open + 1);
            for item in &g.items {
                let (start, span) = self.item_span(item);
                self.leading(start, false, true);
                self.begin_line();
                self.item(item);
                self.eol(self.end(span));
            }
            self.close(end, "}");
        }
        self.eol(end);
    }

    fn item_span(&self, item: &GraphItem) -> (usize, Span) {
        let span = match item {
            GraphItem::State(s) => s.span,
            GraphItem::Input(l) | GraphItem::Output(l) => l.span,
            GraphItem::Model(m) => m.span,
            GraphItem::Prompt(p) => p.span,
            GraphItem::Tools(t) => t.span,
            GraphItem::Node(n) => n.span,
            GraphItem::Edge(e) => e.span,
            GraphItem::Interrupt(i) => i.span,
            // The object's span: the `config` keyword comes just before it.
            GraphItem::Config(o) => {
                let kw = self.end(Span::new(0, o.span.start));
                let start = if self.src[..kw].ends_with("config") {
                    kw - 6
                } else {
                    o.span.start
                };
                return (start, o.span);
            }
        };
        (span.start, span)
    }

    fn item(&mut self, item: &GraphItem) {
        match item {
            GraphItem::State(s) => self.state(s),
            GraphItem::Input(l) => self.names("input", l),
            GraphItem::Output(l) => self.names("output", l),
            GraphItem::Model(m) => {
                self.push(&format!("model {} = {} ", m.name.name, m.provider.name));
                self.object(&m.options);
            }
            GraphItem::Prompt(p) => {
                self.push(&format!("prompt {} = ", p.name.name));
                self.expr(&p.value);
            }
            GraphItem::Tools(t) => self.tools(t),
            GraphItem::Node(n) => self.node(n),
            GraphItem::Edge(e) => self.edge(e),
            GraphItem::Interrupt(i) => {
                let names: Vec<&str> = i.nodes.iter().map(|n| n.name.as_str()).collect();
                let when = if i.after { "after" } else { "before" };
                self.push(&format!("interrupt {when} {}", names.join(", ")));
            }
            GraphItem::Config(o) => {
                self.push("config ");
                self.object(o);
            }
        }
    }

    fn state(&mut self, s: &StateBlock) {
        self.push("state ");
        let open = self.find(s.span.start, b'{');
        let end = self.end(s.span);
        if s.fields.is_empty() && !self.has_comment(open, end) {
            self.push("{}");
            return;
        }
        self.push("{");
        self.open(open + 1);
        for (i, f) in s.fields.iter().enumerate() {
            self.leading(f.span.start, false, true);
            self.begin_line();
            if f.private {
                self.push("private ");
            }
            self.push(&format!("{}: {}", f.name.name, type_text(&f.ty)));
            if let Some(d) = &f.default {
                self.push(" = ");
                self.expr(d);
            }
            if let Some(r) = &f.reducer {
                self.push(&format!(" reduce {}", r.name));
            }
            if f.ephemeral {
                self.push(" ephemeral");
            }
            if s.fields.get(i + 1).is_some_and(|n| n.private) {
                self.push(",");
            }
            self.eol(self.end(f.span));
        }
        self.close(end, "}");
    }

    fn names(&mut self, kw: &str, l: &NameList) {
        self.push(kw);
        self.push(" ");
        let open = self.find(l.span.start, b'{');
        let end = self.end(l.span);
        let flat = match l.names.len() {
            0 => "{}".to_string(),
            _ => format!(
                "{{ {} }}",
                l.names
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let elems: Vec<Elem> = l.names.iter().map(Elem::Name).collect();
        self.flat_or_seq(&flat, ["{", "}"], open, end, &elems);
    }

    fn tools(&mut self, t: &ToolsDecl) {
        self.push(&format!("tools {} = ", t.name.name));
        if let Some(source) = &t.source {
            self.push(&format!("{} ", source.kind.name));
            self.object(&source.options);
            return;
        }
        let open = self.find(t.name.span.end, b'[');
        let end = self.end(t.span);
        let mut flat = String::from("[");
        for (i, tool) in t.tools.iter().enumerate() {
            if i > 0 {
                flat.push_str(", ");
            }
            flat_tool(self.src, tool, &mut flat);
        }
        flat.push(']');
        let elems: Vec<Elem> = t.tools.iter().map(Elem::Tool).collect();
        self.flat_or_seq(&flat, ["[", "]"], open, end, &elems);
    }

    fn node(&mut self, n: &NodeDecl) {
        self.push(&format!("node {}", n.name.name));
        let mut after = n.name.span.end;
        match &n.kind {
            Some(NodeKind::Named(k)) => {
                self.push(&format!(": {}", k.name));
                after = k.span.end;
            }
            Some(NodeKind::Subgraph(SubgraphRef::Path(p))) => {
                self.push(&format!(": subgraph {}", p.raw));
                after = p.span.end;
            }
            Some(NodeKind::Subgraph(SubgraphRef::Alias(a))) => {
                self.push(&format!(": subgraph {}", a.name));
                after = a.span.end;
            }
            None => {}
        }
        if n.has_body {
            self.push(" ");
            let open = self.find(after, b'{');
            self.body(&n.body, open, self.end(n.span));
        }
    }

    /// A node body or block: `{ a: 1 }` when it fits and holds no block or comment.
    fn body(&mut self, entries: &[Entry], open: usize, end: usize) {
        let commented = self.has_comment(open, end);
        if entries.is_empty() && !commented {
            self.push("{}");
            return;
        }
        if !commented && entries.iter().all(|e| matches!(e, Entry::Value { .. })) {
            let mut flat = String::from("{ ");
            for (i, e) in entries.iter().enumerate() {
                if let Entry::Value { key, value } = e {
                    if i > 0 {
                        flat.push_str(", ");
                    }
                    flat.push_str(&key.name);
                    flat.push_str(": ");
                    flat_expr(self.src, value, &mut flat);
                }
            }
            flat.push_str(" }");
            if self.fits(&flat) {
                self.push(&flat);
                return;
            }
        }
        self.push("{");
        self.open(open + 1);
        for e in entries {
            self.leading(e.key().span.start, false, true);
            self.begin_line();
            match e {
                Entry::Value { key, value } => {
                    self.push(&format!("{}: ", key.name));
                    self.expr(value);
                    self.eol(self.end(value.span));
                }
                Entry::Block { key, entries, span } => {
                    self.push(&format!("{} ", key.name));
                    let open = self.find(key.span.end, b'{');
                    let end = self.end(*span);
                    self.body(entries, open, end);
                    self.eol(end);
                }
            }
        }
        self.close(end, "}");
    }

    fn edge(&mut self, e: &EdgeStmt) {
        match &e.from {
            Endpoint::Node(n) => self.push(&n.name),
            Endpoint::Join(l) => {
                let names: Vec<&str> = l.names.iter().map(|n| n.name.as_str()).collect();
                self.push(&format!("[{}]", names.join(", ")));
            }
        }
        for hop in &e.hops {
            self.push(" -> ");
            match hop {
                Target::Node(n) => self.push(&n.name),
                Target::Send(s) => self.send(s),
                Target::Route(r) => self.route(r),
            }
        }
    }

    fn route(&mut self, r: &RouteBlock) {
        self.push("route ");
        let open = self.find(r.span.start, b'{');
        let end = self.end(r.span);
        if r.arms.is_empty() && !self.has_comment(open, end) {
            self.push("{}");
            return;
        }
        let conds: Vec<String> = r.arms.iter().map(|a| self.cond_text(a)).collect();
        let width = conds
            .iter()
            .filter(|c| !c.contains('\n'))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        self.push("{");
        self.open(open + 1);
        for (arm, cond) in r.arms.iter().zip(conds) {
            self.leading(arm.span.start, false, true);
            self.begin_line();
            let pad = width.saturating_sub(cond.chars().count());
            self.push(&format!("{cond}{} => ", " ".repeat(pad)));
            if let [one] = arm.targets.as_slice() {
                self.route_target(one);
            } else {
                self.push("[");
                for (i, t) in arm.targets.iter().enumerate() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.route_target(t);
                }
                self.push("]");
            }
            self.eol(self.end(arm.span));
        }
        self.close(end, "}");
    }

    /// A route condition; one that starts with the word `else` is parenthesized so that it is
    /// not read as the `else` arm.
    fn cond_text(&self, arm: &RouteArm) -> String {
        let Some(c) = &arm.cond else {
            return "else".to_string();
        };
        let mut t = String::new();
        flat_expr(self.src, c, &mut t);
        let word = t
            .strip_prefix("else")
            .is_some_and(|r| !r.starts_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_'));
        if word {
            format!("({t})")
        } else {
            t
        }
    }

    fn route_target(&mut self, t: &RouteTarget) {
        match t {
            RouteTarget::Node(n) => self.push(&n.name),
            RouteTarget::Send(s) => self.send(s),
        }
    }

    fn send(&mut self, s: &SendExpr) {
        self.push(&format!("send {} for {} in ", s.node.name, s.var.name));
        self.expr(&s.iter);
        self.push(" ");
        self.object(&s.payload);
    }
}

fn type_text(t: &TypeExpr) -> String {
    let mut s = t.name.name.clone();
    if let Some(a) = &t.arg {
        s.push('<');
        s.push_str(&type_text(a));
        s.push('>');
    }
    if t.optional {
        s.push('?');
    }
    s
}
