//! Habits from other formats, recognised in lines the parser could not read, with our syntax
//! suggested instead (YAML blocks, LangGraph's Python API, `={{ … }}` expressions, other arrows), and
//! a few common slips (an unclosed string, an operator with nothing after it).

use crate::ast::Span;
use crate::diagnostic::{catalogue as diag, Diagnostic};

fn at(start: usize, text: &str, needle: &str) -> Span {
    let i = text.find(needle).unwrap_or(0);
    Span::new(start + i, start + i + needle.len().max(1))
}

/// A diagnostic for a recognised habit in `text` (which starts at byte `start`), if any.
/// `graph_level` is true for lines directly in a graph body or at the top of the file.
pub fn detect(text: &str, start: usize, graph_level: bool) -> Option<Diagnostic> {
    let t = text.trim();
    let lead = start + (text.len() - text.trim_start().len());
    let line = Span::new(lead, lead + t.len());
    for (call, instead) in [
        (
            "add_conditional_edges",
            "a route: `source -> route { condition => target  else => END }`",
        ),
        (
            "add_edge",
            "an edge: `a -> b` (or `[a, b] -> c` to wait for both)",
        ),
        ("add_node", "a node: `node name: kind { … }`"),
        ("set_entry_point", "an edge from START: `START -> first`"),
        ("set_finish_point", "an edge to END: `last -> END`"),
        ("StateGraph", "a graph: `graph name { state { … } … }`"),
    ] {
        if t.contains(call) {
            return Some(diag::python_api(at(start, text, call), call, instead));
        }
    }
    if t.contains("={{") {
        return Some(diag::foreign_template(at(start, text, "={{")));
    }
    if let Some(d) = slip(text, start) {
        return Some(d);
    }
    if graph_level {
        if let Some(sep) = t
            .find("=>")
            .filter(|_| !t.contains("->") && !t.starts_with("route"))
        {
            let _ = sep;
            return Some(diag::fat_arrow(at(start, text, "=>")));
        }
        if t.starts_with("- ") {
            return Some(diag::yaml_list_item(line));
        }
        let key_value = t
            .split_once(':')
            .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if let Some((key, rest)) = key_value {
            let rest = rest.trim();
            let hint = match key {
                "nodes" | "edges" | "state" | "channels" | "tools" | "models" => {
                    format!("`{key}:` is a YAML-style block; write {} instead", yaml_hint(key))
                }
                _ if rest.is_empty() || !rest.starts_with('{') => format!(
                    "`{key}: …` is a YAML-style key; graph items start with a keyword (state, node, model, prompt, tools, interrupt, config) or are edges `a -> b`"
                ),
                _ => format!("did you mean `node {key} {{ … }}` or `config {{ {key}: … }}`?"),
            };
            return Some(diag::yaml_key(line, key, hint));
        }
        if t.starts_with("elif ") || t.starts_with("if ") {
            return Some(diag::if_statement(line));
        }
    }
    None
}

fn yaml_hint(key: &str) -> &'static str {
    match key {
        "nodes" => "one `node name: kind { … }` item per node",
        "edges" => "one edge per line, `a -> b`",
        "state" | "channels" => "a block `state { name: type = default }`",
        "tools" => "`tools name = [tool_a, tool_b]`",
        _ => "`model name = provider { model: \"…\" }`",
    }
}

/// Common slips in any context: a string not closed on its line, an operator with no operand.
fn slip(text: &str, start: usize) -> Option<Diagnostic> {
    if let Some(q) = unclosed_string(text) {
        let end = text[q..].find('\n').map_or(text.len(), |i| q + i);
        return Some(diag::unclosed_string(Span::new(start + q, start + end)));
    }
    let t = text.trim_start();
    let lead = start + text.len() - t.len();
    const OPERATORS: [&str; 12] = [
        "==", "!=", "<=", ">=", "+", "*", "/", "%", "<", ">", "and", "or",
    ];
    let op = *OPERATORS.iter().find(|op| t.starts_with(**op))?;
    let after = t[op.len()..].chars().next();
    if op.starts_with(char::is_alphabetic) && after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return None; // a name such as `order`
    }
    Some(diag::missing_operand(Span::new(lead, lead + op.len()), op))
}

/// The offset of a `"` that opens a plain string that is not closed on its line.
fn unclosed_string(text: &str) -> Option<usize> {
    let mut open: Option<usize> = None;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match (open, c) {
            (None, '#') => {
                chars.by_ref().find(|(_, c)| *c == '\n');
            }
            (None, '"') if text[i..].starts_with("\"\"\"") => return None,
            (None, '"') => open = Some(i),
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(_), '"') => open = None,
            (Some(q), '\n') => return Some(q),
            _ => {}
        }
    }
    open
}
