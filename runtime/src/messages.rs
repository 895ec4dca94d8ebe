//! Chat messages and the `add_messages` reducer (LangGraph semantics).
//!
//! A message is a JSON object with a string `type` (`human`, `ai`, `tool`, `system`) or `role`,
//! an `id`, `content`, and optionally `tool_calls` / `tool_call_id`. A write is one message or a
//! list. `{"type": "remove", "id": ID}` removes a message; the id [`REMOVE_ALL`] drops every
//! message before it.

use crate::reducer::ReducerError;
use crate::value_type::{preview, TypeMismatch};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The id of a removal that clears the whole history.
pub const REMOVE_ALL: &str = "__remove_all__";

/// A message object with the given type, content and id.
pub fn message(kind: &str, id: impl Into<String>, content: impl Into<String>) -> Value {
    json!({"type": kind, "id": id.into(), "content": content.into()})
}

/// A removal marker for the message with `id`.
pub fn remove(id: impl Into<String>) -> Value {
    json!({"type": "remove", "id": id.into()})
}

fn is_message(v: &Value) -> bool {
    v.as_object()
        .and_then(|o| o.get("type").or_else(|| o.get("role")))
        .is_some_and(Value::is_string)
}

/// Checks that a write is a message or a list of messages.
pub fn check_write(write: &Value) -> Result<(), TypeMismatch> {
    let bad = |path: String, v: &Value| TypeMismatch {
        path,
        expected: "a message object with a string `type`".into(),
        found: preview(v, 60),
    };
    match write {
        Value::Array(items) => {
            for (i, m) in items.iter().enumerate() {
                if !is_message(m) {
                    return Err(bad(format!("$[{i}]"), m));
                }
            }
            Ok(())
        }
        m if is_message(m) => Ok(()),
        other => Err(bad("$".into(), other)),
    }
}

/// Gives every message of the write that has no id a fresh uuid.
pub fn assign_ids(write: &mut Value) {
    let assign = |m: &mut Value| {
        if let Some(obj) = m.as_object_mut() {
            let missing = !obj.get("id").is_some_and(|id| id.is_string() && id != "");
            if missing {
                obj.insert("id".into(), Value::String(uuid::Uuid::new_v4().to_string()));
            }
        }
    };
    match write {
        Value::Array(items) => items.iter_mut().for_each(assign),
        m => assign(m),
    }
}

fn msg_id(m: &Value) -> Option<&str> {
    m.get("id").and_then(Value::as_str)
}

fn is_removal(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("remove")
}

/// Folds a write into the message list.
pub fn add_messages(current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
    let mut incoming = match write {
        Value::Array(items) => items,
        m => vec![m],
    };
    if let Some(pos) = incoming
        .iter()
        .rposition(|m| is_removal(m) && msg_id(m) == Some(REMOVE_ALL))
    {
        incoming.drain(..=pos);
        *current = Some(Value::Array(Vec::new()));
    }
    let list = match current {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => {
            *current = Some(Value::Array(Vec::new()));
            match current {
                Some(Value::Array(list)) => list,
                _ => unreachable!("just set to an array"),
            }
        }
        Some(other) => {
            return Err(ReducerError(format!(
                "add_messages needs a list, the channel holds {}",
                preview(other, 60)
            )))
        }
    };
    for m in incoming {
        let id = msg_id(&m).map(str::to_owned);
        let existing = id
            .as_deref()
            .and_then(|id| list.iter().rposition(|x| msg_id(x) == Some(id)));
        if is_removal(&m) {
            match existing {
                Some(i) => {
                    list.remove(i);
                }
                None => {
                    return Err(ReducerError(format!(
                        "cannot remove message {:?}: no message has that id",
                        id.unwrap_or_default()
                    )))
                }
            }
        } else if let Some(i) = existing {
            list[i] = m;
        } else {
            list.push(m);
        }
    }
    Ok(())
}

/// Message id → position in the list, kept by the engine between writes of one channel.
#[derive(Default)]
struct IdIndex {
    positions: HashMap<String, usize>,
}

impl IdIndex {
    fn build(list: &[Value]) -> Self {
        let mut positions = HashMap::with_capacity(list.len());
        for (i, m) in list.iter().enumerate() {
            if let Some(id) = msg_id(m) {
                positions.insert(id.to_string(), i);
            }
        }
        IdIndex { positions }
    }
}

/// [`add_messages`] with an id index in `scratch`, so a write costs O(its messages) instead of
/// O(history). Same result as [`add_messages`]; removals rebuild the index.
pub fn add_messages_indexed(
    current: &mut Option<Value>,
    write: Value,
    scratch: &mut crate::reducer::Scratch,
) -> Result<(), ReducerError> {
    let incoming = match &write {
        Value::Array(items) => items.as_slice(),
        m => std::slice::from_ref(m),
    };
    if incoming.iter().any(is_removal) || !matches!(current, Some(Value::Array(_))) {
        *scratch = None;
        return add_messages(current, write);
    }
    let Some(Value::Array(list)) = current else {
        return add_messages(current, write);
    };
    let fresh = !scratch.as_ref().is_some_and(|s| s.is::<IdIndex>());
    if fresh {
        *scratch = Some(Box::new(IdIndex::build(list)));
    }
    let Some(index) = scratch.as_mut().and_then(|s| s.downcast_mut::<IdIndex>()) else {
        return add_messages(current, write);
    };
    let items = match write {
        Value::Array(items) => items,
        m => vec![m],
    };
    for m in items {
        match msg_id(&m).map(str::to_owned) {
            Some(id) => match index.positions.get(&id) {
                Some(&i) if i < list.len() => list[i] = m,
                _ => {
                    index.positions.insert(id, list.len());
                    list.push(m);
                }
            },
            None => list.push(m),
        }
    }
    Ok(())
}

/// The last message of a list that has the given type, if any.
pub fn last_of_type<'a>(messages: &'a Value, kind: &str) -> Option<&'a Value> {
    messages
        .as_array()?
        .iter()
        .rev()
        .find(|m| m.get("type").and_then(Value::as_str) == Some(kind))
}
