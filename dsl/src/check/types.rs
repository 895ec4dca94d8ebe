//! Type expressions of state fields (`list<string>?`) to runtime types.

use crate::ast::TypeExpr;
use crate::diagnostic::{catalogue as diag, did_you_mean, Diagnostic};
use agentgraph_runtime::ValueType;

const NAMES: [&str; 8] = [
    "string", "int", "float", "bool", "json", "messages", "list", "map",
];

/// The runtime type of a type expression, or a diagnostic.
pub fn value_type(t: &TypeExpr) -> Result<ValueType, Diagnostic> {
    let base = match (t.name.name.as_str(), &t.arg) {
        ("list", Some(a)) => ValueType::List(Box::new(value_type(a)?)),
        ("map", Some(a)) => ValueType::Map(Box::new(value_type(a)?)),
        ("list" | "map", None) => return Err(diag::missing_item_type(t.span, &t.name.name)),
        (n, Some(_)) if !NAMES.contains(&n) => {
            let hint = match n {
                "array" | "vec" | "Vec" | "List" => Some("list"),
                "dict" | "object" | "Map" | "HashMap" => Some("map"),
                _ => did_you_mean(n, ["list", "map"]),
            };
            return Err(diag::unknown_generic_type(t.name.span, n, hint));
        }
        (n, Some(_)) => return Err(diag::no_type_argument(t.name.span, n)),
        (n, None) => match n.parse::<ValueType>() {
            Ok(v) => v,
            Err(_) => return Err(diag::unknown_type(t.name.span, n, scalar_hint(n))),
        },
    };
    Ok(if t.optional {
        ValueType::Optional(Box::new(base))
    } else {
        base
    })
}

/// What an unknown scalar type name probably meant.
fn scalar_hint(n: &str) -> Option<String> {
    match n {
        "str" | "text" => Some("did you mean `string`?".to_string()),
        "integer" | "number" | "i64" => Some("did you mean `int` (or `float`)?".to_string()),
        "boolean" => Some("did you mean `bool`?".to_string()),
        "object" | "dict" | "any" => Some("use `json` for any value, or `map<T>`".to_string()),
        "array" | "vec" => Some("use `list<T>`".to_string()),
        _ => did_you_mean(n, NAMES).map(|s| format!("did you mean `{s}`?")),
    }
}
