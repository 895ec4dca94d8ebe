//! MCP tool schemas made acceptable to both model providers.
//!
//! MCP servers publish full JSON Schema (zod-generated, with `$ref`s, nullable unions, tuples);
//! the Anthropic and OpenAI tool APIs refuse several shapes of it:
//! - the top level must be a plain `type: "object"` schema (no `anyOf`/`oneOf`/`allOf` there);
//! - an array needs `items` that is one schema (not a tuple list, not missing);
//! - `$ref`s into `$defs`/`definitions` are not followed by every provider.
//!
//! [`sanitize`] rewrites a schema into that common subset and keeps its meaning where the
//! subset can hold it: references are inlined (a recursive one becomes an open schema), a
//! union with `null` becomes its other member (the property stays optional), a tuple becomes
//! an array of the members' common type, `const` becomes a one-value `enum`. Descriptions,
//! enums, required lists and defaults are kept.

use serde_json::{json, Map, Value};

/// How deep references are inlined before a recursive one is cut off.
const MAX_REF_DEPTH: usize = 8;

/// Keys dropped everywhere: metadata providers do not need (and some refuse).
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
    "$anchor",
];

/// The schema rewritten for the providers' tool APIs (see the module docs).
pub fn sanitize(schema: &Value) -> Value {
    let defs = definitions(schema);
    let mut out = clean(schema, &defs, 0);
    // The top level: an object schema with properties, whatever came in.
    let obj = match out.as_object_mut() {
        Some(o) => o,
        None => return json!({"type": "object", "properties": {}}),
    };
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(alternatives)) = obj.remove(key) {
            // Merge the alternatives' properties: each stays optional unless all require it.
            merge_alternatives(obj, &alternatives);
        }
    }
    obj.remove("not");
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        obj.insert("type".into(), json!("object"));
    }
    if !obj.get("properties").is_some_and(Value::is_object) {
        obj.insert("properties".into(), json!({}));
    }
    out
}

/// `$defs` and `definitions` of the root, by reference path.
fn definitions(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(items)) = schema.get(key) {
            for (name, def) in items {
                defs.insert(format!("#/{key}/{name}"), def.clone());
            }
        }
    }
    defs
}

fn clean(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let obj = match schema {
        Value::Object(o) => o,
        // `true` / `false` schemas: any value (a `false` property cannot be sent anyway).
        Value::Bool(_) => return json!({}),
        _ => return json!({}),
    };
    if let Some(Value::String(reference)) = obj.get("$ref") {
        let target = defs.get(reference).filter(|_| depth < MAX_REF_DEPTH);
        let mut resolved = match target {
            Some(def) => clean(def, defs, depth + 1),
            None => json!({}),
        };
        // Siblings of `$ref` (a description, say) win over the definition's.
        if let (Some(r), Some(desc)) = (resolved.as_object_mut(), obj.get("description")) {
            r.insert("description".into(), desc.clone());
        }
        return resolved;
    }
    let mut out = Map::new();
    for (key, value) in obj {
        if DROPPED.contains(&key.as_str()) || key == "$ref" {
            continue;
        }
        let cleaned = match key.as_str() {
            "properties" | "patternProperties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), clean(v, defs, depth)))
                        .collect(),
                ),
                _ => json!({}),
            },
            "additionalProperties" => match value {
                Value::Bool(b) => Value::Bool(*b),
                other => clean(other, defs, depth),
            },
            "items" => match value {
                Value::Array(tuple) => tuple_items(tuple, defs, depth),
                other => clean(other, defs, depth),
            },
            "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(alts) => {
                    Value::Array(alts.iter().map(|a| clean(a, defs, depth)).collect())
                }
                _ => continue,
            },
            "const" => {
                out.insert("enum".into(), json!([value.clone()]));
                continue;
            }
            "prefixItems" => {
                if let Value::Array(tuple) = value {
                    out.entry("items")
                        .or_insert_with(|| tuple_items(tuple, defs, depth));
                }
                continue;
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), cleaned);
    }
    collapse_nullable(&mut out);
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.insert("items".into(), json!({}));
    }
    Value::Object(out)
}

