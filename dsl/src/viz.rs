//! Diagrams of graphs: Mermaid, DOT and JSON (`agentgraph viz G [--format mermaid|dot|json]`;
//! the JSON is the structure the server's studio draws, see [`json`]).
//!
//! The diagram is built from the syntax tree rather than the compiled graph, because the tree
//! has what a reader needs and the runtime does not keep: the condition text of each route arm,
//! `send` loops, `interrupt before/after`, node kinds. It follows the compiler's reading of edge
//! chains (see `compile::edge`), so the drawn edges are the ones the runtime gets.
//!
//! What is drawn:
//! * START (a circle), the nodes in declaration order (a node's explicit kind is a second label
//!   line), END (a double circle). `interrupt`-kind nodes are hexagons; `interrupt before/after`
//!   adds a line to the label; both get the `interrupt` class (Mermaid) or a yellow fill (DOT).
//! * static edges as plain arrows, in source order;
//! * waiting edges `[a, b] -> c` through a small `join` point: dotted edges labelled `wait` from
//!   each source, then one arrow to the target;
//! * routes as one dashed edge per arm target, labelled with the condition as written (`else`);
//! * `send n for x in xs { … }` as a thick edge labelled `send for x in xs`;
//! * subgraph nodes as nested clusters holding the child graph (its own START and END). Node ids
//!   are prefixed with the subgraph node's id (`research__count`), so names never collide. In
//!   Mermaid the parent's edges attach to the cluster; in DOT (`compound=true`) they go to the
//!   child's START / leave its END, clipped at the cluster border with `lhead` / `ltail`.
//!
//! Output is deterministic (source order throughout), suitable for snapshot tests.

use crate::ast::*;
use crate::project::{Project, Source};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A diagram language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Mermaid `flowchart TD` (paste into Markdown as a `mermaid` code block).
    #[default]
    Mermaid,
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
    /// The diagram's structure as JSON, for programs that lay it out themselves ([`json`]).
    Json,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "mermaid" | "mmd" => Ok(Format::Mermaid),
            "dot" | "graphviz" | "gv" => Ok(Format::Dot),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "unknown diagram format `{other}`: expected `mermaid`, `dot` or `json`"
            )),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Mermaid => "mermaid",
            Format::Dot => "dot",
            Format::Json => "json",
        })
    }
}

/// Draws the project's root graph (the first graph of the root file) with its subgraphs nested.
///
/// Errors when the root file is missing, did not parse, or declares no graph. A subgraph whose
/// file is missing, unparsed or part of a cycle is drawn as a plain node marked `unresolved`.
pub fn render(project: &Project, format: Format) -> Result<String, String> {
    let (name, block) = build(project)?;
    Ok(match format {
        Format::Mermaid => mermaid(&name, &block),
        Format::Dot => dot(&name, &block),
        Format::Json => json::to_value(&name, &block).to_string(),
    })
}

/// The project's root graph as the JSON structure [`json`] describes.
pub fn structure(project: &Project) -> Result<serde_json::Value, String> {
    let (name, block) = build(project)?;
    Ok(json::to_value(&name, &block))
}

/// The root graph's name and its block, subgraphs nested.
fn build(project: &Project) -> Result<(String, Block), String> {
    let src = project
        .root_source()
        .ok_or_else(|| format!("{} was not loaded", project.root.display()))?;
    let ast = src
        .ast
        .as_ref()
        .ok_or_else(|| format!("{} does not parse", src.name))?;
    let g = ast
        .graphs
        .first()
        .ok_or_else(|| format!("{} declares no graph", src.name))?;
    let mut b = Builder {
        project,
        used: RESERVED.split_whitespace().map(String::from).collect(),
        stack: vec![],
    };
    b.stack.push(src.path.clone());
    let block = b.graph(src, g, String::new());
    Ok((g.name.name.clone(), block))
}

