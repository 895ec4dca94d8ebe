//! The operations queue reducer.

use super::{parse_operations, OPERATIONS_REDUCER};
use crate::workflow::kind_of;
use agentgraph_runtime::reducer::{Reducer, ReducerError, ReducerRegistry, Storage};
use agentgraph_runtime::{TypeMismatch, ValueType};
use serde_json::Value;
use std::sync::Arc;

/// The operations queue reducer: `null` clears the queue; a write (a list or a single operation)
/// containing a `clear` operation replaces the queue; anything else is appended. Writes are
/// checked to be operations before they are applied.
pub struct OperationsReducer;

fn is_clear(op: &Value) -> bool {
    op.get("type").and_then(Value::as_str) == Some("clear")
}

impl Reducer for OperationsReducer {
    fn name(&self) -> &str {
        OPERATIONS_REDUCER
    }
    fn storage(&self) -> Storage {
        Storage::Deltas
    }
    fn check_write(&self, _ty: &ValueType, _write: &Value) -> Result<(), TypeMismatch> {
        Ok(())
    }
    fn prepare(&self, write: &mut Value) -> Result<(), ReducerError> {
        parse_operations(write)
            .map(|_| ())
            .map_err(|e| ReducerError(e.to_string()))
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        let items = match write {
            Value::Null => {
                *current = Some(Value::Array(Vec::new()));
                return Ok(());
            }
            Value::Array(items) => items,
            one @ Value::Object(_) => vec![one],
            other => {
                return Err(ReducerError(format!(
                    "operations needs a list of operations or null, got {}",
                    kind_of(&other)
                )))
            }
        };
        if items.iter().any(is_clear) {
            *current = Some(Value::Array(items));
            return Ok(());
        }
        match current {
            Some(Value::Array(list)) => list.extend(items),
            None | Some(Value::Null) => *current = Some(Value::Array(items)),
            Some(other) => {
                return Err(ReducerError(format!(
                    "operations needs a list in the channel, it holds {}",
                    kind_of(other)
                )))
            }
        }
        Ok(())
    }
}

/// Registers the [`OperationsReducer`] under the name `operations`.
pub fn register(registry: &mut ReducerRegistry) {
    registry.register(Arc::new(OperationsReducer));
}

/// The operations reducer, for a channel spec.
pub fn reducer() -> Arc<dyn Reducer> {
    Arc::new(OperationsReducer)
}
