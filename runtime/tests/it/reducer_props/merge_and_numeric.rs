//! `merge`, `sum` / `min` / `max`, and `FnReducer`.

use super::*;

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
