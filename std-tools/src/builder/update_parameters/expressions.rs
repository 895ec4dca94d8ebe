//! Pure post-processing of the parameters a model returns: expression-prefix fixing, `$fromAI`
//! detection and the diff of top-level keys.

use serde_json::{Map, Value};

/// Parameter keys whose strings are program source, never n8n expressions: `{{` inside them
/// is code (template literals, Jinja-like strings) and must not be prefixed.
const CODE_KEYS: &[&str] = &["jsCode", "pythonCode", "functionCode", "functionItemCode"];

/// Adds the missing `=` prefix to every string that is meant as an n8n expression and returns
/// the paths fixed (`url`, `assignments.assignments[0].value`), in visiting order.
///
/// Rules (n8n's `fixExpressionPrefixes`, narrowed to avoid breaking JSON text):
/// * a string containing `{{` followed later by `}}` and not starting with `=` gets `=` in
///   front (`"{{ $json.a }}"` → `"={{ $json.a }}"`, `"Hi {{ $json.n }}"` →
///   `"=Hi {{ $json.n }}"`); surrounding whitespace of a string that is one `{{ … }}` block is
///   dropped;
/// * a string that is one single-brace block starting with `$` (`"{ $json.a }"`) becomes
///   `"={{ $json.a }}"` (n8n rewrites every `{ … }` string, which would also turn JSON bodies
///   into broken expressions; only the `$…` form is clearly a botched expression);
/// * a string that is exactly a bare `$fromAI(…)` call becomes `"={{ $fromAI(…) }}"`.
///
/// Strings under code keys (`jsCode`, `pythonCode`, `functionCode`, `functionItemCode`) are
/// left alone.
pub fn fix_expression_prefixes(value: &mut Value) -> Vec<String> {
    let mut fixed = Vec::new();
    fix_at(value, String::new(), &mut fixed);
    fixed
}

fn fix_at(value: &mut Value, path: String, fixed: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let Some(new) = fix_string(s) {
                *s = new;
                fixed.push(path);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                fix_at(item, format!("{path}[{i}]"), fixed);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if CODE_KEYS.contains(&k.as_str()) && v.is_string() {
                    continue;
                }
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                fix_at(v, child, fixed);
            }
        }
        _ => {}
    }
}

/// The fixed form of one string, `None` when it needs no fix.
fn fix_string(s: &str) -> Option<String> {
    if s.starts_with('=') {
        return None;
    }
    let t = s.trim();
    if let Some(open) = s.find("{{") {
        if s[open + 2..].contains("}}") {
            let whole_block =
                t.starts_with("{{") && t.ends_with("}}") && t[2..t.len() - 2].find("{{").is_none();
            return Some(if whole_block {
                format!("={t}")
            } else {
                format!("={s}")
            });
        }
        return None;
    }
    if t.len() > 2 && t.starts_with('{') && t.ends_with('}') {
        let inner = t[1..t.len() - 1].trim();
        if inner.starts_with('$') && !inner.contains('{') && !inner.contains('}') {
            return Some(format!("={{{{ {inner} }}}}"));
        }
        return None;
    }
    if is_bare_from_ai_call(t) {
        return Some(format!("={{{{ {t} }}}}"));
    }
    None
}

/// Whether `t` is exactly one `$fromAI(…)` call (balanced parentheses, nothing after).
fn is_bare_from_ai_call(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    if !lower.starts_with("$fromai(") || !t.ends_with(')') {
        return false;
    }
    let mut depth = 0i32;
    for (i, c) in t.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && i != t.len() - 1 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// The paths of every string that uses `$fromAI(` (any casing n8n accepts: `$fromAI`,
/// `$fromAi`, `$fromai`).
pub fn find_from_ai(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    find_at(value, String::new(), &mut out);
    out
}

fn find_at(value: &Value, path: String, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.to_ascii_lowercase().contains("$fromai(") => out.push(path),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                find_at(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                find_at(v, child, out);
            }
        }
        _ => {}
    }
}

/// Whether a node type accepts `$fromAI` expressions: nodes that run as AI tools, i.e. the
/// `…Tool` variants (`n8n-nodes-base.gmailTool`) and the LangChain `tool…` nodes
/// (`toolWorkflow`, `toolCode`, `toolHttpRequest`, …): [`Catalogue::is_tool_type`], the
/// predicate the validator uses too.
///
/// [`Catalogue::is_tool_type`]: crate::catalogue::Catalogue::is_tool_type
pub fn allows_from_ai(node_type: &str) -> bool {
    crate::catalogue::Catalogue::is_tool_type(node_type)
}

/// The top-level parameter keys an update added, modified and removed (each sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedKeys {
    /// Keys only in the new parameters.
    pub added: Vec<String>,
    /// Keys in both with different values.
    pub modified: Vec<String>,
    /// Keys only in the old parameters.
    pub removed: Vec<String>,
}

