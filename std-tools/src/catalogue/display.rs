//! n8n's `displayOptions` visibility rules and parameter defaults.

use serde_json::{Map, Value};

use super::types::{NodeProperty, NodeTypeDescription};

/// Whether a property with these `displayOptions` is shown for the given (top-level)
/// parameter values and node version. `show`: every key must match one of its values;
/// `hide`: any matching key hides. Keys may be `@version`, `/root` paths or plain names;
/// values may be `{"_cnd": {op: operand}}` conditions.
pub fn is_visible(
    display_options: Option<&Value>,
    parameters: &Map<String, Value>,
    version: f64,
) -> bool {
    let Some(Value::Object(opts)) = display_options else {
        return true;
    };
    if let Some(Value::Object(show)) = opts.get("show") {
        for (key, allowed) in show {
            let actual = lookup(key, parameters, version);
            if !matches_any(actual.as_ref(), allowed) {
                return false;
            }
        }
    }
    if let Some(Value::Object(hide)) = opts.get("hide") {
        for (key, denied) in hide {
            let actual = lookup(key, parameters, version);
            if actual.is_some() && matches_any(actual.as_ref(), denied) {
                return false;
            }
        }
    }
    true
}

/// Whether `property` is visible for these parameters and version.
pub fn property_visible(
    property: &NodeProperty,
    parameters: &Map<String, Value>,
    version: f64,
) -> bool {
    is_visible(property.display_options.as_ref(), parameters, version)
}

fn lookup(key: &str, parameters: &Map<String, Value>, version: f64) -> Option<Value> {
    if key == "@version" {
        return serde_json::Number::from_f64(version).map(Value::Number);
    }
    let key = key.trim_start_matches('/');
    let mut cur = parameters.get(key.split('.').next().unwrap_or(key))?;
    for part in key.split('.').skip(1) {
        cur = cur.get(part)?;
    }
    Some(cur.clone())
}

fn matches_any(actual: Option<&Value>, allowed: &Value) -> bool {
    let list: Vec<&Value> = match allowed {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    list.iter().any(|want| matches_one(actual, want))
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Some(x), Some(y)) if a.is_number() || b.is_number() => (x - y).abs() < 1e-9,
        _ => a == b,
    }
}

fn matches_one(actual: Option<&Value>, want: &Value) -> bool {
    if let Some(Value::Object(cond)) = want.get("_cnd") {
        return cond
            .iter()
            .all(|(op, operand)| condition(op, operand, actual));
    }
    match actual {
        // a multiOptions value matches when it contains the wanted value
        Some(Value::Array(items)) if !want.is_array() => items.iter().any(|i| loose_eq(i, want)),
        Some(a) => loose_eq(a, want),
        None => false,
    }
}

fn condition(op: &str, operand: &Value, actual: Option<&Value>) -> bool {
    let a_num = actual.and_then(num);
    let o_num = num(operand);
    match op {
        "exists" => actual.is_some_and(|a| !a.is_null()),
        "eq" => actual.is_some_and(|a| loose_eq(a, operand)),
        "not" => !actual.is_some_and(|a| loose_eq(a, operand)),
        "gte" => matches!((a_num, o_num), (Some(a), Some(o)) if a >= o - 1e-9),
        "gt" => matches!((a_num, o_num), (Some(a), Some(o)) if a > o + 1e-9),
        "lte" => matches!((a_num, o_num), (Some(a), Some(o)) if a <= o + 1e-9),
        "lt" => matches!((a_num, o_num), (Some(a), Some(o)) if a < o - 1e-9),
        "between" => {
            let from = operand.get("from").and_then(num);
            let to = operand.get("to").and_then(num);
            matches!((a_num, from, to), (Some(a), Some(f), Some(t)) if a >= f - 1e-9 && a <= t + 1e-9)
        }
        "includes" => match (actual, operand) {
            (Some(Value::String(s)), Value::String(o)) => s.contains(o.as_str()),
            (Some(Value::Array(items)), o) => items.iter().any(|i| loose_eq(i, o)),
            _ => false,
        },
        "startsWith" => {
            matches!((actual, operand), (Some(Value::String(s)), Value::String(o)) if s.starts_with(o.as_str()))
        }
        "endsWith" => {
            matches!((actual, operand), (Some(Value::String(s)), Value::String(o)) if s.ends_with(o.as_str()))
        }
        "regex" => false,
        _ => false,
    }
}