/// Words Mermaid reads as syntax; never used as ids.
const RESERVED: &str =
    "end graph subgraph flowchart style class classDef click linkStyle direction default call href";

pub mod json;

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Start,
    End,
    Plain,
    /// A plain node with `interrupt before/after`.
    Marked,
    /// An `interrupt`-kind node.
    Hexagon,
    Join,
}

enum Item {
    /// A node: its id, label lines and shape.
    Node(String, Vec<String>, Shape),
    /// A subgraph node: its id, label lines and the child graph.
    Cluster(String, Vec<String>, Block),
}

/// Where an edge attaches: a node, or a cluster (with its START and END ids).
#[derive(Clone)]
struct Ref {
    id: String,
    cluster: Option<(String, String)>,
}

#[derive(Clone, Copy, PartialEq)]
enum EdgeKind {
    Static,
    Wait,
    Route,
    Send,
}

struct VEdge {
    from: Ref,
    to: Ref,
    kind: EdgeKind,
    label: Option<String>,
}

/// One graph: its items (START, nodes, clusters, END, join points), edges, START and END ids.
#[derive(Default)]
struct Block {
    items: Vec<Item>,
    edges: Vec<VEdge>,
    ends: (String, String),
    /// The channel each `interrupt`-kind node writes the answer to, by node id.
    writes: BTreeMap<String, String>,
}

impl Block {
    fn node(&mut self, id: &str, lines: Vec<String>, shape: Shape) -> Ref {
        self.items.push(Item::Node(id.to_string(), lines, shape));
        Ref {
            id: id.to_string(),
            cluster: None,
        }
    }

    fn edge(&mut self, from: &Ref, to: &Ref, kind: EdgeKind, label: Option<String>) {
        self.edges.push(VEdge {
            from: from.clone(),
            to: to.clone(),
            kind,
            label,
        });
    }
}

struct Builder<'p> {
    project: &'p Project,
    used: BTreeSet<String>,
    stack: Vec<PathBuf>,
}

/// The graph being built: its block, node references by name, id prefix, source text.
struct Scope<'a> {
    block: Block,
    refs: BTreeMap<String, Ref>,
    prefix: String,
    text: &'a str,
}

impl<'p> Builder<'p> {
    /// A fresh id from `want`: only `[A-Za-z0-9_]`, suffixed `_2`, `_3`… when taken.
    fn alloc(&mut self, want: &str) -> String {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let base: String = want.chars().map(|c| if ok(c) { c } else { '_' }).collect();
        let (mut id, mut n) = (base.clone(), 2);
        while id.is_empty() || self.used.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        self.used.insert(id.clone());
        id
    }

