//! What a file declares and what a name at a place refers to: the shared ground of hover,
//! go to definition and completion.

use agentgraph_dsl::ast::*;
use agentgraph_dsl::fmt::format_expr;

/// What a declared name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    /// A state field.
    Channel,
    /// A node.
    Node,
    /// A `prompt`.
    Prompt,
    /// A `model`.
    Model,
    /// A `tools` set.
    Tools,
    /// A `use … as alias`.
    Use,
}

/// One declaration of a graph.
#[derive(Debug, Clone)]
pub struct Def {
    /// Its name.
    pub name: String,
    /// What it is.
    pub kind: DefKind,
    /// Where the name is written.
    pub name_span: Span,
    /// A one-line summary (`count: int = 0 reduce sum`, `node bump: set`, …).
    pub detail: String,
    /// The node's kind, or the `use`d file's path.
    pub extra: Option<String>,
}

/// What the name under the cursor refers to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A declaration of the file.
    Def(Def),
    /// A node kind.
    Kind(String),
    /// A function.
    Function(String),
    /// A file path written in the file (`use "x.ag"`, `subgraph "x.ag"`, `file("p.md")`).
    Path(String),
}

/// The identifier at or just before byte `offset`, with its span.
pub fn word_at(text: &str, offset: usize) -> Option<(Span, &str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word(c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text[offset..]
        .char_indices()
        .find(|&(_, c)| !is_word(c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then(|| (Span::new(start, end), &text[start..end]))
}

/// The type as written: `list<string>?`.
pub fn type_text(t: &TypeExpr) -> String {
    let mut s = t.name.name.clone();
    if let Some(arg) = &t.arg {
        s = format!("{s}<{}>", type_text(arg));
    }
    if t.optional {
        s.push('?');
    }
    s
}

fn channel_detail(f: &Field) -> String {
    let mut s = String::new();
    if f.private {
        s.push_str("private ");
    }
    s.push_str(&format!("{}: {}", f.name.name, type_text(&f.ty)));
    if let Some(d) = &f.default {
        s.push_str(&format!(" = {}", format_expr(d)));
    }
    let reducer = f.reducer.as_ref().map_or_else(
        || {
            if f.ty.name.name == "messages" {
                "add_messages (default)".to_string()
            } else {
                "replace (default)".to_string()
            }
        },
        |r| r.name.clone(),
    );
    s.push_str(&format!("\n\nreducer: {reducer}"));
    if f.ephemeral {
        s.push_str(", ephemeral");
    }
    s
}

/// Every declaration of graph `g` (and the file's `use`s).
pub fn definitions(file: &File, g: &GraphDecl) -> Vec<Def> {
    let mut out: Vec<Def> = file
        .uses
        .iter()
        .map(|u| Def {
            name: u.alias.name.clone(),
            kind: DefKind::Use,
            name_span: u.alias.span,
            detail: format!("use {} as {}", u.path.raw, u.alias.name),
            extra: Some(u.path.value.clone()),
        })
        .collect();
    for item in &g.items {
        match item {
            GraphItem::State(s) => out.extend(s.fields.iter().map(|f| Def {
                name: f.name.name.clone(),
                kind: DefKind::Channel,
                name_span: f.name.span,
                detail: channel_detail(f),
                extra: None,
            })),
            GraphItem::Node(n) => {
                let kind = n.kind_name();
                out.push(Def {
                    name: n.name.name.clone(),
                    kind: DefKind::Node,
                    name_span: n.name.span,
                    detail: format!(
                        "node {}: {}",
                        n.name.name,
                        kind.as_deref().unwrap_or("(no kind)")
                    ),
                    extra: kind,
                });
            }
            GraphItem::Prompt(p) => out.push(Def {
                name: p.name.name.clone(),
                kind: DefKind::Prompt,
                name_span: p.name.span,
                detail: prompt_detail(p),
                extra: None,
            }),
            GraphItem::Model(m) => out.push(Def {
                name: m.name.name.clone(),
                kind: DefKind::Model,
                name_span: m.name.span,
                detail: format!(
                    "model {} = {} {}",
                    m.name.name,
                    m.provider.name,
                    object_text(&m.options)
                ),
                extra: None,
            }),
            GraphItem::Tools(t) => {
                let what = match &t.source {
                    Some(src) => format!("{} {}", src.kind.name, object_text(&src.options)),
                    None => format!(
                        "[{}]",
                        t.tools
                            .iter()
                            .map(|r| r.name.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                out.push(Def {
                    name: t.name.name.clone(),
                    kind: DefKind::Tools,
                    name_span: t.name.span,
                    detail: format!("tools {} = {what}", t.name.name),
                    extra: None,
                });
            }
            _ => {}
        }
    }
    out
}

fn object_text(o: &ObjectLit) -> String {
    let entries: Vec<String> = o
        .entries
        .iter()
        .map(|(k, v)| format!("{}: {}", k.name, format_expr(v)))
        .collect();
    format!("{{ {} }}", entries.join(", "))
}

fn prompt_detail(p: &PromptDecl) -> String {
    match &p.value.kind {
        ExprKind::Str { lit } => {
            let lines: Vec<&str> = lit.value.lines().take(12).collect();
            let more = if lit.value.lines().count() > 12 {
                "\n…"
            } else {
                ""
            };
            format!(
                "prompt {}\n\n```\n{}{more}\n```",
                p.name.name,
                lines.join("\n")
            )
        }
        _ => format!("prompt {} = {}", p.name.name, format_expr(&p.value)),
    }
}

/// The graph of `file` around `offset` (else its first).
pub fn graph_at(file: &File, offset: usize) -> Option<&GraphDecl> {
    file.graphs
        .iter()
        .find(|g| g.span.start <= offset && offset <= g.span.end)
        .or_else(|| file.graphs.first())
}

/// The node whose declaration holds `offset`.
pub fn node_at(g: &GraphDecl, offset: usize) -> Option<&NodeDecl> {
    g.items.iter().find_map(|item| match item {
        GraphItem::Node(n) if n.span.start <= offset && offset <= n.span.end => Some(n),
        _ => None,
    })
}

fn in_span(s: Span, offset: usize) -> bool {
    s.start <= offset && offset <= s.end
}

/// A path literal of the file at `offset`.
fn path_at(file: &File, g: &GraphDecl, offset: usize) -> Option<String> {
    if let Some(u) = file.uses.iter().find(|u| in_span(u.path.span, offset)) {
        return Some(u.path.value.clone());
    }
    g.items.iter().find_map(|item| match item {
        GraphItem::Node(NodeDecl {
            kind: Some(NodeKind::Subgraph(SubgraphRef::Path(p))),
            ..
        }) if in_span(p.span, offset) => Some(p.value.clone()),
        GraphItem::Prompt(p) if in_span(p.value.span, offset) => match &p.value.kind {
            ExprKind::Call { func, args } if func.name == "file" => {
                args.first().and_then(|a| match &a.kind {
                    ExprKind::Str { lit } => Some(lit.value.clone()),
                    _ => None,
                })
            }
            _ => None,
        },
        _ => None,
    })
}

/// What the text at `offset` refers to, given the kinds and functions there are.
pub fn resolve(
    text: &str,
    file: &File,
    offset: usize,
    is_kind: &dyn Fn(&str) -> bool,
    is_function: &dyn Fn(&str) -> bool,
) -> Option<(Span, Target)> {
    let g = graph_at(file, offset)?;
    if let Some(p) = path_at(file, g, offset) {
        let (span, _) = word_at(text, offset).unwrap_or((Span::new(offset, offset), ""));
        return Some((span, Target::Path(p)));
    }
    let (span, word) = word_at(text, offset)?;
    let defs = definitions(file, g);
    let find = |k: DefKind| defs.iter().find(|d| d.kind == k && d.name == word).cloned();
    // The kind written after `node name:`, and a subgraph's alias.
    for item in &g.items {
        if let GraphItem::Node(n) = item {
            match &n.kind {
                Some(NodeKind::Named(k)) if k.span == span => {
                    return Some((span, Target::Kind(k.name.clone())))
                }
                Some(NodeKind::Subgraph(SubgraphRef::Alias(a))) if a.span == span => {
                    return find(DefKind::Use).map(|d| (span, Target::Def(d)));
                }
                _ => {}
            }
        }
    }
    let followed_by_paren = text[span.end..].trim_start().starts_with('(');
    if followed_by_paren && is_function(word) {
        return Some((span, Target::Function(word.to_string())));
    }
    let in_edge = g.items.iter().any(|item| match item {
        GraphItem::Edge(e) => in_span(e.span, offset),
        GraphItem::Interrupt(i) => in_span(i.span, offset),
        _ => false,
    });
    let order: &[DefKind] = if in_edge {
        &[
            DefKind::Node,
            DefKind::Channel,
            DefKind::Prompt,
            DefKind::Model,
            DefKind::Tools,
            DefKind::Use,
        ]
    } else {
        &[
            DefKind::Channel,
            DefKind::Prompt,
            DefKind::Model,
            DefKind::Tools,
            DefKind::Node,
            DefKind::Use,
        ]
    };
    if let Some(d) = order.iter().find_map(|&k| find(k)) {
        return Some((span, Target::Def(d)));
    }
    if is_kind(word) {
        return Some((span, Target::Kind(word.to_string())));
    }
    is_function(word).then(|| (span, Target::Function(word.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_at_and_after_the_cursor() {
        let text = "a -> bump_2 {";
        assert_eq!(word_at(text, 5).map(|w| w.1), Some("bump_2"));
        assert_eq!(word_at(text, 11).map(|w| w.1), Some("bump_2"));
        assert_eq!(word_at(text, 12), None);
    }
}
