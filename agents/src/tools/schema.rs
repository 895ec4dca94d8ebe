//! A small JSON-schema validator for tool arguments, phrased so a model can fix its call.
//!
//! Supports `type` (`object`, `string`, `integer`, `number`, `boolean`, `array`, `null`, or a
//! list of them), `required`, `properties`, `items`, `enum` and `additionalProperties: false`.
//! Other keywords are ignored.

use serde_json::Value;

/// Checks tool arguments against a JSON schema; every problem found, one sentence each
/// (`argument `limit` must be an integer, got "ten"`).
pub fn validate_args(schema: &Value, args: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    check(schema, args, "", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(ty: &str, v: &Value) -> bool {
    match ty {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        other => kind(v) == other,
    }
}

fn article(ty: &str) -> String {
    match ty {
        "integer" | "object" | "array" => format!("an {ty}"),
        "null" => "null".into(),
        _ => format!("a {ty}"),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn subject(path: &str) -> String {
    if path.is_empty() {
        "the arguments".into()
    } else {
        format!("argument `{path}`")
    }
}

fn check(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| fits(t, v)) {
        let expected: Vec<String> = types.iter().map(|t| article(t)).collect();
        errors.push(format!(
            "{} must be {}, got {}",
            subject(path),
            expected.join(" or "),
            short(v)
        ));
        return;
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(v) {
            let list: Vec<String> = options.iter().map(short).collect();
            errors.push(format!(
                "{} must be one of {}, got {}",
                subject(path),
                list.join(", "),
                short(v)
            ));
            return;
        }
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for r in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(r) {
                        errors.push(format!("missing required argument `{}`", join(path, r)));
                    }
                }
            }
            for (k, item) in map {
                let sub = join(path, k);
                match props.and_then(|p| p.get(k)) {
                    Some(s) => check(s, item, &sub, errors),
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        let allowed: Vec<&str> = props
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        errors.push(format!(
                            "unknown argument `{sub}`; allowed: {}",
                            if allowed.is_empty() {
                                "none".into()
                            } else {
                                allowed.join(", ")
                            }
                        ));
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_argument_and_what_to_send() {
        let schema = json!({
            "type": "object",
            "required": ["query"],
            "additionalProperties": false,
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"enum": ["fast", "deep"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opt": {"type": ["number", "null"]}
            }
        });
        assert!(validate_args(&schema, &json!({"query": "x", "limit": 3.0, "opt": null})).is_ok());
        let errs = validate_args(
            &schema,
            &json!({"limit": "ten", "mode": "slow", "tags": ["a", 1], "extra": true}),
        )
        .unwrap_err();
        assert_eq!(
            errs,
            [
                // In the order the arguments came; the allowed ones as the schema lists them.
                "missing required argument `query`",
                "argument `limit` must be an integer, got \"ten\"",
                "argument `mode` must be one of \"fast\", \"deep\", got \"slow\"",
                "argument `tags[1]` must be a string, got 1",
                "unknown argument `extra`; allowed: query, limit, mode, tags, opt",
            ]
        );
        let errs = validate_args(&schema, &json!([1])).unwrap_err();
        assert_eq!(errs, ["the arguments must be an object, got [1]"]);
    }
}
