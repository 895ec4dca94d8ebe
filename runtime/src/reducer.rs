//! Reducers: how the writes of a step fold into a channel's value.
//!
//! Built-ins: `replace` (the default; one writer per step), `append`, `add_messages`, `merge`,
//! `sum`, `min`, `max`. Applications register more by name in a [`ReducerRegistry`].

use crate::messages;
use crate::value_type::{preview, TypeMismatch, ValueType};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// How checkpoints persist a channel whose reducer this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// The whole value is stored each time it changes (small values: `replace`, `sum`, …).
    Value,
    /// Only the writes of each step are stored; the value is rebuilt by folding them
    /// (`append`, `add_messages`, `merge`): storage grows with what changed, not with the value.
    Deltas,
}

/// A reducer failed; the engine wraps it with the node and channel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReducerError(pub String);

/// Folds writes into a channel value.
///
/// Writes are applied in the step's deterministic task order. `apply` must be a pure function of
/// `(current, write)`: checkpoints replay stored writes through it to rebuild a value.
pub trait Reducer: Send + Sync + 'static {
    /// The name used in the DSL (`reduce NAME`) and in error messages.
    fn name(&self) -> &str;

    /// Whether checkpoints store whole values or deltas for this reducer.
    fn storage(&self) -> Storage {
        Storage::Deltas
    }

    /// True for the last-value reducer, which allows one write per step.
    fn is_replace(&self) -> bool {
        false
    }

    /// Checks one write against the channel type before it is applied.
    fn check_write(&self, ty: &ValueType, write: &Value) -> Result<(), TypeMismatch> {
        ty.check(write)
    }

    /// Normalizes a write once, before it is applied and stored (e.g. assigns message ids), so
    /// that replaying the stored write gives the same value.
    fn prepare(&self, _write: &mut Value) -> Result<(), ReducerError> {
        Ok(())
    }

    /// Folds `write` into `current` (`None` when the channel is empty).
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError>;

    /// Like [`Reducer::apply`], with a scratch slot that the caller keeps for this channel and
    /// empties whenever the value changes by any other means (an overwrite, a clear, a load).
    /// Reducers use it for an index that makes a write cheaper than a scan of the value (e.g.
    /// `add_messages` keeps message id → position). The result must equal `apply`'s.
    fn apply_with(
        &self,
        current: &mut Option<Value>,
        write: Value,
        scratch: &mut Scratch,
    ) -> Result<(), ReducerError> {
        let _ = scratch;
        self.apply(current, write)
    }
}

/// Per-channel state a reducer may keep between writes (see [`Reducer::apply_with`]).
pub type Scratch = Option<Box<dyn std::any::Any + Send + Sync>>;

impl fmt::Debug for dyn Reducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reducer({})", self.name())
    }
}

/// Last value wins; two writes in one step are a conflict (detected by the engine).
pub struct Replace;
impl Reducer for Replace {
    fn name(&self) -> &str {
        "replace"
    }
    fn storage(&self) -> Storage {
        Storage::Value
    }
    fn is_replace(&self) -> bool {
        true
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        *current = Some(write);
        Ok(())
    }
}

/// Appends to a list: a list write extends it, any other write is pushed as one item.
pub struct Append;
impl Reducer for Append {
    fn name(&self) -> &str {
        "append"
    }
    fn check_write(&self, ty: &ValueType, write: &Value) -> Result<(), TypeMismatch> {
        match (ty.item_type(), write) {
            (Some(item), Value::Array(_)) => ValueType::List(Box::new(item.clone())).check(write),
            (Some(item), _) => item.check(write),
            (None, _) => Ok(()),
        }
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        let list = match current {
            Some(Value::Array(list)) => list,
            Some(other) => {
                return Err(ReducerError(format!(
                    "append needs a list, the channel holds {}",
                    preview(other, 60)
                )))
            }
            None => {
                *current = Some(Value::Array(Vec::new()));
                match current {
                    Some(Value::Array(list)) => list,
                    _ => unreachable!("just set to an array"),
                }
            }
        };
        match write {
            Value::Array(items) => list.extend(items),
            item => list.push(item),
        }
        Ok(())
    }
}

/// LangGraph's `add_messages`: id-aware append, replace by id, removal by id or all.
pub struct AddMessages;
impl Reducer for AddMessages {
    fn name(&self) -> &str {
        "add_messages"
    }
    fn check_write(&self, _ty: &ValueType, write: &Value) -> Result<(), TypeMismatch> {
        messages::check_write(write)
    }
    fn prepare(&self, write: &mut Value) -> Result<(), ReducerError> {
        messages::assign_ids(write);
        Ok(())
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        messages::add_messages(current, write)
    }
    fn apply_with(
        &self,
        current: &mut Option<Value>,
        write: Value,
        scratch: &mut Scratch,
    ) -> Result<(), ReducerError> {
        messages::add_messages_indexed(current, write, scratch)
    }
}

/// Shallow object merge; keys of the write win.
pub struct Merge;
impl Reducer for Merge {
    fn name(&self) -> &str {
        "merge"
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        let Value::Object(new) = write else {
            return Err(ReducerError(format!(
                "merge needs an object, got {}",
                preview(&write, 60)
            )));
        };
        match current {
            Some(Value::Object(map)) => {
                map.extend(new);
                Ok(())
            }
            None | Some(Value::Null) => {
                *current = Some(Value::Object(new));
                Ok(())
            }
            Some(other) => Err(ReducerError(format!(
                "merge needs an object, the channel holds {}",
                preview(other, 60)
            ))),
        }
    }
}

