//! `replace` and `append`.

use super::*;

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
