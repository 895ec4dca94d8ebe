//! Checks of `put_writes`: round trips, ordering, idempotence, special channels, isolation.

use super::{
    ckpt, list, must_get, put, put_writes, query, w, writes_summary, CHILD, OTHER, ROOT, THREAD,
};
use agentgraph_runtime::checkpoint::{special, CheckpointTuple, Checkpointer, Source};
use serde_json::{json, Value};

/// Writes of one call come back in order, numbered from 0, with task id, channel and value
/// intact (every JSON kind, null included), on `get` by id, `get(None)` and `list`.
pub async fn put_writes_round_trip(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let values = [
        json!("text"),
        json!(42),
        json!(-1.25),
        json!([1, [2, 3], {"a": null}]),
        json!({"k": {"nested": true}}),
        Value::Null,
        json!(false),
        json!(""),
    ];
    let writes: Vec<(&str, Value)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (if i % 2 == 0 { "a" } else { "b" }, v.clone()))
        .collect();
    put_writes(cp, THREAD, ROOT, c.id, "task-1", &writes).await;
    let want: Vec<_> = writes
        .iter()
        .enumerate()
        .map(|(i, (ch, v))| w("task-1", i as i64, ch, v.clone()))
        .collect();
    for id in [Some(c.id), None] {
        let t = must_get(cp, THREAD, ROOT, id).await;
        assert_eq!(
            writes_summary(&t.pending_writes),
            want,
            "pending writes differ on get({id:?})"
        );
    }
    let listed = list(cp, THREAD, query(None)).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        writes_summary(&listed[0].pending_writes),
        want,
        "list does not carry pending writes"
    );
}

/// Writes are ordered by task id, then index, whatever order the tasks wrote in.
pub async fn put_writes_ordered_by_task_then_index(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    put_writes(
        cp,
        THREAD,
        ROOT,
        c.id,
        "b",
        &[("x", json!("b0")), ("y", json!("b1"))],
    )
    .await;
    put_writes(cp, THREAD, ROOT, c.id, "ab", &[("x", json!("ab0"))]).await;
    let many: Vec<(&str, Value)> = (0..12).map(|i| ("x", json!(i))).collect();
    put_writes(cp, THREAD, ROOT, c.id, "a", &many).await;
    let got = writes_summary(&must_get(cp, THREAD, ROOT, None).await.pending_writes);
    let mut want: Vec<_> = (0..12).map(|i| w("a", i, "x", json!(i))).collect();
    want.push(w("ab", 0, "x", json!("ab0")));
    want.push(w("b", 0, "x", json!("b0")));
    want.push(w("b", 1, "y", json!("b1")));
    assert_eq!(got, want, "writes are not ordered by task id then index");
}

/// Putting the same writes of a task again (a retried save) leaves one copy of each.
pub async fn put_writes_idempotent(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let writes = [
        ("a", json!(1)),
        ("b", json!(2)),
        (special::DONE.0, json!(true)),
    ];
    for _ in 0..3 {
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &writes).await;
    }
    let got = writes_summary(&must_get(cp, THREAD, ROOT, None).await.pending_writes);
    assert_eq!(
        got,
        vec![
            w("task-1", special::DONE.1, special::DONE.0, json!(true)),
            w("task-1", 0, "a", json!(1)),
            w("task-1", 1, "b", json!(2)),
        ],
        "re-putting the same (task, idx) duplicated writes"
    );
}