#[derive(Clone, Copy)]
enum NumOp {
    Sum,
    Min,
    Max,
}

/// Numeric reducers: `sum`, `min`, `max`. Integers stay integers; any float makes a float.
pub struct Numeric(NumOp);

impl Numeric {
    /// The `sum` reducer.
    pub fn sum() -> Self {
        Numeric(NumOp::Sum)
    }
    /// The `min` reducer.
    pub fn min() -> Self {
        Numeric(NumOp::Min)
    }
    /// The `max` reducer.
    pub fn max() -> Self {
        Numeric(NumOp::Max)
    }
}

impl Reducer for Numeric {
    fn name(&self) -> &str {
        match self.0 {
            NumOp::Sum => "sum",
            NumOp::Min => "min",
            NumOp::Max => "max",
        }
    }
    fn storage(&self) -> Storage {
        Storage::Value
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        let Value::Number(w) = &write else {
            return Err(ReducerError(format!(
                "{} needs a number, got {}",
                self.name(),
                preview(&write, 60)
            )));
        };
        let Some(Value::Number(c)) = current.as_ref() else {
            if current.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(ReducerError(format!(
                    "{} needs a number in the channel",
                    self.name()
                )));
            }
            *current = Some(write);
            return Ok(());
        };
        let out = match (c.as_i64(), w.as_i64()) {
            (Some(a), Some(b)) => Value::from(match self.0 {
                NumOp::Sum => a
                    .checked_add(b)
                    .ok_or_else(|| ReducerError(format!("sum overflows: {a} + {b}")))?,
                NumOp::Min => a.min(b),
                NumOp::Max => a.max(b),
            }),
            _ => {
                let (a, b) = (c.as_f64().unwrap_or(0.0), w.as_f64().unwrap_or(0.0));
                let r = match self.0 {
                    NumOp::Sum => a + b,
                    NumOp::Min => a.min(b),
                    NumOp::Max => a.max(b),
                };
                serde_json::Number::from_f64(r)
                    .map(Value::Number)
                    .ok_or_else(|| {
                        ReducerError(format!("{} gave a non-finite number", self.name()))
                    })?
            }
        };
        *current = Some(out);
        Ok(())
    }
}

/// A reducer defined by a closure, for registering custom reducers from Rust.
pub struct FnReducer<F> {
    name: String,
    storage: Storage,
    f: F,
}

impl<F> FnReducer<F>
where
    F: Fn(&mut Option<Value>, Value) -> Result<(), ReducerError> + Send + Sync + 'static,
{
    /// A delta-stored reducer named `name` that folds with `f`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnReducer {
            name: name.into(),
            storage: Storage::Deltas,
            f,
        }
    }

    /// Store whole values instead of deltas (for reducers whose value does not grow).
    pub fn store_values(mut self) -> Self {
        self.storage = Storage::Value;
        self
    }
}

impl<F> Reducer for FnReducer<F>
where
    F: Fn(&mut Option<Value>, Value) -> Result<(), ReducerError> + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn storage(&self) -> Storage {
        self.storage
    }
    fn check_write(&self, _ty: &ValueType, _write: &Value) -> Result<(), TypeMismatch> {
        Ok(())
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        (self.f)(current, write)
    }
}

/// Reducers by name: the built-ins plus what the application registers.
#[derive(Clone)]
pub struct ReducerRegistry {
    by_name: BTreeMap<String, Arc<dyn Reducer>>,
}

impl Default for ReducerRegistry {
    fn default() -> Self {
        let mut r = ReducerRegistry {
            by_name: BTreeMap::new(),
        };
        r.register(Arc::new(Replace));
        r.register(Arc::new(Append));
        r.register(Arc::new(AddMessages));
        r.register(Arc::new(Merge));
        r.register(Arc::new(Numeric::sum()));
        r.register(Arc::new(Numeric::min()));
        r.register(Arc::new(Numeric::max()));
        r
    }
}

impl ReducerRegistry {
    /// Registers (or replaces) a reducer under its own name.
    pub fn register(&mut self, reducer: Arc<dyn Reducer>) -> &mut Self {
        self.by_name.insert(reducer.name().to_string(), reducer);
        self
    }

    /// Looks a reducer up by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Reducer>> {
        self.by_name.get(name).cloned()
    }

    /// The registered names, sorted (for did-you-mean hints).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// The marker that makes a write bypass the reducer: `{"__overwrite__": value}`.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// If `write` is `{"__overwrite__": v}`, returns `v`.
pub fn as_overwrite(write: &Value) -> Option<&Value> {
    match write {
        Value::Object(map) if map.len() == 1 => map.get(OVERWRITE_KEY),
        _ => None,
    }
}

/// Wraps `value` so that it replaces the channel value whatever the reducer.
pub fn overwrite(value: Value) -> Value {
    let mut m = Map::new();
    m.insert(OVERWRITE_KEY.to_string(), value);
    Value::Object(m)
}