/// `type: ["string", "null"]` → `type: "string"`; `anyOf: [{…}, {type: null}]` → the `{…}`.
fn collapse_nullable(out: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = out.get("type") {
        let rest: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        let collapsed = match rest.len() {
            0 => None,
            1 => Some(rest[0].clone()),
            _ => Some(Value::Array(rest)),
        };
        match collapsed {
            Some(t) => out.insert("type".into(), t),
            None => out.remove("type"),
        };
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = out.get(key) else {
            continue;
        };
        let non_null: Vec<&Value> = alts
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if non_null.len() == 1 && alts.len() == 2 {
            let inner = non_null[0].clone();
            out.remove(key);
            if let Value::Object(fields) = inner {
                for (k, v) in fields {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// A tuple (`items: [a, b]` or `prefixItems`) as one item schema: the members' common type,
/// else any value; the description says what each position holds.
fn tuple_items(tuple: &[Value], defs: &Map<String, Value>, depth: usize) -> Value {
    let members: Vec<Value> = tuple.iter().map(|t| clean(t, defs, depth)).collect();
    let types: Vec<&str> = members
        .iter()
        .filter_map(|m| m.get("type").and_then(Value::as_str))
        .collect();
    let mut item = Map::new();
    if types.len() == members.len() && types.windows(2).all(|w| w[0] == w[1]) {
        if let Some(t) = types.first() {
            item.insert("type".into(), json!(t));
        }
    }
    let positions: Vec<String> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let t = m.get("type").and_then(Value::as_str).unwrap_or("any");
            match m.get("description").and_then(Value::as_str) {
                Some(d) => format!("{}: {t} ({d})", i + 1),
                None => format!("{}: {t}", i + 1),
            }
        })
        .collect();
    item.insert(
        "description".into(),
        json!(format!(
            "a list of {} values in this order: {}",
            members.len(),
            positions.join("; ")
        )),
    );
    Value::Object(item)
}

/// The names of a `required` list.
fn required_of(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A top-level union merged into one object schema: every alternative's properties, required
/// only when every alternative requires them.
fn merge_alternatives(obj: &mut Map<String, Value>, alternatives: &[Value]) {
    let mut props = obj
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut required: Option<Vec<String>> = None;
    for alt in alternatives {
        if let Some(p) = alt.get("properties").and_then(Value::as_object) {
            for (k, v) in p {
                props.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let names = required_of(alt.get("required"));
        required = Some(match required {
            None => names,
            Some(so_far) => so_far.into_iter().filter(|n| names.contains(n)).collect(),
        });
    }
    obj.insert("properties".into(), Value::Object(props));
    let mut all = required_of(obj.get("required"));
    for n in required.unwrap_or_default() {
        if !all.contains(&n) {
            all.push(n);
        }
    }
    if all.is_empty() {
        obj.remove("required");
    } else {
        obj.insert("required".into(), json!(all));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_inlined_and_recursion_is_cut() {
        let s = json!({
            "type": "object",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}},
                      "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
            "properties": {"p": {"$ref": "#/$defs/Point", "description": "where"},
                           "n": {"$ref": "#/$defs/Node"}}
        });
        let out = sanitize(&s);
        assert_eq!(out["properties"]["p"]["properties"]["x"]["type"], "number");
        assert_eq!(out["properties"]["p"]["description"], "where");
        assert!(out.get("$defs").is_none());
        // Recursion ends in an open schema instead of looping.
        let mut node = &out["properties"]["n"];
        let mut depth = 0;
        while let Some(next) = node.get("properties").and_then(|p| p.get("next")) {
            node = next;
            depth += 1;
        }
        assert!(depth <= MAX_REF_DEPTH + 1, "{depth}");
    }

    #[test]
    fn nullable_unions_tuples_and_const() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "c": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]},
            "d": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "e": {"const": "fixed"},
            "f": {"type": "array"},
            "g": true
        }});
        let out = sanitize(&s);
        let p = &out["properties"];
        assert_eq!(p["a"]["type"], "string");
        assert_eq!(p["b"], json!({"type": "integer", "minimum": 1}));
        assert_eq!(p["c"]["items"]["type"], "number");
        assert!(p["c"]["items"]["description"]
            .as_str()
            .unwrap_or("")
            .contains("2 values"));
        assert!(p["d"]["items"].get("type").is_none());
        assert_eq!(p["e"]["enum"], json!(["fixed"]));
        assert_eq!(p["f"]["items"], json!({}));
        assert_eq!(p["g"], json!({}));
    }

    #[test]
    fn the_top_level_becomes_one_object() {
        let s = json!({"$schema": "http://json-schema.org/draft-07/schema#",
        "anyOf": [
          {"type": "object", "properties": {"path": {"type": "string"}, "all": {"type": "boolean"}}, "required": ["path", "all"]},
          {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        ]});
        let out = sanitize(&s);
        assert_eq!(out["type"], "object");
        assert!(out.get("anyOf").is_none() && out.get("$schema").is_none());
        assert_eq!(out["required"], json!(["path"]));
        assert!(out["properties"]["all"].is_object());
        assert_eq!(
            sanitize(&json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            sanitize(&json!("x")),
            json!({"type": "object", "properties": {}})
        );
    }
}
