//! Rules over the text of parameters: expressions referencing missing nodes, `$fromAI` outside
//! tool nodes.

use std::collections::BTreeSet;

use super::codes::*;
use super::{walk_parameters, Ctx, Finding};

/// The node names an expression text references with `$('Name')`, `$("Name")`, `` $(`Name`) ``,
/// `$node["Name"]`, `$node['Name']` or `$node.Name`. Dynamic names (template literals with
/// `${…}`, concatenations) are skipped.
pub fn referenced_nodes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('$') {
        let at = i + off;
        let rest = &text[at + 1..];
        if let Some(r) = rest.strip_prefix('(') {
            if let Some((name, _)) = quoted(r.trim_start(), ')') {
                out.push(name);
            }
        } else if let Some(r) = rest.strip_prefix("node") {
            // not `$nodeVersion`, `$node_x`
            let next = r.as_bytes().first().copied();
            if next == Some(b'[') {
                if let Some((name, _)) = quoted(r[1..].trim_start(), ']') {
                    out.push(name);
                }
            } else if next == Some(b'.') {
                let ident: String = r[1..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                    .collect();
                if !ident.is_empty() && !ident.starts_with(|c: char| c.is_ascii_digit()) {
                    out.push(ident);
                }
            }
        }
        i = at + 1;
        if i >= bytes.len() {
            break;
        }
    }
    out
}

/// Reads a quoted string at the start of `s` and checks that `close` follows (after spaces).
fn quoted(s: &str, close: char) -> Option<(String, usize)> {
    let mut chars = s.char_indices();
    let (_, q) = chars.next()?;
    if !matches!(q, '\'' | '"' | '`') {
        return None;
    }
    let mut name = String::new();
    let mut escaped = false;
    for (i, c) in chars {
        if escaped {
            name.push(c);
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if c == q {
            let after = s[i + c.len_utf8()..].trim_start();
            if !after.starts_with(close) {
                return None; // `$('A' + x)`
            }
            if q == '`' && name.contains("${") {
                return None;
            }
            return Some((name, i));
        }
        name.push(c);
    }
    None
}

/// Parameters whose whole text is code that n8n runs with `$(…)`, `$node`, `$fromAI` in scope.
const CODE_PARAMETERS: &[&str] = &["jsCode", "pythonCode", "functionCode", "code"];

/// The parts of a parameter string that n8n evaluates: for an expression (`=` prefix) the
/// `{{ … }}` segments, for a code parameter the whole text, else nothing (plain text such as
/// a request body holding jQuery `$('title')` is not evaluated).
pub(crate) fn evaluated_parts<'t>(path: &str, text: &'t str) -> Vec<&'t str> {
    let last = path.rsplit(['.', ']']).next().unwrap_or(path);
    if CODE_PARAMETERS.contains(&last) {
        return vec![text];
    }
    let Some(body) = text.strip_prefix('=') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        let inner = &rest[start + 2..];
        match inner.find("}}") {
            Some(end) => {
                out.push(&inner[..end]);
                rest = &inner[end + 2..];
            }
            None => {
                out.push(inner);
                break;
            }
        }
    }
    out
}

pub(crate) fn check_references(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        let mut reported: BTreeSet<String> = BTreeSet::new();
        walk_parameters(&n.node.parameters, &mut |path, text| {
            if !text.contains("$(") && !text.contains("$node") {
                return;
            }
            let names = evaluated_parts(path, text)
                .into_iter()
                .flat_map(referenced_nodes)
                .collect::<Vec<_>>();
            for name in names {
                if ctx.has_node(&name) || reported.contains(&name) {
                    continue;
                }
                out.push(
                    Finding::new(
                        EXPRESSION_MISSING_NODE,
                        Some(n.name()),
                        format!(
                            "an expression references node \"{name}\", which is not in the \
                             workflow; use the name of an existing node"
                        ),
                    )
                    .at(path),
                );
                reported.insert(name);
            }
        });
    }
}

/// Whether a text calls `$fromAI(` (n8n also accepts `$fromAi` and `$fromai`).
pub fn uses_from_ai(text: &str) -> bool {
    let mut i = 0;
    while let Some(off) = text[i..].find("$from") {
        let at = i + off;
        let rest = &text[at + 5..];
        let rb = rest.as_bytes();
        if rb.len() >= 2
            && rb[..2].eq_ignore_ascii_case(b"ai")
            && rest[2..].trim_start().starts_with('(')
        {
            return true;
        }
        i = at + 5;
    }
    false
}

pub(crate) fn check_from_ai(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        if n.is_tool() {
            continue;
        }
        let mut first: Option<String> = None;
        walk_parameters(&n.node.parameters, &mut |path, text| {
            if first.is_none() && evaluated_parts(path, text).into_iter().any(uses_from_ai) {
                first = Some(path.to_string());
            }
        });
        if let Some(path) = first {
            out.push(
                Finding::new(
                    FROM_AI_OUTSIDE_TOOL,
                    Some(n.name()),
                    format!(
                        "$fromAI() only works in tool nodes connected to an agent, but `{}` is \
                         not a tool; use a normal expression or the tool variant of the node",
                        n.node.node_type
                    ),
                )
                .at(path),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_references() {
        assert_eq!(
            referenced_nodes("={{ $('Get Data').item.json.x }} {{ $node[\"Old\"].json }}"),
            vec!["Get Data".to_string(), "Old".to_string()]
        );
        assert_eq!(referenced_nodes("$node.Webhook.json"), vec!["Webhook"]);
        assert_eq!(referenced_nodes("$('It\\'s').first()"), vec!["It's"]);
        assert!(referenced_nodes("$(`A${x}`) $('a' + b) $nodeVersion $json $").is_empty());
        assert_eq!(
            evaluated_parts(
                "jsonBody",
                "={ \"f\": \"$('title')\", \"a\": {{ $('A').x }} }"
            ),
            vec![" $('A').x "]
        );
        assert_eq!(evaluated_parts("a.jsCode", "$('B')"), vec!["$('B')"]);
        assert!(evaluated_parts("text", "$('B')").is_empty());
        assert!(uses_from_ai("={{ $fromAI('q', 'desc') }}"));
        assert!(uses_from_ai("{{ $fromai ('q') }}"));
        assert!(!uses_from_ai("$fromAIx $from $fromaé"));
    }
}
