//! Hover, go to definition, completion and formatting over one document's text.

use crate::position::LineIndex;
use crate::symbols::{self, Def, DefKind, Target};
use agentgraph_dsl::registry::COMMON_ENTRIES;
use agentgraph_dsl::Registry;
use lsp_types::{
    CompletionItem, CompletionItemKind, Hover, HoverContents, Location, MarkupContent, MarkupKind,
    Position, Range, TextEdit, Url,
};
use std::path::Path;

/// The language's keywords, for completion.
pub const KEYWORDS: &[&str] = &[
    "graph",
    "use",
    "as",
    "state",
    "input",
    "output",
    "model",
    "prompt",
    "tools",
    "node",
    "reduce",
    "private",
    "ephemeral",
    "route",
    "send",
    "for",
    "in",
    "else",
    "START",
    "END",
    "interrupt",
    "before",
    "after",
    "config",
    "subgraph",
    "mcp",
    "true",
    "false",
    "null",
    "and",
    "or",
    "not",
];

fn resolve(reg: &Registry, text: &str, offset: usize) -> Option<(Range, Target)> {
    let file = agentgraph_dsl::parse(text).file?;
    let is_kind = |k: &str| reg.kinds.contains_key(k) || k == "subgraph";
    let is_function = |f: &str| reg.extensions.signature(f).is_some();
    let (span, target) = symbols::resolve(text, &file, offset, &is_kind, &is_function)?;
    Some((LineIndex::new(text).range(span), target))
}

/// Markdown describing kind `name`.
fn kind_doc(reg: &Registry, name: &str) -> String {
    let Some(k) = reg.kinds.get(name) else {
        return format!("**{name}** (node kind)");
    };
    let entries: Vec<String> = k
        .entries
        .iter()
        .chain(COMMON_ENTRIES)
        .map(|e| {
            let mut s = format!("`{}`", e.name);
            if e.block {
                s.push_str(" { … }");
            }
            if e.required {
                s.push_str(" (required)");
            }
            s
        })
        .collect();
    format!(
        "**{name}** (node kind)\n\n{}\n\nentries: {}",
        k.doc,
        entries.join(", ")
    )
}

fn def_doc(reg: &Registry, d: &Def) -> String {
    let what = match d.kind {
        DefKind::Channel => "channel",
        DefKind::Node => "node",
        DefKind::Prompt => "prompt",
        DefKind::Model => "model",
        DefKind::Tools => "tool set",
        DefKind::Use => "imported graph",
    };
    let mut s = format!("**{}** ({what})\n\n", d.name);
    match d.kind {
        DefKind::Channel | DefKind::Model | DefKind::Tools | DefKind::Use => {
            let (first, rest) = d.detail.split_once("\n\n").unwrap_or((&d.detail, ""));
            s.push_str(&format!("```\n{first}\n```\n\n{rest}"));
        }
        DefKind::Prompt => s.push_str(&d.detail),
        DefKind::Node => {
            s.push_str(&format!("```\n{}\n```", d.detail));
            if let Some(k) = d.extra.as_deref().and_then(|k| reg.kinds.get(k)) {
                s.push_str(&format!("\n\n{}", k.doc));
            }
        }
    }
    s.trim_end().to_string()
}

/// The hover at `pos`.
pub fn hover(reg: &Registry, text: &str, pos: Position) -> Option<Hover> {
    let offset = LineIndex::new(text).offset(pos);
    let (range, target) = resolve(reg, text, offset)?;
    let value = match target {
        Target::Def(d) => def_doc(reg, &d),
        Target::Kind(k) => kind_doc(reg, &k),
        Target::Function(f) => {
            let sig = reg.extensions.signature(&f)?;
            format!("**{f}**() (function)\n\n{}", sig.doc)
        }
        Target::Path(p) => format!("file `{p}`"),
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: Some(range),
    })
}

/// The definition of what is at `pos`; `path` is the document's file (for relative paths).
pub fn definition(
    reg: &Registry,
    uri: &Url,
    path: Option<&Path>,
    text: &str,
    pos: Position,
) -> Option<Location> {
    let offset = LineIndex::new(text).offset(pos);
    let (_, target) = resolve(reg, text, offset)?;
    let file_location = |rel: &str| {
        let dir = path?.parent()?;
        let url = Url::from_file_path(dir.join(rel)).ok()?;
        Some(Location::new(url, Range::default()))
    };
    match target {
        Target::Def(d) if d.kind == DefKind::Use => d.extra.as_deref().and_then(file_location),
        Target::Def(d) => Some(Location::new(
            uri.clone(),
            LineIndex::new(text).range(d.name_span),
        )),
        Target::Path(p) => file_location(&p),
        Target::Kind(_) | Target::Function(_) => None,
    }
}

fn item(label: &str, kind: CompletionItemKind, detail: String, rank: u8) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: (!detail.is_empty()).then_some(detail),
        sort_text: Some(format!("{rank}{label}")),
        ..CompletionItem::default()
    }
}

/// Completions at `pos`: entry keys of the node being written first, then the file's names,
/// kinds, functions and keywords.
pub fn completion(reg: &Registry, text: &str, pos: Position) -> Vec<CompletionItem> {
    let offset = LineIndex::new(text).offset(pos);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    let mut out = Vec::new();
    // After `node name:` only kinds fit.
    let after_colon = before
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .trim_end();
    if before.trim_start().starts_with("node ") && after_colon.ends_with(':') {
        for (name, k) in &reg.kinds {
            out.push(item(name, CompletionItemKind::CLASS, k.doc.clone(), 0));
        }
        out.push(item(
            "subgraph",
            CompletionItemKind::CLASS,
            String::new(),
            0,
        ));
        return out;
    }
    let file = agentgraph_dsl::parse(text).file;
    let graph = file.as_ref().and_then(|f| symbols::graph_at(f, offset));
    if let Some(n) = graph.and_then(|g| symbols::node_at(g, offset)) {
        if let Some(k) = n.kind_name().and_then(|k| reg.kinds.get(&k)) {
            for e in k.entries.iter().chain(COMMON_ENTRIES) {
                out.push(item(e.name, CompletionItemKind::PROPERTY, String::new(), 0));
            }
        }
    }
    if let (Some(f), Some(g)) = (&file, graph) {
        for d in symbols::definitions(f, g) {
            let kind = match d.kind {
                DefKind::Channel => CompletionItemKind::FIELD,
                DefKind::Node => CompletionItemKind::CLASS,
                DefKind::Use => CompletionItemKind::MODULE,
                _ => CompletionItemKind::VARIABLE,
            };
            let first = d.detail.lines().next().unwrap_or_default().to_string();
            out.push(item(&d.name, kind, first, 1));
        }
    }
    for name in reg.extensions.function_names() {
        let doc = reg
            .extensions
            .signature(name)
            .map(|s| s.doc)
            .unwrap_or_default();
        out.push(item(name, CompletionItemKind::FUNCTION, doc, 2));
    }
    for (name, k) in &reg.kinds {
        out.push(item(name, CompletionItemKind::CLASS, k.doc.clone(), 3));
    }
    for kw in KEYWORDS {
        out.push(item(kw, CompletionItemKind::KEYWORD, String::new(), 4));
    }
    out
}

/// The edits formatting the document: none when it is formatted or does not parse.
pub fn formatting(text: &str) -> Vec<TextEdit> {
    match agentgraph_dsl::fmt::format_source(text) {
        Ok(formatted) if formatted != text => {
            vec![TextEdit::new(LineIndex::new(text).whole(), formatted)]
        }
        _ => Vec::new(),
    }
}