/// `__error__`, `__interrupt__`, `__resume__`, `__done__` and `__seq__` keep one value per task (the
/// last), at their fixed negative indexes; they do not use up the normal indexes, and another
/// task's special writes are kept apart.
pub async fn put_writes_special_channels(cp: &dyn Checkpointer) {
    let c = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c, &[]).await;
    let specials = [
        special::ERROR,
        special::INTERRUPT,
        special::RESUME,
        special::DONE,
        special::SEQ,
    ];
    for (name, _) in specials {
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &[(name, json!({"v": 1}))]).await;
        put_writes(cp, THREAD, ROOT, c.id, "task-1", &[(name, json!({"v": 2}))]).await;
    }
    put_writes(
        cp,
        THREAD,
        ROOT,
        c.id,
        "task-2",
        &[(special::ERROR.0, json!("boom"))],
    )
    .await;
    let got = must_get(cp, THREAD, ROOT, None).await.pending_writes;
    for (name, idx) in specials {
        let mine: Vec<_> = got
            .iter()
            .filter(|x| x.task_id == "task-1" && x.channel == name)
            .collect();
        assert_eq!(mine.len(), 1, "{name} kept {} values, not one", mine.len());
        assert_eq!(
            mine[0].value,
            json!({"v": 2}),
            "{name} did not keep the last value"
        );
        assert_eq!(mine[0].idx, idx, "{name} is not at its fixed index");
    }
    let other: Vec<_> = got.iter().filter(|x| x.task_id == "task-2").collect();
    assert_eq!(other.len(), 1, "another task's error was lost or merged");
    assert_eq!(other[0].value, json!("boom"));
    assert_eq!(got.len(), specials.len() + 1, "unexpected writes: {got:?}");

    // Special writes mixed with normal ones: normal indexes stay non-negative and in order.
    let c2 = ckpt(Some(c.id), 1, Source::Loop);
    put(cp, THREAD, ROOT, &c2, &[]).await;
    put_writes(
        cp,
        THREAD,
        ROOT,
        c2.id,
        "task-1",
        &[
            ("x", json!(1)),
            (special::INTERRUPT.0, json!(["ask"])),
            ("y", json!(2)),
            (special::DONE.0, json!(null)),
            ("x", json!(3)),
        ],
    )
    .await;
    let got = must_get(cp, THREAD, ROOT, None).await.pending_writes;
    let normal: Vec<_> = got
        .iter()
        .filter(|x| !x.channel.starts_with("__"))
        .collect();
    let order: Vec<(&str, &Value)> = normal
        .iter()
        .map(|x| (x.channel.as_str(), &x.value))
        .collect();
    assert_eq!(
        order,
        vec![("x", &json!(1)), ("y", &json!(2)), ("x", &json!(3))],
        "normal writes out of order"
    );
    assert!(
        normal.windows(2).all(|p| p[0].idx < p[1].idx) && normal[0].idx >= 0,
        "normal indexes are not increasing and non-negative: {normal:?}"
    );
    let specials_got: Vec<(&str, i64)> = got
        .iter()
        .filter(|x| x.channel.starts_with("__"))
        .map(|x| (x.channel.as_str(), x.idx))
        .collect();
    assert_eq!(
        specials_got,
        vec![special::DONE, special::INTERRUPT],
        "special writes among normal ones"
    );
}

/// Writes belong to one checkpoint of one namespace of one thread.
pub async fn put_writes_isolated(cp: &dyn Checkpointer) {
    let c1 = ckpt(None, 0, Source::Loop);
    let c2 = ckpt(Some(c1.id), 1, Source::Loop);
    for ns in [ROOT, CHILD] {
        put(cp, THREAD, ns, &c1, &[]).await;
        put(cp, THREAD, ns, &c2, &[]).await;
    }
    put(cp, OTHER, ROOT, &c1, &[]).await;
    put_writes(cp, THREAD, ROOT, c1.id, "t", &[("x", json!("root-c1"))]).await;
    put_writes(cp, THREAD, CHILD, c1.id, "t", &[("x", json!("child-c1"))]).await;
    put_writes(cp, THREAD, CHILD, c2.id, "t", &[("x", json!("child-c2"))]).await;

    let values = |t: CheckpointTuple| -> Vec<Value> {
        t.pending_writes.into_iter().map(|x| x.value).collect()
    };
    assert_eq!(
        values(must_get(cp, THREAD, ROOT, Some(c1.id)).await),
        vec![json!("root-c1")],
        "root c1"
    );
    assert!(
        values(must_get(cp, THREAD, ROOT, Some(c2.id)).await).is_empty(),
        "root c2 sees writes of another checkpoint or namespace"
    );
    assert_eq!(
        values(must_get(cp, THREAD, CHILD, Some(c1.id)).await),
        vec![json!("child-c1")],
        "child c1"
    );
    assert_eq!(
        values(must_get(cp, THREAD, CHILD, Some(c2.id)).await),
        vec![json!("child-c2")],
        "child c2"
    );
    assert!(
        values(must_get(cp, OTHER, ROOT, Some(c1.id)).await).is_empty(),
        "another thread sees the writes"
    );
}

/// A checkpoint put after one with writes starts with none; the older one keeps its own.
pub async fn new_checkpoint_has_no_pending_writes(cp: &dyn Checkpointer) {
    let c1 = ckpt(None, 0, Source::Loop);
    put(cp, THREAD, ROOT, &c1, &[]).await;
    put_writes(cp, THREAD, ROOT, c1.id, "t", &[("x", json!(1))]).await;
    let c2 = ckpt(Some(c1.id), 1, Source::Loop);
    put(cp, THREAD, ROOT, &c2, &[]).await;
    let latest = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(latest.checkpoint.id, c2.id);
    assert!(
        latest.pending_writes.is_empty(),
        "new checkpoint inherited writes"
    );
    assert_eq!(
        must_get(cp, THREAD, ROOT, Some(c1.id))
            .await
            .pending_writes
            .len(),
        1,
        "older checkpoint lost its writes"
    );
}