    fn graph(&mut self, src: &Source, g: &GraphDecl, prefix: String) -> Block {
        let ends = (
            self.alloc(&format!("{prefix}START")),
            self.alloc(&format!("{prefix}END")),
        );
        let (start, end) = ends.clone();
        let block = Block {
            ends,
            ..Block::default()
        };
        let mut sc = Scope {
            block,
            refs: BTreeMap::new(),
            prefix,
            text: &src.text,
        };
        let start = sc.block.node(&start, vec!["START".into()], Shape::Start);
        sc.refs.insert("START".into(), start);
        let mut marks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for item in &g.items {
            if let GraphItem::Interrupt(i) = item {
                let when = if i.after {
                    "interrupt after"
                } else {
                    "interrupt before"
                };
                for n in &i.nodes {
                    marks.entry(&n.name).or_default().push(when.into());
                }
            }
        }
        for item in &g.items {
            let GraphItem::Node(n) = item else { continue };
            let name = n.name.name.as_str();
            if sc.refs.contains_key(name) || name == "END" {
                continue;
            }
            let id = self.alloc(&format!("{}{name}", sc.prefix));
            let mark = marks.remove(name).unwrap_or_default();
            let mut lines = vec![name.to_string()];
            let shape = match &n.kind {
                Some(NodeKind::Subgraph(r)) => {
                    if let Some((csrc, cg)) = self.child(src, r) {
                        let block = self.graph(csrc, cg, format!("{id}__"));
                        self.stack.pop();
                        let cluster = Some(block.ends.clone());
                        lines.push(format!("subgraph {}", cg.name.name));
                        lines.extend(mark);
                        sc.block.items.push(Item::Cluster(id.clone(), lines, block));
                        sc.refs.insert(name.into(), Ref { id, cluster });
                        continue;
                    }
                    lines.push("subgraph (unresolved)".into());
                    Shape::Plain
                }
                Some(NodeKind::Named(k)) => {
                    lines.push(format!("({})", k.name));
                    if k.name == "interrupt" {
                        if let Some(Expr {
                            kind: ExprKind::Name { name },
                            ..
                        }) = n.value("write")
                        {
                            sc.block.writes.insert(id.clone(), name.name.clone());
                        }
                        Shape::Hexagon
                    } else {
                        Shape::Plain
                    }
                }
                None => Shape::Plain,
            };
            let shape = if shape == Shape::Plain && !mark.is_empty() {
                Shape::Marked
            } else {
                shape
            };
            lines.extend(mark);
            let r = sc.block.node(&id, lines, shape);
            sc.refs.insert(name.into(), r);
        }
        let end = sc.block.node(&end, vec!["END".into()], Shape::End);
        sc.refs.insert("END".into(), end);
        for item in &g.items {
            if let GraphItem::Edge(e) = item {
                self.edge(&mut sc, e);
            }
        }
        sc.block
    }

    /// The loaded source and first graph a subgraph reference names; pushes it on the stack.
    fn child(&mut self, src: &Source, r: &SubgraphRef) -> Option<(&'p Source, &'p GraphDecl)> {
        let rel = match r {
            SubgraphRef::Path(p) => &p.value,
            SubgraphRef::Alias(a) => {
                let uses = &src.ast.as_ref()?.uses;
                &uses.iter().find(|u| u.alias.name == a.name)?.path.value
            }
        };
        let target = src
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join(rel);
        let key = std::fs::canonicalize(&target).unwrap_or(target);
        if self.stack.contains(&key) {
            return None;
        }
        let project: &'p Project = self.project;
        let csrc = project.sources.get(&key)?;
        let g = csrc.ast.as_ref()?.graphs.first()?;
        self.stack.push(key);
        Some((csrc, g))
    }

    fn node_ref(&mut self, sc: &mut Scope, name: &str) -> Ref {
        if let Some(r) = sc.refs.get(name) {
            return r.clone();
        }
        // Not declared (the checker reports it): draw it anyway.
        let id = self.alloc(&format!("{}{name}", sc.prefix));
        let r = sc.block.node(&id, vec![name.into()], Shape::Plain);
        sc.refs.insert(name.into(), r.clone());
        r
    }

