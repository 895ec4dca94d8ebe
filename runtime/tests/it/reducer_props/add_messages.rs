//! `add_messages`: ids, replace and remove by id, `REMOVE_ALL`, prepare, and a model.

use super::*;

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
