//! Rewriting node references in expressions when a node is renamed.
//!
//! Forms handled (n8n's): `$('Old')` / `$("Old")`, `$node["Old"]` / `$node['Old']`,
//! `$items("Old")` / `$items('Old')`, and `$node.Old` (only when `Old` is an identifier and is
//! not followed by more identifier characters).

use serde_json::Value;

/// Whether `s` is a JavaScript identifier usable after `$node.` (ASCII letters, digits, `_`,
/// `$`; not starting with a digit).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// `name` as the body of a JavaScript string literal quoted with `q`.
fn quoted(name: &str, q: char) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push(q);
    for c in name.chars() {
        if c == q || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push(q);
    out
}

/// The needles and replacements of one rename, computed once for all strings of a workflow.
pub(crate) struct Renamer {
    /// Substrings one of which a string must contain to need a rewrite.
    bodies: Vec<String>,
    /// `(needle, replacement)` for the quoted forms.
    quoted: Vec<(String, String)>,
    /// `($node.Old, replacement)` when `Old` is an identifier.
    dotted: Option<(String, String)>,
}

impl Renamer {
    pub(crate) fn new(old: &str, new: &str) -> Self {
        let mut bodies = vec![old.to_string()];
        let mut quoted_pairs = Vec::new();
        for q in ['\'', '"'] {
            let (from, to) = (quoted(old, q), quoted(new, q));
            let body = from[1..from.len() - 1].to_string();
            if !bodies.contains(&body) {
                bodies.push(body);
            }
            for prefix in ["$(", "$node[", "$items("] {
                quoted_pairs.push((format!("{prefix}{from}"), format!("{prefix}{to}")));
            }
        }
        let dotted = is_identifier(old).then(|| {
            let replacement = if is_identifier(new) {
                format!("$node.{new}")
            } else {
                format!("$node[{}]", quoted(new, '"'))
            };
            (format!("$node.{old}"), replacement)
        });
        Renamer {
            bodies,
            quoted: quoted_pairs,
            dotted,
        }
    }

    /// The rewritten text, or `None` when nothing changed.
    pub(crate) fn rewrite(&self, text: &str) -> Option<String> {
        if !text.contains('$') || !self.bodies.iter().any(|b| text.contains(b.as_str())) {
            return None;
        }
        let mut out = text.to_string();
        for (needle, replacement) in &self.quoted {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), replacement);
            }
        }
        if let Some((needle, replacement)) = &self.dotted {
            if out.contains(needle.as_str()) {
                let mut result = String::with_capacity(out.len());
                let mut rest = out.as_str();
                while let Some(pos) = rest.find(needle.as_str()) {
                    let after = &rest[pos + needle.len()..];
                    result.push_str(&rest[..pos]);
                    if after.chars().next().is_some_and(is_ident_char) {
                        result.push_str(needle);
                    } else {
                        result.push_str(replacement);
                    }
                    rest = after;
                }
                result.push_str(rest);
                out = result;
            }
        }
        (out != text).then_some(out)
    }

    /// Whether some string inside `value` needs a rewrite.
    pub(crate) fn value_needs(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => self.rewrite(s).is_some(),
            Value::Array(items) => items.iter().any(|v| self.value_needs(v)),
            Value::Object(map) => map.values().any(|v| self.value_needs(v)),
            _ => false,
        }
    }

    /// Rewrites every string inside `value` (recursively).
    pub(crate) fn rewrite_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(changed) = self.rewrite(s) {
                    *s = changed;
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.rewrite_value(v);
                }
            }
            Value::Object(map) => {
                for v in map.values_mut() {
                    self.rewrite_value(v);
                }
            }
            _ => {}
        }
    }
}

/// Replaces every reference to node `old` in one expression or code string by `new`.
/// Returns `None` when nothing changed.
pub fn rename_in_expression(text: &str, old: &str, new: &str) -> Option<String> {
    Renamer::new(old, new).rewrite(text)
}

/// Rewrites references to node `old` in every string inside `value` (recursively).
pub fn rename_in_value(value: &mut Value, old: &str, new: &str) {
    Renamer::new(old, new).rewrite_value(value);
}
