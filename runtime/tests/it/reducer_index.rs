//! `add_messages` with its id index (what the engine uses) gives exactly what the plain reducer
//! gives, over random sequences of appends, replacements by id, removals and remove-all.

use agentgraph_runtime::messages::{message, remove, REMOVE_ALL};
use agentgraph_runtime::{AddMessages, Reducer};
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u8),
    AddMany(Vec<(u8, u8)>),
    Remove(u8),
    RemoveAll(u8),
    Overwrite,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..20, 0u8..5).prop_map(|(i, c)| Op::Add(i, c)),
        2 => prop::collection::vec((0u8..20, 0u8..5), 0..4).prop_map(Op::AddMany),
        1 => (0u8..20).prop_map(Op::Remove),
        1 => (0u8..20).prop_map(Op::RemoveAll),
        1 => Just(Op::Overwrite),
    ]
}

fn msg(i: u8, c: u8) -> Value {
    message("ai", format!("m{i}"), format!("v{c}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn indexed_add_messages_equals_the_plain_reducer(ops in prop::collection::vec(op(), 1..40)) {
        let r = AddMessages;
        let mut plain: Option<Value> = Some(json!([]));
        let mut indexed: Option<Value> = Some(json!([]));
        let mut scratch = None;
        for op in ops {
            let write = match op {
                Op::Add(i, c) => msg(i, c),
                Op::AddMany(v) => Value::Array(v.into_iter().map(|(i, c)| msg(i, c)).collect()),
                Op::Remove(i) => remove(format!("m{i}")),
                Op::RemoveAll(i) => json!([remove(REMOVE_ALL), msg(i, 0)]),
                Op::Overwrite => {
                    // What the engine does on an overwrite: new value, scratch emptied.
                    plain = Some(json!([msg(1, 1)]));
                    indexed = plain.clone();
                    scratch = None;
                    continue;
                }
            };
            let a = r.apply(&mut plain, write.clone());
            let b = r.apply_with(&mut indexed, write, &mut scratch);
            prop_assert_eq!(a.is_ok(), b.is_ok());
            if a.is_err() {
                // A failed removal leaves the channel as the engine found it: start over.
                plain = Some(json!([]));
                indexed = Some(json!([]));
                scratch = None;
                continue;
            }
            prop_assert_eq!(&plain, &indexed);
        }
    }
}
