//! `{{ expr | filter }}` templates inside strings.

use crate::ast::{Expr, Span};
use crate::eval::{eval, EvalError, Scope};
use crate::extensions::Extensions;
use serde_json::Value;

/// One piece of a template.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// `{{ expr | f | g }}`: the expression source, its offset in the string, filters.
    Hole {
        /// The expression's text.
        expr: String,
        /// Byte offset of the expression in the string value.
        offset: usize,
        /// Filter names in order.
        filters: Vec<String>,
    },
}

/// Built-in filters. Applications add theirs with [`crate::Registry::register_filter`].
pub const BUILTIN_FILTERS: &[&str] = &["json", "upper", "lower", "trim", "length", "lines"];

/// Splits a string into text and holes. An unclosed `{{` is an error with its offset.
pub fn pieces(s: &str) -> Result<Vec<Piece>, (usize, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut base = 0;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_string()));
        }
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err((base + open, "`{{` without a closing `}}`".into()));
        };
        let inner = &after[..close];
        let mut parts = inner.split('|');
        let expr_text = parts.next().unwrap_or("");
        let lead = expr_text.len() - expr_text.trim_start().len();
        out.push(Piece::Hole {
            expr: expr_text.trim().to_string(),
            offset: base + open + 2 + lead,
            filters: parts.map(|f| f.trim().to_string()).collect(),
        });
        let consumed = open + 2 + close + 2;
        base += consumed;
        rest = &rest[consumed..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    Ok(out)
}

/// A parsed hole: its expression and filter names.
pub type Hole = (Expr, Vec<String>);

/// Parses every hole's expression (for checks), with spans relative to `at`.
pub fn holes(s: &str, at: Span) -> Result<Vec<Hole>, (Span, String)> {
    let ps = pieces(s).map_err(|(o, m)| (Span::new(at.start + o, at.start + o + 2), m))?;
    let mut out = Vec::new();
    for p in ps {
        if let Piece::Hole { expr, filters, .. } = p {
            let e = crate::parse::parse_expr(&expr)
                .map_err(|d| (at, format!("in template `{{{{ {expr} }}}}`: {}", d.message)))?;
            out.push((e, filters));
        }
    }
    Ok(out)
}

/// Applies a built-in filter, else one of `extensions`.
pub fn filter(name: &str, v: Value, extensions: Option<&Extensions>) -> Result<Value, EvalError> {
    Ok(match name {
        "json" => Value::String(serde_json::to_string_pretty(&v).unwrap_or_default()),
        "upper" => Value::String(as_text(&v).to_uppercase()),
        "lower" => Value::String(as_text(&v).to_lowercase()),
        "trim" => Value::String(as_text(&v).trim().to_string()),
        "length" => Value::from(match &v {
            Value::Array(a) => a.len(),
            Value::Object(o) => o.len(),
            other => as_text(other).chars().count(),
        }),
        "lines" => Value::String(match &v {
            Value::Array(a) => a.iter().map(as_text).collect::<Vec<_>>().join("\n"),
            other => as_text(other),
        }),
        other => match extensions.and_then(|x| x.filter(other)) {
            Some(f) => (f.apply)(&v).map_err(|e| EvalError(format!("filter `{other}`: {e}")))?,
            None => return Err(EvalError(format!("unknown filter `{other}`"))),
        },
    })
}

/// A value as template text: strings as they are, everything else as JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Renders a template.
pub fn render(s: &str, scope: &Scope) -> Result<String, EvalError> {
    let ps = pieces(s).map_err(|(_, m)| EvalError(m))?;
    let mut out = String::new();
    for p in ps {
        match p {
            Piece::Text(t) => out.push_str(&t),
            Piece::Hole { expr, filters, .. } => {
                let e = crate::parse::parse_expr(&expr).map_err(|d| EvalError(d.message))?;
                let mut v = eval(&e, scope)?;
                for f in &filters {
                    v = filter(f, v, scope.extensions)?;
                }
                out.push_str(&as_text(&v));
            }
        }
    }
    Ok(out)
}