impl ChangedKeys {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// `added a, b; modified c; removed d` (parts without keys left out; `no change` when
    /// empty).
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (label, keys) in [
            ("added", &self.added),
            ("modified", &self.modified),
            ("removed", &self.removed),
        ] {
            if !keys.is_empty() {
                parts.push(format!("{label} {}", keys.join(", ")));
            }
        }
        if parts.is_empty() {
            "no change".into()
        } else {
            parts.join("; ")
        }
    }
}

/// Compares two parameter objects key by key (top level; a nested difference marks its
/// top-level key as modified).
pub fn changed_keys(old: &Map<String, Value>, new: &Map<String, Value>) -> ChangedKeys {
    let mut c = ChangedKeys::default();
    for (k, v) in new {
        match old.get(k) {
            None => c.added.push(k.clone()),
            Some(o) if o != v => c.modified.push(k.clone()),
            Some(_) => {}
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            c.removed.push(k.clone());
        }
    }
    c.added.sort();
    c.modified.sort();
    c.removed.sort();
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefixes_are_fixed() {
        let mut v = json!({
            "url": "{{ $json.url }}",
            "ok": "={{ $json.a }}",
            "plain": "hello",
            "mixed": "Hi {{ $json.name }}!",
            "padded": "  {{ $json.x }} ",
            "single": "{ $json.city }",
            "jsonText": "{\"a\": 1}",
            "bare": "$fromAI('to', 'recipient')",
            "wrapped": "{{ $fromAI('subject') }}",
            "open": "{{ not closed",
            "jsCode": "return [{ json: { a: `{{x}}` } }];",
            "list": [{"value": "{{ $now }}"}],
            "n": 3
        });
        let paths = fix_expression_prefixes(&mut v);
        assert_eq!(v["url"], "={{ $json.url }}");
        assert_eq!(v["ok"], "={{ $json.a }}");
        assert_eq!(v["plain"], "hello");
        assert_eq!(v["mixed"], "=Hi {{ $json.name }}!");
        assert_eq!(v["padded"], "={{ $json.x }}");
        assert_eq!(v["single"], "={{ $json.city }}");
        assert_eq!(v["jsonText"], "{\"a\": 1}");
        assert_eq!(v["bare"], "={{ $fromAI('to', 'recipient') }}");
        assert_eq!(v["wrapped"], "={{ $fromAI('subject') }}");
        assert_eq!(v["open"], "{{ not closed");
        assert_eq!(v["jsCode"], "return [{ json: { a: `{{x}}` } }];");
        assert_eq!(v["list"][0]["value"], "={{ $now }}");
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            vec![
                "bare",
                "list[0].value",
                "mixed",
                "padded",
                "single",
                "url",
                "wrapped"
            ]
        );
        // Idempotent.
        assert!(fix_expression_prefixes(&mut v).is_empty());
    }

    #[test]
    fn bare_from_ai_detection() {
        assert!(is_bare_from_ai_call("$fromAI('a', 'b (c)')"));
        assert!(!is_bare_from_ai_call("$fromAI('a') + 1"));
        assert!(!is_bare_from_ai_call("$fromAI('a') + $fromAI('b')"));
        assert!(!is_bare_from_ai_call("fromAI('a')"));
    }

    #[test]
    fn from_ai_is_found_and_allowed_only_in_tools() {
        let v = json!({"a": "={{ $fromAI('x') }}", "b": [{"c": "={{ $fromai('y') }}"}], "d": 1});
        assert_eq!(find_from_ai(&v), vec!["a", "b[0].c"]);
        assert!(allows_from_ai("n8n-nodes-base.gmailTool"));
        assert!(!allows_from_ai("n8n-nodes-base.gmail"));
        assert!(allows_from_ai("@n8n/n8n-nodes-langchain.toolWorkflow"));
        assert!(allows_from_ai("@n8n/n8n-nodes-langchain.toolHttpRequest"));
        assert!(!allows_from_ai("@n8n/n8n-nodes-langchain.agent"));
    }

    #[test]
    fn changed_keys_diff() {
        let old = json!({"a": 1, "b": {"x": 1}, "c": "same"});
        let new = json!({"b": {"x": 2}, "c": "same", "d": true});
        let (Value::Object(o), Value::Object(n)) = (old, new) else {
            unreachable!()
        };
        let c = changed_keys(&o, &n);
        assert_eq!(c.added, vec!["d"]);
        assert_eq!(c.modified, vec!["b"]);
        assert_eq!(c.removed, vec!["a"]);
        assert_eq!(c.summary(), "added d; modified b; removed a");
        assert!(changed_keys(&o, &o).is_empty());
        assert_eq!(ChangedKeys::default().summary(), "no change");
    }
}