    /// One edge statement, read as `compile::edge` reads it.
    fn edge(&mut self, sc: &mut Scope, e: &EdgeStmt) {
        let mut prev: Vec<Ref> = match &e.from {
            Endpoint::Node(n) => vec![self.node_ref(sc, &n.name)],
            Endpoint::Join(_) => Vec::new(),
        };
        for (i, hop) in e.hops.iter().enumerate() {
            match hop {
                Target::Node(n) => {
                    let to = self.node_ref(sc, &n.name);
                    if let (0, Endpoint::Join(l)) = (i, &e.from) {
                        let id = self.alloc(&format!("{}__join", to.id));
                        let point = sc.block.node(&id, vec!["join".into()], Shape::Join);
                        for s in &l.names {
                            let from = self.node_ref(sc, &s.name);
                            sc.block
                                .edge(&from, &point, EdgeKind::Wait, Some("wait".into()));
                        }
                        sc.block.edge(&point, &to, EdgeKind::Static, None);
                    } else {
                        for p in &prev {
                            sc.block.edge(p, &to, EdgeKind::Static, None);
                        }
                    }
                    prev = vec![to];
                }
                Target::Route(r) => {
                    for arm in &r.arms {
                        let cond = arm
                            .cond
                            .as_ref()
                            .map_or("else".into(), |c| snippet(sc.text, c.span));
                        for t in &arm.targets {
                            let (kind, label) = match t {
                                RouteTarget::Node(_) => (EdgeKind::Route, cond.clone()),
                                RouteTarget::Send(s) => (
                                    EdgeKind::Send,
                                    format!("{cond}: {}", send_label(sc.text, s)),
                                ),
                            };
                            let to = self.node_ref(sc, &t.name().name);
                            for p in &prev {
                                sc.block.edge(p, &to, kind, Some(label.clone()));
                            }
                        }
                    }
                    prev = Vec::new();
                }
                Target::Send(s) => {
                    let to = self.node_ref(sc, &s.node.name);
                    for p in &prev {
                        sc.block
                            .edge(p, &to, EdgeKind::Send, Some(send_label(sc.text, s)));
                    }
                    prev = Vec::new();
                }
            }
        }
    }
}

fn send_label(text: &str, s: &SendExpr) -> String {
    format!("send for {} in {}", s.var.name, snippet(text, s.iter.span))
}

