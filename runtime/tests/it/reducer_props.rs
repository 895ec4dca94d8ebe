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

// ---------------------------------------------------------------------------------------------
// replace
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn replace_is_last_write(init in proptest::option::of(json_value()), writes in vec(json_value(), 0..6)) {
        let got = fold(&Replace, init.clone(), writes.clone()).unwrap();
        let want = writes.last().cloned().or(init);
        prop_assert_eq!(got, want);
        prop_assert!(Replace.is_replace());
        prop_assert_eq!(Replace.storage(), Storage::Value);
    }
}

// ---------------------------------------------------------------------------------------------
// append
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn append_is_concatenation(
        init in proptest::option::of(vec(json_value(), 0..4)),
        lists in vec(vec(json_value(), 0..4), 0..6),
    ) {
        let start = init.clone().map(Value::Array);
        let got = fold(&Append, start, lists.iter().cloned().map(Value::Array)).unwrap();
        let mut want: Vec<Value> = init.clone().unwrap_or_default();
        want.extend(lists.iter().flatten().cloned());
        if init.is_none() && lists.is_empty() {
            prop_assert_eq!(got, None);
        } else {
            prop_assert_eq!(got, Some(Value::Array(want)));
        }
    }

    #[test]
    fn append_non_list_write_is_one_item(
        init in vec(json_value(), 0..4),
        writes in vec(append_write(), 0..6),
    ) {
        let got = fold(&Append, Some(Value::Array(init.clone())), writes.clone()).unwrap();
        let mut want = init;
        for w in writes {
            match w {
                Value::Array(items) => want.extend(items),
                item => want.push(item),
            }
        }
        prop_assert_eq!(got, Some(Value::Array(want)));
    }

    #[test]
    fn append_batch_equals_one_by_one(
        init in proptest::option::of(vec(json_value(), 0..4)),
        items in vec(json_value(), 0..8),
    ) {
        prop_assume!(!items.is_empty() || init.is_some());
        let start = init.map(Value::Array);
        let batch = fold(&Append, start.clone(), [Value::Array(items.clone())]).unwrap();
        // One by one: each item wrapped in a one-element list, so a list item is pushed whole.
        let single = fold(&Append, start, items.into_iter().map(|i| json!([i]))).unwrap();
        prop_assert_eq!(batch, single);
    }

    #[test]
    fn append_split_anywhere_is_the_same(
        writes in vec(append_write(), 0..8),
        split in any::<prop::sample::Index>(),
    ) {
        // Folding a prefix, storing it, then folding the rest gives the whole fold.
        let k = if writes.is_empty() { 0 } else { split.index(writes.len() + 1) };
        let whole = fold(&Append, None, writes.clone()).unwrap();
        let head = fold(&Append, None, writes[..k].to_vec()).unwrap();
        let head: Option<Value> = head.map(|v| serde_json::from_str(&v.to_string()).unwrap());
        let rest = fold(&Append, head, writes[k..].to_vec()).unwrap();
        prop_assert_eq!(whole, rest);
    }

    #[test]
    fn append_onto_a_non_list_fails(current in leaf(), write in append_write()) {
        let mut cur = Some(current);
        prop_assert!(Append.apply(&mut cur, write).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// add_messages
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn add_messages_ids_unique_after_any_sequence(writes in vec(msg_write(), 0..10)) {
        let mut cur: Option<Value> = None;
        for w in writes {
            prepare_apply(&AddMessages, &mut cur, w);
            if let Some(list) = &cur {
                let ids = ids_of(list);
                let unique: HashSet<&String> = ids.iter().collect();
                prop_assert_eq!(unique.len(), ids.len(), "duplicate ids in {:?}", ids);
                prop_assert!(list.as_array().unwrap().iter().all(|m| m["type"] != "remove"),
                    "a removal marker was stored as a message");
            }
        }
    }

    #[test]
    fn add_messages_replace_by_id_keeps_position_and_length(
        n in 1usize..8,
        pick in any::<prop::sample::Index>(),
        content in "[a-z]{1,8}",
    ) {
        let before = history(n);
        let i = pick.index(n);
        let id = format!("m{i}");
        let after = fold(&AddMessages, Some(before.clone()),
            [messages::message("ai", id.clone(), content.clone())]).unwrap().unwrap();
        let (b, a) = (before.as_array().unwrap(), after.as_array().unwrap());
        prop_assert_eq!(a.len(), b.len());
        for (j, (x, y)) in b.iter().zip(a).enumerate() {
            if j == i {
                prop_assert_eq!(&y["id"], &json!(id));
                prop_assert_eq!(&y["content"], &json!(content));
                prop_assert_eq!(&y["type"], &json!("ai"));
            } else {
                prop_assert_eq!(x, y);
            }
        }
    }

    #[test]
    fn add_messages_remove_by_id_removes_exactly_that(
        n in 1usize..8,
        pick in any::<prop::sample::Index>(),
    ) {
        let before = history(n);
        let i = pick.index(n);
        let after = fold(&AddMessages, Some(before.clone()), [messages::remove(format!("m{i}"))])
            .unwrap()
            .unwrap();
        let mut want = before.as_array().unwrap().clone();
        want.remove(i);
        prop_assert_eq!(after, Value::Array(want));
    }

    #[test]
    fn add_messages_remove_of_a_missing_id_fails(n in 0usize..5, missing in 5u8..9) {
        let mut cur = Some(history(n));
        let removal = messages::remove(format!("m{missing}"));
        let failed = AddMessages.apply(&mut cur, removal).is_err();
        prop_assert!(failed, "removing an unknown id must fail");
    }

    #[test]
    fn add_messages_remove_all_keeps_only_what_follows(
        n in 0usize..6,
        before_ops in vec(msg_op(), 0..4),
        after_n in 0usize..4,
    ) {
        // Anything may precede the marker (even removals of unknown ids): it is dropped.
        let mut write: Vec<Value> = before_ops.iter().map(op_value).collect();
        write.push(messages::remove(REMOVE_ALL));
        let after: Vec<Value> = (0..after_n)
            .map(|i| messages::message("ai", format!("new{i}"), format!("n{i}")))
            .collect();
        write.extend(after.iter().cloned());
        let mut w = Value::Array(write);
        AddMessages.prepare(&mut w).unwrap();
        let got = fold(&AddMessages, Some(history(n)), [w]).unwrap();
        prop_assert_eq!(got, Some(Value::Array(after)));
    }

    #[test]
    fn add_messages_prepare_assigns_stable_unique_ids(write in msg_write()) {
        let mut once = write.clone();
        AddMessages.prepare(&mut once).unwrap();
        let items = |v: &Value| match v {
            Value::Array(items) => items.clone(),
            m => vec![m.clone()],
        };
        for (orig, prepared) in items(&write).iter().zip(items(&once)) {
            let id = prepared["id"].as_str().expect("prepare gives every message a string id");
            prop_assert!(!id.is_empty(), "empty id left");
            match orig["id"].as_str() {
                Some(given) if !given.is_empty() => prop_assert_eq!(id, given, "an existing id changed"),
                _ => {}
            }
        }
        // Assigned ids are fresh: distinct from each other.
        let assigned: Vec<String> = items(&write)
            .iter()
            .zip(items(&once))
            .filter(|(o, _)| !has_id(o))
            .map(|(_, p)| p["id"].as_str().unwrap().to_string())
            .collect();
        let unique: HashSet<&String> = assigned.iter().collect();
        prop_assert_eq!(unique.len(), assigned.len());
        // Stable: preparing again (e.g. a replayed, stored write) changes nothing.
        let mut twice = once.clone();
        AddMessages.prepare(&mut twice).unwrap();
        prop_assert_eq!(&twice, &once);
        // Replaying the prepared write on the same value gives the same result.
        let base = Some(history(3));
        let a = fold(&AddMessages, base.clone(), [once.clone()]);
        let b = fold(&AddMessages, base, [twice]);
        prop_assert_eq!(a.is_ok(), b.is_ok());
        if let (Ok(a), Ok(b)) = (a, b) {
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn add_messages_matches_a_model(writes in vec(msg_write(), 0..10)) {
        // Model: (id, message) pairs with LangGraph's rules, a failing write changing nothing.
        let mut cur: Option<Value> = None;
        let mut model: Vec<(String, Value)> = Vec::new();
        for w in writes {
            let mut w = w;
            AddMessages.prepare(&mut w).unwrap();
            let mut incoming = match w.clone() {
                Value::Array(items) => items,
                m => vec![m],
            };
            let mut next = model.clone();
            if let Some(p) = incoming.iter().rposition(|m| m["type"] == "remove" && m["id"] == REMOVE_ALL) {
                incoming.drain(..=p);
                next.clear();
            }
            let mut ok = true;
            for m in incoming {
                let id = m["id"].as_str().unwrap().to_string();
                let at = next.iter().position(|(x, _)| *x == id);
                match (m["type"] == "remove", at) {
                    (true, Some(i)) => { next.remove(i); }
                    (true, None) => { ok = false; break; }
                    (false, Some(i)) => next[i].1 = m,
                    (false, None) => next.push((id, m)),
                }
            }
            let mut live = cur.clone();
            let res = AddMessages.apply(&mut live, w);
            prop_assert_eq!(res.is_ok(), ok, "error agreement");
            if ok {
                model = next;
                cur = live;
                let want = Value::Array(model.iter().map(|(_, m)| m.clone()).collect());
                prop_assert_eq!(cur.as_ref(), Some(&want));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// merge
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn merge_is_keywise_union_right_wins(
        init in proptest::option::of(object()),
        writes in vec(object(), 0..6),
    ) {
        let got = fold(&Merge, init.clone().map(Value::Object), writes.iter().cloned().map(Value::Object)).unwrap();
        let mut want: BTreeMap<String, Value> = init.clone().unwrap_or_default().into_iter().collect();
        for w in &writes {
            for (k, v) in w {
                want.insert(k.clone(), v.clone());
            }
        }
        if init.is_none() && writes.is_empty() {
            prop_assert_eq!(got, None);
        } else {
            prop_assert_eq!(got, Some(Value::Object(want.into_iter().collect())));
        }
    }

    #[test]
    fn merge_batch_equals_one_by_one(
        init in proptest::option::of(object()),
        writes in vec(object(), 1..6),
    ) {
        // Merging writes one by one equals merging their own union once (associativity).
        let start = init.map(Value::Object);
        let one_by_one = fold(&Merge, start.clone(), writes.iter().cloned().map(Value::Object)).unwrap();
        let union = fold(&Merge, None, writes.iter().cloned().map(Value::Object)).unwrap().unwrap();
        let batch = fold(&Merge, start, [union]).unwrap();
        prop_assert_eq!(one_by_one, batch);
    }

    #[test]
    fn merge_onto_null_starts_fresh(w in object()) {
        let got = fold(&Merge, Some(Value::Null), [Value::Object(w.clone())]).unwrap();
        prop_assert_eq!(got, Some(Value::Object(w)));
    }

    #[test]
    fn merge_rejects_non_objects(init in object(), bad in leaf()) {
        let mut cur = Some(Value::Object(init));
        prop_assert!(Merge.apply(&mut cur, bad.clone()).is_err());
        let mut cur = Some(json!([1]));
        let failed = Merge.apply(&mut cur, json!({"a": 1})).is_err();
        prop_assert!(failed, "merge onto a list must fail");
    }
}

// ---------------------------------------------------------------------------------------------
// sum / min / max
// ---------------------------------------------------------------------------------------------

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (-1_000_000_000i64..1_000_000_000).prop_map(Value::from),
        1 => exact_float(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sum_is_the_arithmetic_sum_of_ints(
        init in proptest::option::of(-1_000_000_000_000i64..1_000_000_000_000),
        xs in vec(-1_000_000_000_000i64..1_000_000_000_000, 0..40),
    ) {
        let got = fold(&Numeric::sum(), init.map(Value::from), xs.iter().map(|x| json!(x))).unwrap();
        if init.is_none() && xs.is_empty() {
            prop_assert_eq!(got, None);
        } else {
            let want: i64 = init.unwrap_or(0) + xs.iter().sum::<i64>();
            prop_assert_eq!(got.clone(), Some(json!(want)));
            prop_assert!(got.unwrap().is_i64(), "a sum of ints must stay an int");
        }
    }

    #[test]
    fn sum_reports_overflow(a in any::<i64>(), b in any::<i64>()) {
        let r = fold(&Numeric::sum(), Some(json!(a)), [json!(b)]);
        match a.checked_add(b) {
            Some(s) => prop_assert_eq!(r.unwrap(), Some(json!(s))),
            None => prop_assert!(r.is_err(), "overflow of {} + {} not reported", a, b),
        }
    }

    #[test]
    fn sum_of_int_and_float_is_a_float(a in -1_000_000i64..1_000_000, b in -1.0e6..1.0e6f64) {
        let got = fold(&Numeric::sum(), Some(json!(a)), [json!(b)]).unwrap().unwrap();
        prop_assert!(got.is_f64());
        prop_assert!((got.as_f64().unwrap() - (a as f64 + b)).abs() < 1e-6);
    }

    #[test]
    fn min_max_are_commutative_and_idempotent(a in number(), b in number()) {
        for r in [Numeric::min(), Numeric::max()] {
            let ab = fold(&r, Some(a.clone()), [b.clone()]).unwrap();
            let ba = fold(&r, Some(b.clone()), [a.clone()]).unwrap();
            prop_assert_eq!(&ab, &ba, "{} not commutative", r.name());
            prop_assert_eq!(fold(&r, Some(a.clone()), [a.clone()]).unwrap(), Some(a.clone()),
                "{} not idempotent", r.name());
            // The result is one of the operands (numerically).
            let v = ab.unwrap().as_f64().unwrap();
            prop_assert!(v == a.as_f64().unwrap() || v == b.as_f64().unwrap());
        }
    }

    #[test]
    fn min_max_fold_is_order_independent(
        xs in vec(-1_000_000_000i64..1_000_000_000, 1..20).prop_shuffle(),
        seed in any::<prop::sample::Index>(),
    ) {
        let mut shuffled = xs.clone();
        let k = seed.index(xs.len());
        shuffled.rotate_left(k);
        shuffled.reverse();
        let min = fold(&Numeric::min(), None, xs.iter().map(|x| json!(x))).unwrap();
        let max = fold(&Numeric::max(), None, xs.iter().map(|x| json!(x))).unwrap();
        prop_assert_eq!(&min, &Some(json!(xs.iter().min().unwrap())));
        prop_assert_eq!(&max, &Some(json!(xs.iter().max().unwrap())));
        prop_assert_eq!(fold(&Numeric::min(), None, shuffled.iter().map(|x| json!(x))).unwrap(), min);
        prop_assert_eq!(fold(&Numeric::max(), None, shuffled.iter().map(|x| json!(x))).unwrap(), max);
    }

    #[test]
    fn numeric_rejects_non_numbers(x in number(), bad in "[a-z]{0,4}") {
        for r in [Numeric::sum(), Numeric::min(), Numeric::max()] {
            prop_assert_eq!(r.storage(), Storage::Value);
            let mut cur = Some(x.clone());
            prop_assert!(r.apply(&mut cur, json!(bad.clone())).is_err());
            let mut cur = Some(json!(bad.clone()));
            prop_assert!(r.apply(&mut cur, x.clone()).is_err());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FnReducer
// ---------------------------------------------------------------------------------------------

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

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fn_reducer_folds_with_its_closure(
        init in proptest::option::of("[a-z]{0,4}"),
        writes in vec(prop_oneof![4 => "[a-z]{0,4}".prop_map(Value::from), 1 => leaf()], 0..6),
    ) {
        let r = FnReducer::new("concat", concat);
        prop_assert_eq!(r.name(), "concat");
        prop_assert_eq!(r.storage(), Storage::Deltas);
        prop_assert_eq!(FnReducer::new("v", concat).store_values().storage(), Storage::Value);
        let start = init.map(Value::from);
        let mut direct = start.clone();
        let direct_res: Result<(), ReducerError> =
            writes.iter().cloned().try_for_each(|w| concat(&mut direct, w));
        let via = fold(&r, start, writes);
        match (via, direct_res) {
            (Ok(v), Ok(())) => prop_assert_eq!(v, direct),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "reducer {:?} vs closure {:?}", a, b),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Storage invariant: the value rebuilt from stored blobs equals the live value
// ---------------------------------------------------------------------------------------------

/// Runs `steps` of writes through `r` live (prepare, then apply), storing each step as the
/// engine does (a `Set` for value-stored reducers or a reset step, else a `Delta` of the
/// prepared writes linked to the previous blob) in a real checkpointer; then rebuilds the value
/// of every step's checkpoint from `channel_entries`, starting at `default`, and compares.
fn check_storage_invariant(
    r: &dyn Reducer,
    default: Option<Value>,
    steps: Vec<Vec<Value>>,
    resets: Vec<bool>,
) -> Result<(), TestCaseError> {
    let cp = MemoryCheckpointer::new();
    let mut live = default.clone();
    let mut version: Option<CheckpointId> = None;
    let mut history: Vec<(CheckpointId, Option<Value>)> = Vec::new();
    for (i, writes) in steps.into_iter().enumerate() {
        let mut stored = Vec::new();
        for w in writes {
            if let Some(prepared) = prepare_apply(r, &mut live, w) {
                // What the store keeps goes through JSON, as every backend does.
                stored.push(serde_json::from_str(&prepared.to_string()).unwrap());
            }
        }
        let reset = resets.get(i).copied().unwrap_or(false);
        let id = CheckpointId::new();
        let entry = match &live {
            None => None,
            Some(v) if reset || r.storage() == Storage::Value => Some(ChannelEntry::Set(v.clone())),
            Some(_) => Some(ChannelEntry::Delta {
                prev: version,
                writes: stored,
            }),
        };
        let mut c = Checkpoint {
            id,
            parent: history.last().map(|h| h.0),
            step: i as i64,
            source: Source::Loop,
            channel_versions: BTreeMap::new(),
            next: Vec::new(),
            barriers: BTreeMap::new(),
            input: None,
            schema_version: "props".into(),
            event_seq: 0,
            metadata: Map::new(),
        };
        let blobs: Vec<(String, ChannelEntry)> = match entry {
            Some(e) => {
                version = Some(id);
                vec![("ch".to_string(), e)]
            }
            None => Vec::new(),
        };
        if let Some(v) = version {
            c.channel_versions.insert("ch".into(), v);
        }
        futures::executor::block_on(cp.put("t", "", &c, &blobs)).unwrap();
        history.push((id, live.clone()));
    }
    for (id, want) in history {
        let c = futures::executor::block_on(cp.get("t", "", Some(id)))
            .unwrap()
            .unwrap()
            .checkpoint;
        let mut rebuilt = default.clone();
        if let Some(v) = c.channel_versions.get("ch") {
            for (_, e) in
                futures::executor::block_on(cp.channel_entries("t", "", "ch", *v)).unwrap()
            {
                match e {
                    ChannelEntry::Set(v) => rebuilt = Some(v),
                    ChannelEntry::Clear => rebuilt = None,
                    ChannelEntry::Delta { writes, .. } => {
                        for w in writes {
                            r.apply(&mut rebuilt, w).map_err(|e| {
                                TestCaseError::fail(format!("replaying a stored write failed: {e}"))
                            })?;
                        }
                    }
                }
            }
        }
        prop_assert_eq!(
            rebuilt,
            want,
            "{} value rebuilt from storage differs",
            r.name()
        );
    }
    Ok(())
}

fn steps_of<S: Strategy<Value = Value>>(
    w: S,
) -> impl Strategy<Value = (Vec<Vec<Value>>, Vec<bool>)> {
    (vec(vec(w, 0..4), 1..8), vec(prop::bool::weighted(0.2), 8))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn stored_append_equals_live(
        default in prop_oneof![Just(None), Just(Some(json!([])))],
        (steps, resets) in steps_of(append_write()),
    ) {
        check_storage_invariant(&Append, default, steps, resets)?;
    }

    #[test]
    fn stored_add_messages_equals_live(
        default in prop_oneof![Just(None), Just(Some(json!([])))],
        (steps, resets) in steps_of(msg_write()),
    ) {
        check_storage_invariant(&AddMessages, default, steps, resets)?;
    }

    #[test]
    fn stored_add_messages_additions_equal_live((steps, resets) in steps_of(msg_add_write())) {
        check_storage_invariant(&AddMessages, None, steps, resets)?;
    }

    #[test]
    fn stored_merge_equals_live((steps, resets) in steps_of(object().prop_map(Value::Object))) {
        check_storage_invariant(&Merge, Some(json!({})), steps, resets)?;
    }

    #[test]
    fn stored_numeric_and_replace_equal_live((steps, resets) in steps_of(number())) {
        for r in [&Numeric::sum() as &dyn Reducer, &Numeric::min(), &Numeric::max(), &Replace] {
            check_storage_invariant(r, Some(json!(0)), steps.clone(), resets.clone())?;
        }
    }

    #[test]
    fn stored_fn_reducer_equals_live((steps, resets) in steps_of("[a-z]{0,3}".prop_map(Value::from))) {
        check_storage_invariant(&FnReducer::new("concat", concat), None, steps, resets)?;
    }
}

/// Floats read back from a checkpoint equal the live value bit for bit (serde_json's
/// `float_roundtrip` feature; without it 130586.53403353193 comes back as 130586.53403353192).
#[test]
fn stored_floats_round_trip_exactly() {
    let config = Config {
        cases: 512,
        ..config()
    };
    proptest!(config, |(x in -1.0e6..1.0e6f64)| {
        check_storage_invariant(&Replace, None, vec![vec![json!(x)]], vec![false])?;
        check_storage_invariant(&Append, None, vec![vec![json!([x])], vec![json!(x)]], vec![false])?;
    });
}
