//! Checks of channel blobs: `channel_entries` for `Set`, `Delta` chains, `Clear`, missing
//! blobs, and incremental blobs across checkpoints.

use super::{channel_value, ckpt, entries, must_get, obj, put, values_of, ROOT, THREAD};
use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, Checkpointer, Source,
};
use agentgraph_runtime::CheckpointId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A `Set` blob reads back as one entry with its checkpoint id, for any JSON value.
pub async fn channel_entries_set(cp: &dyn Checkpointer) {
    let values = [
        json!(1),
        json!("s"),
        Value::Null,
        json!([1, {"a": [null]}]),
        json!({"big": "x".repeat(10_000)}),
    ];
    let mut c = ckpt(None, 0, Source::Loop);
    let blobs: Vec<(String, ChannelEntry)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("ch{i}"), ChannelEntry::Set(v.clone())))
        .collect();
    for (ch, _) in &blobs {
        c.channel_versions.insert(ch.clone(), c.id);
    }
    cp.put(THREAD, ROOT, &c, &blobs).await.expect("put");
    for (ch, e) in &blobs {
        assert_eq!(
            entries(cp, THREAD, ROOT, ch, c.id).await,
            vec![(c.id, e.clone())],
            "Set blob of {ch} differs"
        );
    }
}

/// A chain of `Delta` blobs reads back oldest first, each with the id that wrote it, from any
/// point of the chain.
pub async fn channel_entries_delta_chain(cp: &dyn Checkpointer) {
    let mut prev: Option<CheckpointId> = None;
    let mut written: Vec<(CheckpointId, ChannelEntry)> = Vec::new();
    let mut parent = None;
    for i in 0..5 {
        let mut c = ckpt(parent, i, Source::Loop);
        let e = ChannelEntry::Delta {
            prev,
            writes: (0..=i).map(|j| json!({"step": i, "j": j})).collect(),
        };
        c.channel_versions.insert("log".into(), c.id);
        put(cp, THREAD, ROOT, &c, &[("log", e.clone())]).await;
        written.push((c.id, e));
        prev = Some(c.id);
        parent = Some(c.id);
    }
    for (i, (id, _)) in written.iter().enumerate() {
        assert_eq!(
            entries(cp, THREAD, ROOT, "log", *id).await,
            written[..=i].to_vec(),
            "delta chain at link {i} is not oldest-first with ids"
        );
    }
    let value = channel_value(cp, THREAD, ROOT, "log", written[4].0).await;
    assert_eq!(
        value.and_then(|v| v.as_array().map(Vec::len)),
        Some(15),
        "folded delta chain"
    );
}

/// A delta chain stops at the nearest `Set` or `Clear` before it.
pub async fn channel_entries_chain_starts_at_set_or_clear(cp: &dyn Checkpointer) {
    let vids: Vec<CheckpointId> = (0..6).map(|_| CheckpointId::new()).collect();
    let plan = [
        ChannelEntry::Delta {
            prev: None,
            writes: vec![json!(0)],
        },
        ChannelEntry::Set(json!([10, 11])),
        ChannelEntry::Delta {
            prev: Some(vids[1]),
            writes: vec![json!(2)],
        },
        ChannelEntry::Delta {
            prev: Some(vids[2]),
            writes: vec![json!(3), json!(4)],
        },
        ChannelEntry::Clear,
        ChannelEntry::Delta {
            prev: Some(vids[4]),
            writes: vec![json!(5)],
        },
    ];
    for (i, e) in plan.iter().enumerate() {
        let mut c = ckpt(i.checked_sub(1).map(|p| vids[p]), i as i64, Source::Loop);
        c.id = vids[i];
        c.channel_versions.insert("ch".into(), c.id);
        put(cp, THREAD, ROOT, &c, &[("ch", e.clone())]).await;
    }
    let at = |i: usize| (vids[i], plan[i].clone());
    assert_eq!(entries(cp, THREAD, ROOT, "ch", vids[0]).await, vec![at(0)]);
    assert_eq!(entries(cp, THREAD, ROOT, "ch", vids[1]).await, vec![at(1)]);
    assert_eq!(
        entries(cp, THREAD, ROOT, "ch", vids[3]).await,
        vec![at(1), at(2), at(3)],
        "chain after a Set must start at the Set"
    );
    assert_eq!(
        entries(cp, THREAD, ROOT, "ch", vids[5]).await,
        vec![at(4), at(5)],
        "chain after a Clear must start at the Clear"
    );
    assert_eq!(
        channel_value(cp, THREAD, ROOT, "ch", vids[3]).await,
        Some(json!([10, 11, 2, 3, 4]))
    );
    assert_eq!(
        channel_value(cp, THREAD, ROOT, "ch", vids[5]).await,
        Some(json!([5]))
    );
}

