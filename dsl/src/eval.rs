//! Evaluating expressions and templates against a graph's state at run time.

use crate::ast::{BinOp, Expr, ExprKind, UnOp};
use crate::extensions::Extensions;
use agentgraph_runtime::StateView;
use serde_json::{Map, Number, Value};

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// Where names come from: local variables (send loop variables, payload keys), then the state.
pub struct Scope<'a> {
    /// The state, if any.
    pub state: Option<&'a StateView>,
    /// Local names, searched last to first.
    pub locals: Vec<(&'a str, Value)>,
    /// Registered filters and functions (the built-in ones only when `None`).
    pub extensions: Option<&'a Extensions>,
}

impl<'a> Scope<'a> {
    /// A scope over the state only.
    pub fn state(state: &'a StateView) -> Self {
        Scope {
            state: Some(state),
            locals: Vec::new(),
            extensions: None,
        }
    }

    /// A scope without state (constant folding of defaults and options).
    pub fn empty() -> Self {
        Scope {
            state: None,
            locals: Vec::new(),
            extensions: None,
        }
    }

    /// The same scope with the registered filters and functions of `extensions`.
    pub fn with_extensions(mut self, extensions: &'a Extensions) -> Self {
        self.extensions = Some(extensions);
        self
    }

    /// The same scope with the keys of a task's `send` payload as locals (they shadow
    /// channels); a payload that is not an object adds nothing.
    pub fn with_payload(mut self, payload: Option<&'a Value>) -> Self {
        if let Some(Value::Object(p)) = payload {
            self.locals
                .extend(p.iter().map(|(k, v)| (k.as_str(), v.clone())));
        }
        self
    }

    /// Looks a name up.
    pub fn get(&self, name: &str) -> Option<Value> {
        if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| *n == name) {
            return Some(v.clone());
        }
        self.state.and_then(|s| {
            s.get(name)
                .cloned()
                .or_else(|| s.schema().channel(name).map(|_| Value::Null))
        })
    }
}