/// The source text of `span` on one line: comments dropped, whitespace runs collapsed.
fn snippet(text: &str, span: Span) -> String {
    let raw = text.get(span.start..span.end).unwrap_or("");
    let (mut out, mut in_str, mut escaped, mut in_comment) = (String::new(), false, false, false);
    for c in raw.chars() {
        in_comment = (in_comment && c != '\n') || (!in_str && !in_comment && c == '#');
        if in_comment {
            continue;
        }
        match (in_str, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_str = !in_str,
            _ => {}
        }
        if !c.is_whitespace() || in_str {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out.trim().to_string()
}

/// Text inside a Mermaid `"…"` label: entities for what Mermaid or HTML would read as syntax.
fn mm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '|' => out.push_str("#124;"),
            '`' => out.push_str("#96;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn mm_lines(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| mm(l))
        .collect::<Vec<_>>()
        .join("<br/>")
}

fn mermaid(name: &str, block: &Block) -> String {
    let mut out = format!("---\ntitle: \"{}\"\n---\nflowchart TD\n", mm(name));
    let mut classes = BTreeSet::new();
    mm_block(block, 1, &mut out, &mut classes);
    for class in classes {
        let style = match class {
            "terminal" => "fill:#eeeeee,stroke:#555555",
            "join" => "fill:#555555,stroke:#555555,color:#ffffff",
            _ => "fill:#fff3cd,stroke:#b58900",
        };
        let _ = writeln!(out, "    classDef {class} {style}");
    }
    out
}

fn mm_block(b: &Block, depth: usize, out: &mut String, classes: &mut BTreeSet<&'static str>) {
    let pad = "    ".repeat(depth);
    for item in &b.items {
        match item {
            Item::Node(id, lines, shape) => {
                let (open, close, class) = match shape {
                    Shape::Start => ("((", "))", "terminal"),
                    Shape::End => ("(((", ")))", "terminal"),
                    Shape::Join => ("((", "))", "join"),
                    Shape::Hexagon => ("{{", "}}", "interrupt"),
                    Shape::Marked => ("[", "]", "interrupt"),
                    Shape::Plain => ("[", "]", ""),
                };
                let _ = write!(out, "{pad}{id}{open}\"{}\"{close}", mm_lines(lines));
                if !class.is_empty() {
                    classes.insert(class);
                    let _ = write!(out, ":::{class}");
                }
                out.push('\n');
            }
            Item::Cluster(id, lines, block) => {
                let _ = writeln!(out, "{pad}subgraph {id} [\"{}\"]", mm_lines(lines));
                mm_block(block, depth + 1, out, classes);
                let _ = writeln!(out, "{pad}end");
            }
        }
    }
    for e in &b.edges {
        let arrow = match e.kind {
            EdgeKind::Static => "-->",
            EdgeKind::Wait | EdgeKind::Route => "-.->",
            EdgeKind::Send => "==>",
        };
        let label = e
            .label
            .as_ref()
            .map(|l| format!("|\"{}\"|", mm(l)))
            .unwrap_or_default();
        let _ = writeln!(out, "{pad}{} {arrow}{label} {}", e.from.id, e.to.id);
    }
}

/// Lines as one DOT double-quoted string (`\n` between lines).
fn dq_lines(lines: &[String]) -> String {
    let esc = |s: &String| {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace(['\n', '\r'], " ")
    };
    format!(
        "\"{}\"",
        lines.iter().map(esc).collect::<Vec<_>>().join("\\n")
    )
}

/// A DOT double-quoted string.
fn dq(s: &str) -> String {
    dq_lines(&[s.to_string()])
}

fn dot(name: &str, block: &Block) -> String {
    let mut out = format!(
        "digraph {} {{\n    compound=true;\n    rankdir=TB;\n    fontname=\"Helvetica\";\n",
        dq(name)
    );
    out.push_str("    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
    out.push_str("    edge [fontname=\"Helvetica\", fontsize=10];\n");
    dot_block(block, 1, &mut out);
    out.push_str("}\n");
    out
}

fn dot_block(b: &Block, depth: usize, out: &mut String) {
    let pad = "    ".repeat(depth);
    const FILL: &str = "style=\"rounded,filled\", fillcolor=";
    for item in &b.items {
        match item {
            Item::Node(id, lines, shape) => {
                let attrs = match shape {
                    Shape::Start => format!("shape=circle, {FILL}\"#eeeeee\""),
                    Shape::End => format!("shape=doublecircle, {FILL}\"#eeeeee\""),
                    Shape::Join => {
                        format!("shape=circle, {FILL}\"#555555\", fontcolor=white, fontsize=9")
                    }
                    Shape::Hexagon => format!("shape=hexagon, {FILL}\"#fff3cd\""),
                    Shape::Marked => format!("{FILL}\"#fff3cd\""),
                    Shape::Plain => String::new(),
                };
                let sep = if attrs.is_empty() { "" } else { ", " };
                let (id, label) = (dq(id), dq_lines(lines));
                let _ = writeln!(out, "{pad}{id} [label={label}{sep}{attrs}];");
            }
            Item::Cluster(id, lines, block) => {
                let _ = writeln!(out, "{pad}subgraph {} {{", dq(&format!("cluster_{id}")));
                let _ = writeln!(
                    out,
                    "{pad}    label={};\n{pad}    style=rounded;",
                    dq_lines(lines)
                );
                dot_block(block, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
    for e in &b.edges {
        let mut attrs = Vec::new();
        let (mut tail, mut head) = (&e.from.id, &e.to.id);
        if let Some((_, end)) = &e.from.cluster {
            attrs.push(format!("ltail={}", dq(&format!("cluster_{tail}"))));
            tail = end;
        }
        if let Some((start, _)) = &e.to.cluster {
            attrs.push(format!("lhead={}", dq(&format!("cluster_{head}"))));
            head = start;
        }
        if let Some(l) = &e.label {
            attrs.push(format!("label={}", dq(l)));
        }
        match e.kind {
            EdgeKind::Static => {}
            EdgeKind::Wait => attrs.push("style=dotted".into()),
            EdgeKind::Route => attrs.push("style=dashed".into()),
            EdgeKind::Send => attrs.push("style=bold".into()),
        }
        let attrs = if attrs.is_empty() {
            String::new()
        } else {
            format!(" [{}]", attrs.join(", "))
        };
        let _ = writeln!(out, "{pad}{} -> {}{attrs};", dq(tail), dq(head));
    }
}
