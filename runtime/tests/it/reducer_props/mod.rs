//! Property tests for the built-in reducers and `FnReducer`, and for the storage invariant the
//! engine relies on: a value rebuilt from stored blobs equals the live value.
//!
//! Seeds are fixed (deterministic runs) and nothing is persisted on failure.

use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, Checkpointer, MemoryCheckpointer, Source,
};
use agentgraph_runtime::messages::{self, REMOVE_ALL};
use agentgraph_runtime::reducer::ReducerError;
use agentgraph_runtime::{
    AddMessages, Append, CheckpointId, FnReducer, Merge, Numeric, Reducer, Replace, Storage,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};

mod add_messages;
mod merge_and_numeric;
mod replace_and_append;
mod storage;

fn config() -> Config {
    Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(0x5eed_a9e7),
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers and strategies
// ---------------------------------------------------------------------------------------------

fn fold(
    r: &dyn Reducer,
    init: Option<Value>,
    writes: impl IntoIterator<Item = Value>,
) -> Result<Option<Value>, ReducerError> {
    let mut cur = init;
    for w in writes {
        r.apply(&mut cur, w)?;
    }
    Ok(cur)
}

/// Any finite float (JSON has no NaN or infinities).
fn exact_float() -> impl Strategy<Value = Value> {
    (-1.0e12..1.0e12f64).prop_map(|x| json!(x))
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        exact_float(),
        "[a-z]{0,6}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map("[a-c]", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Any append write: a list (extends) or anything else (pushed as one item).
fn append_write() -> impl Strategy<Value = Value> {
    prop_oneof![
        vec(json_value(), 0..4).prop_map(Value::Array),
        leaf(),
        btree_map("[a-c]", leaf(), 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    btree_map("[a-f]", json_value(), 0..5).prop_map(|m| m.into_iter().collect())
}

/// One element of an `add_messages` write.
#[derive(Debug, Clone)]
enum MsgOp {
    /// A message; `id` picks from a small pool (so replacements happen), `None` has no id,
    /// `Some(None)` an empty id (both get one from `prepare`).
    Add {
        id: Option<Option<u8>>,
        kind: &'static str,
        content: String,
    },
    Remove(u8),
    RemoveAll,
}

fn msg_op() -> impl Strategy<Value = MsgOp> {
    prop_oneof![
        6 => (
            prop_oneof![
                3 => (0u8..6).prop_map(|i| Some(Some(i))),
                1 => Just(None),
                1 => Just(Some(None)),
            ],
            prop_oneof![Just("human"), Just("ai"), Just("tool"), Just("system")],
            "[a-z ]{0,8}",
        )
            .prop_map(|(id, kind, content)| MsgOp::Add { id, kind, content }),
        2 => (0u8..6).prop_map(MsgOp::Remove),
        1 => Just(MsgOp::RemoveAll),
    ]
}

fn op_value(op: &MsgOp) -> Value {
    match op {
        MsgOp::Add { id, kind, content } => match id {
            None => json!({"type": kind, "content": content}),
            Some(None) => json!({"type": kind, "id": "", "content": content}),
            Some(Some(i)) => messages::message(kind, format!("m{i}"), content.clone()),
        },
        MsgOp::Remove(i) => messages::remove(format!("m{i}")),
        MsgOp::RemoveAll => messages::remove(REMOVE_ALL),
    }
}

/// A write of one or several message ops (a single one sometimes not wrapped in a list).
fn msg_write() -> impl Strategy<Value = Value> {
    (vec(msg_op(), 1..4), any::<bool>()).prop_map(|(ops, wrap)| {
        if ops.len() == 1 && !wrap {
            op_value(&ops[0])
        } else {
            Value::Array(ops.iter().map(op_value).collect())
        }
    })
}

/// Message writes with only additions (never an error).
fn msg_add_write() -> impl Strategy<Value = Value> {
    msg_write().prop_map(|w| match w {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|m| m["type"] != "remove")
                .collect(),
        ),
        m if m["type"] == "remove" => Value::Array(Vec::new()),
        m => m,
    })
}

/// Whether a message carries a usable (non-empty string) id.
fn has_id(m: &Value) -> bool {
    m["id"].as_str().is_some_and(|s| !s.is_empty())
}

fn ids_of(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a message list")
        .iter()
        .map(|m| {
            m["id"]
                .as_str()
                .expect("every stored message has a string id")
                .to_string()
        })
        .collect()
}

/// Prepares and applies a write; on error the value is left as it was (the write is dropped),
/// as the engine would not commit it. Returns the prepared write when it applied.
fn prepare_apply(r: &dyn Reducer, cur: &mut Option<Value>, mut write: Value) -> Option<Value> {
    r.prepare(&mut write).expect("prepare");
    let mut next = cur.clone();
    match r.apply(&mut next, write.clone()) {
        Ok(()) => {
            *cur = next;
            Some(write)
        }
        Err(_) => None,
    }
}

/// A list of messages with unique ids m0..m{n-1}, built through the reducer.
fn history(n: usize) -> Value {
    let msgs: Vec<Value> = (0..n)
        .map(|i| messages::message("human", format!("m{i}"), format!("c{i}")))
        .collect();
    fold(&AddMessages, None, [Value::Array(msgs)])
        .expect("fresh ids")
        .expect("a list")
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (-1_000_000_000i64..1_000_000_000).prop_map(Value::from),
        1 => exact_float(),
    ]
}

fn concat(cur: &mut Option<Value>, w: Value) -> Result<(), ReducerError> {
    let Value::String(s) = w else {
        return Err(ReducerError(format!("concat needs a string, got {w}")));
    };
    let prev = cur
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    *cur = Some(Value::String(prev + &s));
    Ok(())
}