fn num(v: f64) -> Value {
    Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// JSON truthiness: null, false, 0, "" and empty collections are false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Calls a built-in function, else one the scope's extensions registered.
fn call(name: &str, args: &[Value], scope: &Scope) -> Result<Value, EvalError> {
    if crate::functions::spec(name).is_some() {
        return crate::functions::call(name, args);
    }
    let Some(f) = scope.extensions.and_then(|x| x.function(name)) else {
        return Err(EvalError(format!("unknown function `{name}`")));
    };
    if args.len() < f.min || args.len() > f.max {
        return Err(EvalError(format!(
            "{name}() takes {}..={} arguments, got {}",
            f.min,
            f.max,
            args.len()
        )));
    }
    (f.call)(args).map_err(|e| EvalError(format!("{name}(): {e}")))
}

/// Evaluates an expression.
pub fn eval(e: &Expr, scope: &Scope) -> Result<Value, EvalError> {
    Ok(match &e.kind {
        ExprKind::Null => Value::Null,
        ExprKind::Bool { value } => Value::Bool(*value),
        ExprKind::Int { value } => Value::from(*value),
        ExprKind::Float { value } => num(*value),
        ExprKind::Duration { ms, .. } => Value::from(*ms),
        ExprKind::Str { lit } => {
            if lit.value.contains("{{") {
                Value::String(crate::template::render(&lit.value, scope)?)
            } else {
                Value::String(lit.value.clone())
            }
        }
        ExprKind::Name { name } => scope
            .get(&name.name)
            .ok_or_else(|| EvalError(format!("unknown name `{}`", name.name)))?,
        ExprKind::Field { base, field } => match eval(base, scope)? {
            Value::Object(m) => m.get(&field.name).cloned().unwrap_or(Value::Null),
            Value::Null => Value::Null,
            other => {
                return Err(EvalError(format!(
                    "`.{}` on a {}",
                    field.name,
                    type_name(&other)
                )))
            }
        },
        ExprKind::Index { base, index } => {
            let b = eval(base, scope)?;
            let i = eval(index, scope)?;
            match (&b, &i) {
                (Value::Array(a), Value::Number(n)) => {
                    // Negative indexes count from the end; one past either end, or not a whole
                    // number, is null.
                    let idx = n.as_i64().and_then(|n| {
                        if n < 0 {
                            i64::try_from(a.len()).ok()?.checked_add(n)
                        } else {
                            Some(n)
                        }
                    });
                    idx.and_then(|k| usize::try_from(k).ok())
                        .and_then(|k| a.get(k))
                        .cloned()
                        .unwrap_or(Value::Null)
                }
                (Value::Object(m), Value::String(k)) => m.get(k).cloned().unwrap_or(Value::Null),
                (Value::Null, _) => Value::Null,
                _ => {
                    return Err(EvalError(format!(
                        "cannot index a {} with a {}",
                        type_name(&b),
                        type_name(&i)
                    )))
                }
            }
        }
        ExprKind::Call { func, args } => {
            let vals = args
                .iter()
                .map(|a| eval(a, scope))
                .collect::<Result<Vec<_>, _>>()?;
            call(&func.name, &vals, scope)?
        }
        ExprKind::List { items } => Value::Array(
            items
                .iter()
                .map(|i| eval(i, scope))
                .collect::<Result<_, _>>()?,
        ),
        ExprKind::Object { object } => {
            let mut m = Map::new();
            for (k, v) in &object.entries {
                m.insert(k.name.clone(), eval(v, scope)?);
            }
            Value::Object(m)
        }
        ExprKind::Unary { op, operand } => {
            let v = eval(operand, scope)?;
            match op {
                UnOp::Not => Value::Bool(!truthy(&v)),
                UnOp::Neg => match v {
                    Value::Number(n) if n.is_i64() => {
                        let x = n.as_i64().unwrap_or(0);
                        Value::from(x.checked_neg().ok_or_else(|| {
                            EvalError(format!(
                                "integer overflow: -({x}) is outside the 64-bit integer range"
                            ))
                        })?)
                    }
                    Value::Number(n) => num(-n.as_f64().unwrap_or(0.0)),
                    other => {
                        return Err(EvalError(format!("cannot negate a {}", type_name(&other))))
                    }
                },
            }
        }
        ExprKind::Binary { op, lhs, rhs } => binary(*op, lhs, rhs, scope)?,
    })
}

fn binary(op: BinOp, lhs: &Expr, rhs: &Expr, scope: &Scope) -> Result<Value, EvalError> {
    match op {
        BinOp::And => {
            let l = eval(lhs, scope)?;
            return Ok(if truthy(&l) {
                Value::Bool(truthy(&eval(rhs, scope)?))
            } else {
                Value::Bool(false)
            });
        }
        BinOp::Or => {
            let l = eval(lhs, scope)?;
            return Ok(if truthy(&l) {
                Value::Bool(true)
            } else {
                Value::Bool(truthy(&eval(rhs, scope)?))
            });
        }
        _ => {}
    }
    let l = eval(lhs, scope)?;
    let r = eval(rhs, scope)?;
    let bad = || {
        EvalError(format!(
            "cannot apply `{}` to a {} and a {}",
            op.symbol(),
            type_name(&l),
            type_name(&r)
        ))
    };
    Ok(match op {
        BinOp::Eq => Value::Bool(json_eq(&l, &r)),
        BinOp::Ne => Value::Bool(!json_eq(&l, &r)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ord = match (&l, &r) {
                (Value::Number(a), Value::Number(b)) => a
                    .as_f64()
                    .unwrap_or(0.0)
                    .partial_cmp(&b.as_f64().unwrap_or(0.0)),
                (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                _ => return Err(bad()),
            };
            let Some(o) = ord else {
                return Ok(Value::Bool(false));
            };
            Value::Bool(match op {
                BinOp::Lt => o.is_lt(),
                BinOp::Le => o.is_le(),
                BinOp::Gt => o.is_gt(),
                _ => o.is_ge(),
            })
        }
        BinOp::Add => match (&l, &r) {
            (Value::String(a), Value::String(b)) => Value::String(format!("{a}{b}")),
            (Value::Array(a), Value::Array(b)) => {
                Value::Array(a.iter().chain(b).cloned().collect())
            }
            (Value::Number(_), Value::Number(_)) => arith(op, &l, &r)?.ok_or_else(bad)?,
            _ => return Err(bad()),
        },
        BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => arith(op, &l, &r)?.ok_or_else(bad)?,
        BinOp::And | BinOp::Or => unreachable!("handled above"),
    })
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Arithmetic on two numbers: `Ok(None)` when they are not both numbers, an error for an
/// integer result outside `i64` or an integer division by zero.
fn arith(op: BinOp, l: &Value, r: &Value) -> Result<Option<Value>, EvalError> {
    let (Value::Number(a), Value::Number(b)) = (l, r) else {
        return Ok(None);
    };
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if y == 0 && matches!(op, BinOp::Div | BinOp::Rem) {
            return Err(EvalError(format!(
                "division by zero: {x} {} 0",
                op.symbol()
            )));
        }
        let v = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::Div => match x.checked_rem(y) {
                Some(0) => x.checked_div(y),
                Some(_) => return Ok(Some(num(x as f64 / y as f64))),
                None => None,
            },
            _ => x.checked_rem(y),
        };
        return v.map(|v| Some(Value::from(v))).ok_or_else(|| {
            EvalError(format!(
                "integer overflow: {x} {} {y} is outside the 64-bit integer range",
                op.symbol()
            ))
        });
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        return Ok(None);
    };
    Ok(Some(num(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        _ => x % y,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> Result<Value, EvalError> {
        let e = crate::parse_expr(src).unwrap_or_else(|d| panic!("{src}: {d:?}"));
        eval(&e, &Scope::empty())
    }

    #[test]
    fn out_of_range_negative_index_is_null() {
        for src in [
            "[1, 2, 3][-9223372036854775807 - 1]",
            "[1, 2, 3][-4]",
            "[1, 2, 3][3]",
            "[1, 2, 3][1.5]",
            "[1, 2, 3][-1e300]",
        ] {
            assert_eq!(run(src).ok(), Some(Value::Null), "{src}");
        }
        assert_eq!(run("[1, 2, 3][-3]").ok(), Some(serde_json::json!(1)));
        assert_eq!(run("[1, 2, 3][-1]").ok(), Some(serde_json::json!(3)));
    }

    #[test]
    fn integer_overflow_and_division_by_zero_are_errors_not_panics() {
        for (src, want) in [
            ("-(-9223372036854775807 - 1)", "integer overflow"),
            ("(-9223372036854775807 - 1) % -1", "integer overflow"),
            ("(-9223372036854775807 - 1) / -1", "integer overflow"),
            ("9223372036854775807 + 1", "integer overflow"),
            ("9223372036854775807 * 2", "integer overflow"),
            ("sum([9223372036854775807, 1])", "integer overflow"),
            ("7 / 0", "division by zero"),
            ("7 % 0", "division by zero"),
        ] {
            let err = run(src).expect_err(src);
            assert!(err.0.contains(want), "{src}: {}", err.0);
        }
        assert_eq!(run("7 / 2").ok(), Some(serde_json::json!(3.5)));
        assert_eq!(run("-7 % 3").ok(), Some(serde_json::json!(-1)));
        assert_eq!(run("-(3)").ok(), Some(serde_json::json!(-3)));
        assert_eq!(
            run("\"a\" - 1").map_err(|e| e.0),
            Err("cannot apply `-` to a string and a int".into())
        );
    }
}
