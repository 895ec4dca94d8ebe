//! Hard-coded secrets in HTTP Request headers/query parameters and Set node fields.

use serde_json::Value;

use super::codes::*;
use super::{Ctx, Finding};

const HTTP_TYPES: &[&str] = &[
    "n8n-nodes-base.httpRequest",
    "n8n-nodes-base.httpRequestTool",
    "@n8n/n8n-nodes-langchain.toolHttpRequest",
];
const SET_TYPE: &str = "n8n-nodes-base.set";

/// (collection parameter, list key, value key) of name/value lists holding headers or query
/// parameters, over the HTTP Request versions and the HTTP Request tool.
const HTTP_LISTS: &[(&str, &str, &str)] = &[
    ("headerParameters", "parameters", "value"),
    ("queryParameters", "parameters", "value"),
    ("headerParametersUi", "parameter", "value"),
    ("queryParametersUi", "parameter", "value"),
    ("parametersHeaders", "values", "value"),
    ("parametersQuery", "values", "value"),
];
const HTTP_JSON: &[&str] = &["jsonHeaders", "jsonQuery"];
const SET_LISTS: &[(&str, &str, &str)] = &[
    ("assignments", "assignments", "value"),
    ("fields", "values", "stringValue"),
    ("values", "string", "value"),
];

/// Whether a header/query/field name says it holds a secret.
pub fn sensitive_name(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    if n.is_empty() || n.contains("maxtoken") || n.ends_with("tokens") {
        return false;
    }
    n == "authorization"
        || n == "auth"
        || n == "key"
        || n.ends_with("token")
        || [
            "apikey",
            "apisecret",
            "password",
            "passwd",
            "secret",
            "accesstoken",
            "authtoken",
            "bearer",
            "privatekey",
            "accesskey",
            "subscriptionkey",
        ]
        .iter()
        .any(|k| n.contains(k))
}

/// The literal part of a parameter value: the expression marker and `{{ … }}` parts removed.
fn literal_part(value: &str) -> String {
    let v = value.strip_prefix('=').unwrap_or(value);
    let mut out = String::new();
    let mut rest = v;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => rest = &rest[start + end + 2..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

fn strip_scheme(s: &str) -> &str {
    if ["bearer", "basic", "token"]
        .iter()
        .any(|w| s.eq_ignore_ascii_case(w))
    {
        return "";
    }
    for p in ["Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "] {
        if let Some(r) = s.strip_prefix(p) {
            return r.trim();
        }
    }
    s
}

/// Whether a value looks like a secret by itself (a bearer/basic credential or a well-known
/// key format), whatever its name.
fn looks_like_secret(literal: &str) -> bool {
    let lower = literal.to_ascii_lowercase();
    let token = |s: &str| s.len() >= 12 && !s.contains(char::is_whitespace);
    if (lower.starts_with("bearer ") || lower.starts_with("basic ")) && token(strip_scheme(literal))
    {
        return true;
    }
    [
        "sk-",
        "sk_live_",
        "ghp_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "AIza",
    ]
    .iter()
    .any(|p| literal.starts_with(p) && token(literal))
}

/// Why `value` under `name` is a hard-coded secret, if it is one.
fn secret_reason(name: &str, value: &str) -> Option<&'static str> {
    let literal = literal_part(value);
    if literal.is_empty() {
        return None;
    }
    let bare = strip_scheme(&literal);
    let lower = bare.to_ascii_lowercase();
    let placeholder = ["your", "here", "insert", "enter", "xxx", "<", "[", "$"]
        .iter()
        .any(|p| lower.contains(p));
    let secret_like = looks_like_secret(&literal);
    if secret_like && !placeholder {
        return Some("a literal token");
    }
    if secret_like || (sensitive_name(name) && bare.chars().count() >= 4) {
        return Some(if placeholder {
            "a placeholder for a secret"
        } else {
            "a literal value"
        });
    }
    None
}

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        let t = n.node.node_type.as_str();
        let (lists, where_) = if HTTP_TYPES.contains(&t) {
            (HTTP_LISTS, "HTTP request")
        } else if t == SET_TYPE {
            (SET_LISTS, "Set field")
        } else {
            continue;
        };
        let mut hit = |path: String, name: &str, value: &str| {
            if let Some(reason) = secret_reason(name, value) {
                out.push(
                    Finding::new(
                        HARDCODED_CREDENTIAL,
                        Some(n.name()),
                        format!(
                            "{where_} `{name}` holds {reason} (API key, token or password) \
                             written into the workflow; store it in n8n credentials (e.g. \
                             Header Auth or Query Auth) instead"
                        ),
                    )
                    .at(path),
                );
            }
        };
        for (param, list, value_key) in lists {
            let Some(items) = n
                .node
                .parameters
                .get(*param)
                .and_then(|v| v.get(*list))
                .and_then(Value::as_array)
            else {
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(value) = item.get(*value_key).and_then(Value::as_str) {
                    hit(format!("{param}.{list}[{i}].{value_key}"), name, value);
                }
            }
        }
        if where_ == "HTTP request" {
            for param in HTTP_JSON {
                let Some(text) = n.node.parameters.get(*param).and_then(Value::as_str) else {
                    continue;
                };
                let body = text.strip_prefix('=').unwrap_or(text);
                if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(body) {
                    for (k, v) in &map {
                        if let Some(s) = v.as_str() {
                            hit(format!("{param}.{k}"), k, s);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        assert!(sensitive_name("Authorization"));
        assert!(sensitive_name("x-api-key"));
        assert!(sensitive_name("api_key"));
        assert!(sensitive_name("access_token"));
        assert!(!sensitive_name("max_tokens"));
        assert!(!sensitive_name("Content-Type"));
        assert_eq!(
            secret_reason("Authorization", "Bearer sk-abcdef123456"),
            Some("a literal token")
        );
        assert_eq!(
            secret_reason("Authorization", "=Bearer {{ $json.t }}"),
            None
        );
        assert_eq!(
            secret_reason("password", "hunter22"),
            Some("a literal value")
        );
        assert_eq!(
            secret_reason("X-Custom", "ghp_abcdefghijklmnop"),
            Some("a literal token")
        );
        assert_eq!(secret_reason("Accept", "application/json"), None);
        assert_eq!(
            secret_reason("Authorization", "Bearer YOUR_API_KEY"),
            Some("a placeholder for a secret")
        );
        assert_eq!(
            secret_reason("Authorization", "=Bearer {{ $json.t }}"),
            None
        );
    }
}
