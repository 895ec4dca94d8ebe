//! Channel value types and the check run on every write.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The declared type of a channel. Values are JSON; the type is checked on every write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    /// A UTF-8 string.
    String,
    /// A 64-bit signed integer.
    Int,
    /// A number (integers are accepted).
    Float,
    /// `true` or `false`.
    Bool,
    /// Any JSON value.
    Json,
    /// A list of chat messages (objects with a string `type` or `role`).
    Messages,
    /// A list whose items have the given type.
    List(Box<ValueType>),
    /// An object whose values have the given type (keys are strings).
    Map(Box<ValueType>),
    /// The inner type or `null`.
    Optional(Box<ValueType>),
}

/// Why a value does not fit a [`ValueType`]; `path` points into the value (`$[3].content`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMismatch {
    /// JSON path of the offending part, `$` for the value itself.
    pub path: String,
    /// What was expected there.
    pub expected: String,
    /// A short rendering of what was found.
    pub found: String,
}

impl fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "expected {} at {}, found {}",
            self.expected, self.path, self.found
        )
    }
}

/// Renders a value for an error message, cut to `max` characters.
pub fn preview(value: &Value, max: usize) -> String {
    let s = value.to_string();
    if s.chars().count() <= max {
        s
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int",
        Value::Number(n) if n.is_u64() => "integer above 9223372036854775807",
        Value::Number(_) => "float",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

impl ValueType {
    /// Checks `value` against this type.
    pub fn check(&self, value: &Value) -> Result<(), TypeMismatch> {
        self.check_at(value, &mut String::from("$"))
    }

    /// Checks one item of a list-like type (what `append` receives when a single item is written).
    pub fn item_type(&self) -> Option<&ValueType> {
        match self {
            ValueType::List(t) => Some(t),
            ValueType::Optional(t) => t.item_type(),
            _ => None,
        }
    }

    fn mismatch(&self, path: &str, value: &Value) -> TypeMismatch {
        TypeMismatch {
            path: path.to_string(),
            expected: self.to_string(),
            found: format!("{} {}", kind_name(value), preview(value, 60)),
        }
    }

    fn check_at(&self, value: &Value, path: &mut String) -> Result<(), TypeMismatch> {
        let ok = match (self, value) {
            (ValueType::Json, _) => true,
            (ValueType::Optional(_), Value::Null) => true,
            (ValueType::Optional(inner), v) => return inner.check_at(v, path),
            (ValueType::String, Value::String(_)) => true,
            // An int is 64-bit signed: larger integers would wrap when read.
            (ValueType::Int, Value::Number(n)) => n.is_i64(),
            (ValueType::Float, Value::Number(_)) => true,
            (ValueType::Bool, Value::Bool(_)) => true,
            (ValueType::Messages, Value::Array(items)) => {
                for (i, m) in items.iter().enumerate() {
                    let is_msg = m
                        .as_object()
                        .map(|o| {
                            o.get("type")
                                .or_else(|| o.get("role"))
                                .is_some_and(Value::is_string)
                        })
                        .unwrap_or(false);
                    if !is_msg {
                        return Err(TypeMismatch {
                            path: format!("{path}[{i}]"),
                            expected: "a message object with a string `type`".into(),
                            found: format!("{} {}", kind_name(m), preview(m, 60)),
                        });
                    }
                }
                true
            }
            (ValueType::List(inner), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    inner.check_at(item, path)?;
                    path.truncate(len);
                }
                true
            }
            (ValueType::Map(inner), Value::Object(map)) => {
                for (k, item) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    inner.check_at(item, path)?;
                    path.truncate(len);
                }
                true
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(self.mismatch(path, value))
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueType::String => f.write_str("string"),
            ValueType::Int => f.write_str("int"),
            ValueType::Float => f.write_str("float"),
            ValueType::Bool => f.write_str("bool"),
            ValueType::Json => f.write_str("json"),
            ValueType::Messages => f.write_str("messages"),
            ValueType::List(t) => write!(f, "list<{t}>"),
            ValueType::Map(t) => write!(f, "map<{t}>"),
            ValueType::Optional(t) => write!(f, "{t}?"),
        }
    }
}

/// Error from parsing a type name such as `list<string>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown type `{0}`; expected string, int, float, bool, json, messages, list<T>, map<T> or T?"
)]
pub struct ParseTypeError(pub String);

impl FromStr for ValueType {
    type Err = ParseTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some(inner) = t.strip_suffix('?') {
            return Ok(ValueType::Optional(Box::new(inner.parse()?)));
        }
        let generic = |prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix('>'))
                .map(str::trim)
        };
        if let Some(inner) = generic("list<") {
            return Ok(ValueType::List(Box::new(inner.parse()?)));
        }
        if let Some(inner) = generic("map<") {
            return Ok(ValueType::Map(Box::new(inner.parse()?)));
        }
        Ok(match t {
            "string" => ValueType::String,
            "int" => ValueType::Int,
            "float" => ValueType::Float,
            "bool" => ValueType::Bool,
            "json" => ValueType::Json,
            "messages" => ValueType::Messages,
            _ => return Err(ParseTypeError(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_above_i64_max_are_refused_as_int() {
        let big: Value = serde_json::from_str("9223372036854775808").unwrap();
        let e = ValueType::Int.check(&big).unwrap_err();
        assert!(
            e.found.contains("integer above 9223372036854775807"),
            "{e:?}"
        );
        let max: Value = serde_json::from_str("9223372036854775807").unwrap();
        assert!(ValueType::Int.check(&max).is_ok());
        assert!(ValueType::Float.check(&big).is_ok());
    }
    use serde_json::json;

    #[test]
    fn parses_and_prints_round_trip() {
        for s in [
            "string",
            "list<int>",
            "map<list<string>>",
            "json?",
            "messages",
        ] {
            let t: ValueType = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        assert!("lst<int>".parse::<ValueType>().is_err());
    }

    #[test]
    fn check_reports_the_path_of_the_bad_item() {
        let t: ValueType = "list<int>".parse().unwrap();
        assert!(t.check(&json!([1, 2])).is_ok());
        let err = t.check(&json!([1, "x"])).unwrap_err();
        assert_eq!(err.path, "$[1]");
        assert!(ValueType::Float.check(&json!(1)).is_ok());
        assert!(ValueType::Int.check(&json!(1.5)).is_err());
        assert!("int?"
            .parse::<ValueType>()
            .unwrap()
            .check(&Value::Null)
            .is_ok());
        assert!(ValueType::Messages
            .check(&json!([{"type": "human", "content": "hi"}]))
            .is_ok());
        assert!(ValueType::Messages.check(&json!(["hi"])).is_err());
    }
}