/// A version with no blob, or a chain whose `prev` is missing, is a `MissingBlob` error naming
/// the thread, channel and the missing version.
pub async fn channel_entries_missing_blob(cp: &dyn Checkpointer) {
    let missing = CheckpointId::new();
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("ch".into(), c.id);
    let e = ChannelEntry::Delta {
        prev: Some(missing),
        writes: vec![json!(1)],
    };
    put(cp, THREAD, ROOT, &c, &[("ch", e)]).await;
    for (channel, version, want_missing) in [
        ("ch", missing, missing),
        ("ch", c.id, missing),
        ("other", c.id, c.id),
    ] {
        match cp.channel_entries(THREAD, ROOT, channel, version).await {
            Err(CheckpointError::MissingBlob {
                thread,
                channel: ch,
                version: v,
            }) => {
                assert_eq!(thread, THREAD, "MissingBlob names the wrong thread");
                assert_eq!(ch, channel, "MissingBlob names the wrong channel");
                assert_eq!(v, want_missing, "MissingBlob names the wrong version");
            }
            other => panic!("{channel}@{version}: expected MissingBlob, got {other:?}"),
        }
    }
    match cp.channel_entries("nobody", ROOT, "ch", c.id).await {
        Err(CheckpointError::MissingBlob { .. }) => {}
        other => panic!("missing thread: expected MissingBlob, got {other:?}"),
    }
}

/// Only changed channels get a blob: unchanged channels are read from older versions, an old
/// checkpoint still reads its old values after newer ones are written, and a channel added
/// later is read where it exists and absent before.
pub async fn incremental_blobs(cp: &dyn Checkpointer) {
    let mut c1 = ckpt(None, 0, Source::Loop);
    c1.channel_versions = BTreeMap::from([("a".into(), c1.id), ("b".into(), c1.id)]);
    put(
        cp,
        THREAD,
        ROOT,
        &c1,
        &[
            ("a", ChannelEntry::Set(json!(1))),
            ("b", ChannelEntry::Set(json!("b1"))),
        ],
    )
    .await;
    let mut c2 = ckpt(Some(c1.id), 1, Source::Loop);
    c2.channel_versions = BTreeMap::from([("a".into(), c2.id), ("b".into(), c1.id)]);
    put(cp, THREAD, ROOT, &c2, &[("a", ChannelEntry::Set(json!(2)))]).await;
    let mut c3 = ckpt(Some(c2.id), 2, Source::Loop);
    c3.channel_versions = BTreeMap::from([
        ("a".into(), c2.id),
        ("b".into(), c3.id),
        ("c".into(), c3.id),
    ]);
    put(
        cp,
        THREAD,
        ROOT,
        &c3,
        &[
            ("b", ChannelEntry::Set(json!("b3"))),
            (
                "c",
                ChannelEntry::Delta {
                    prev: None,
                    writes: vec![json!("c3")],
                },
            ),
        ],
    )
    .await;
    // Channel "a" dropped from the version map: must not be loaded any more.
    let mut c4 = ckpt(Some(c3.id), 3, Source::Loop);
    c4.channel_versions = BTreeMap::from([("b".into(), c3.id), ("c".into(), c4.id)]);
    put(
        cp,
        THREAD,
        ROOT,
        &c4,
        &[(
            "c",
            ChannelEntry::Delta {
                prev: Some(c3.id),
                writes: vec![json!("c4")],
            },
        )],
    )
    .await;

    let load = |c: Checkpoint| async move {
        let stored = must_get(cp, THREAD, ROOT, Some(c.id)).await.checkpoint;
        values_of(cp, THREAD, ROOT, &stored).await
    };
    let expect = |v: Value| -> BTreeMap<String, Value> { obj(v).into_iter().collect() };
    assert_eq!(
        load(c1).await,
        expect(json!({"a": 1, "b": "b1"})),
        "c1 values"
    );
    assert_eq!(
        load(c2).await,
        expect(json!({"a": 2, "b": "b1"})),
        "c2 values"
    );
    assert_eq!(
        load(c3).await,
        expect(json!({"a": 2, "b": "b3", "c": ["c3"]})),
        "c3 values"
    );
    assert_eq!(
        load(c4).await,
        expect(json!({"b": "b3", "c": ["c3", "c4"]})),
        "c4 values"
    );
}

/// `blob` reads the one entry a checkpoint wrote for a channel (not its chain), and `None`
/// for a channel or checkpoint that wrote none.
pub async fn blob_reads_one_entry(cp: &dyn Checkpointer) {
    let first = ckpt(None, 0, Source::Loop);
    let second = ckpt(Some(first.id), 1, Source::Loop);
    let delta = ChannelEntry::Delta {
        prev: Some(first.id),
        writes: vec![json!("b")],
    };
    put(
        cp,
        THREAD,
        ROOT,
        &first,
        &[("log", ChannelEntry::Set(json!(["a"])))],
    )
    .await;
    put(cp, THREAD, ROOT, &second, &[("log", delta.clone())]).await;
    let read = |ch: &'static str, id: CheckpointId| async move {
        cp.blob(THREAD, ROOT, ch, id).await.expect("blob")
    };
    assert_eq!(
        read("log", first.id).await,
        Some(ChannelEntry::Set(json!(["a"])))
    );
    assert_eq!(read("log", second.id).await, Some(delta), "not the chain");
    assert_eq!(
        read("other", second.id).await,
        None,
        "a channel never written"
    );
    assert_eq!(
        read("log", CheckpointId::new()).await,
        None,
        "a checkpoint that wrote nothing"
    );
}