/// The node's top-level parameters with the description's defaults filled in for every
/// visible property that is not set (as n8n's `getNodeParameters` does). Properties are
/// visited in order; the first visible property of a name supplies its default.
pub fn parameters_with_defaults(
    desc: &NodeTypeDescription,
    parameters: &Value,
    version: f64,
) -> Map<String, Value> {
    let mut out = match parameters {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    // Two passes so that defaults other properties' visibility depends on are present.
    for _ in 0..2 {
        for p in &desc.properties {
            if out.contains_key(&p.name)
                || matches!(p.kind.as_str(), "notice" | "callout" | "button")
            {
                continue;
            }
            let Some(default) = &p.default else { continue };
            if property_visible(p, &out, version) {
                out.insert(p.name.clone(), default.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn show_hide_and_conditions() {
        let p = params(json!({"resource": "message", "operation": "send", "tags": ["a", "b"]}));
        let show = json!({"show": {"resource": ["message"], "operation": ["send", "reply"]}});
        assert!(is_visible(Some(&show), &p, 1.0));
        let show = json!({"show": {"resource": ["label"]}});
        assert!(!is_visible(Some(&show), &p, 1.0));
        let hide = json!({"hide": {"operation": ["send"]}});
        assert!(!is_visible(Some(&hide), &p, 1.0));
        let hide = json!({"hide": {"missing": ["x"]}});
        assert!(is_visible(Some(&hide), &p, 1.0));
        let v = json!({"show": {"@version": [{"_cnd": {"gte": 2.1}}]}});
        assert!(is_visible(Some(&v), &p, 2.2));
        assert!(!is_visible(Some(&v), &p, 2.0));
        let v = json!({"show": {"@version": [1.1]}});
        assert!(is_visible(Some(&v), &p, 1.1) && !is_visible(Some(&v), &p, 1.0));
        let b = json!({"show": {"@version": [{"_cnd": {"between": {"from": 1, "to": 2}}}]}});
        assert!(is_visible(Some(&b), &p, 1.5) && !is_visible(Some(&b), &p, 3.0));
        let m = json!({"show": {"tags": ["b"]}});
        assert!(is_visible(Some(&m), &p, 1.0));
        let r = json!({"show": {"/resource": [{"_cnd": {"not": "label"}}]}});
        assert!(is_visible(Some(&r), &p, 1.0));
        assert!(is_visible(None, &p, 1.0));
    }

    #[test]
    fn defaults_follow_visibility() {
        let desc: NodeTypeDescription = match serde_json::from_value(json!({
            "name": "x", "version": [1, 2],
            "properties": [
                {"name": "mode", "type": "options", "default": "a"},
                {"name": "extra", "type": "string", "default": "only-b", "displayOptions": {"show": {"mode": ["b"]}}},
                {"name": "late", "type": "boolean", "default": true, "displayOptions": {"show": {"@version": [2]}}},
                {"name": "note", "type": "callout", "default": ""}
            ]
        })) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let p = parameters_with_defaults(&desc, &json!({}), 1.0);
        assert_eq!(Value::Object(p), json!({"mode": "a"}));
        let p = parameters_with_defaults(&desc, &json!({"mode": "b"}), 2.0);
        assert_eq!(
            Value::Object(p),
            json!({"mode": "b", "extra": "only-b", "late": true})
        );
    }
}
