//! Checks of thread-wide operations: `list_threads`, `delete_thread` and `prune`.

use super::{
    chain, channel_value, ckpt, entries, get, ids, list, must_get, put, put_writes, query,
    values_of, CHILD, NESTED, OTHER, ROOT, THREAD,
};
use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, CheckpointError, Checkpointer, PruneStats, Source,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `list_threads` lists each thread once (whatever its namespaces), sorted.
pub async fn list_threads_sorted(cp: &dyn Checkpointer) {
    assert!(
        cp.list_threads().await.expect("list_threads").is_empty(),
        "empty store"
    );
    for t in ["b", "a", "c:1", "a b", "a"] {
        chain(cp, t, ROOT, 1).await;
    }
    chain(cp, "b", CHILD, 2).await;
    chain(cp, "d", NESTED, 1).await;
    assert_eq!(
        cp.list_threads().await.expect("list_threads"),
        vec!["a", "a b", "b", "c:1", "d"],
        "threads not listed once each, sorted"
    );
}

/// Puts one thread's data in three namespaces: checkpoints, writes and a delta chain each.
async fn populate(cp: &dyn Checkpointer, thread: &str) -> Vec<(&'static str, Vec<Checkpoint>)> {
    let mut out = Vec::new();
    for ns in [ROOT, CHILD, NESTED] {
        let mut cs: Vec<Checkpoint> = Vec::new();
        for i in 0..3 {
            let mut c = ckpt(cs.last().map(|p| p.id), i, Source::Loop);
            c.channel_versions.insert("log".into(), c.id);
            let e = ChannelEntry::Delta {
                prev: cs.last().map(|p| p.id),
                writes: vec![json!(i)],
            };
            put(cp, thread, ns, &c, &[("log", e)]).await;
            put_writes(cp, thread, ns, c.id, "task", &[("log", json!(i))]).await;
            cs.push(c);
        }
        out.push((ns, cs));
    }
    out
}

/// `delete_thread` removes checkpoints, writes and blobs of every namespace; deleting a missing
/// thread is a no-op.
pub async fn delete_thread_removes_everything(cp: &dyn Checkpointer) {
    let data = populate(cp, THREAD).await;
    cp.delete_thread(THREAD).await.expect("delete_thread");
    assert!(
        list(cp, THREAD, query(None)).await.is_empty(),
        "checkpoints left"
    );
    assert!(
        !cp.list_threads()
            .await
            .expect("list_threads")
            .iter()
            .any(|t| t == THREAD),
        "thread still listed"
    );
    for (ns, cs) in &data {
        assert!(
            get(cp, THREAD, ns, None).await.is_none(),
            "{ns:?} still has a checkpoint"
        );
        for c in cs {
            assert!(
                cp.channel_entries(THREAD, ns, "log", c.id).await.is_err(),
                "blob {} of {ns:?} left",
                c.id
            );
        }
        // Put the record back without writes: no pending writes may survive.
        put(cp, THREAD, ns, &cs[0], &[]).await;
        assert!(
            must_get(cp, THREAD, ns, Some(cs[0].id))
                .await
                .pending_writes
                .is_empty(),
            "pending writes of {ns:?} left after delete"
        );
    }
    cp.delete_thread(THREAD).await.expect("delete_thread again");
    cp.delete_thread("never-existed")
        .await
        .expect("delete a missing thread");
    assert!(list(cp, THREAD, query(None)).await.is_empty());
}

/// Deleting a thread leaves other threads (even ones whose id it prefixes) intact.
pub async fn delete_thread_leaves_other_threads(cp: &dyn Checkpointer) {
    let keep = ["t2", "t:", "u"];
    populate(cp, "t").await;
    let mut kept = Vec::new();
    for t in keep {
        kept.push((t, populate(cp, t).await));
    }
    cp.delete_thread("t").await.expect("delete_thread");
    assert_eq!(
        cp.list_threads().await.expect("list_threads"),
        vec!["t2", "t:", "u"],
        "remaining threads"
    );
    for (t, data) in kept {
        assert_eq!(
            list(cp, t, query(None)).await.len(),
            9,
            "{t:?} lost checkpoints"
        );
        for (ns, cs) in data {
            let last = cs.last().expect("populated");
            let tuple = must_get(cp, t, ns, None).await;
            assert_eq!(&tuple.checkpoint, last, "{t:?}/{ns:?} newest");
            assert_eq!(tuple.pending_writes.len(), 1, "{t:?}/{ns:?} lost writes");
            assert_eq!(
                channel_value(cp, t, ns, "log", last.id).await,
                Some(json!([0, 1, 2])),
                "{t:?}/{ns:?} lost blobs"
            );
        }
    }
}

/// `prune(thread, keep)` keeps the newest `keep` checkpoints of each namespace with their
/// pending writes, removes the rest with their writes, and reports the counts.
pub async fn prune_keeps_newest_per_namespace(cp: &dyn Checkpointer) {
    let root = chain(cp, THREAD, ROOT, 5).await;
    let child = chain(cp, THREAD, CHILD, 3).await;
    let nested = chain(cp, THREAD, NESTED, 1).await;
    chain(cp, OTHER, ROOT, 5).await;
    for (ns, cs) in [(ROOT, &root), (CHILD, &child), (NESTED, &nested)] {
        for c in cs {
            put_writes(
                cp,
                THREAD,
                ns,
                c.id,
                "task",
                &[("x", json!(1)), ("y", json!(2))],
            )
            .await;
        }
    }
    let stats = cp.prune(Some(THREAD), 2).await.expect("prune");
    assert_eq!(
        (stats.checkpoints, stats.writes),
        (3 + 1, 2 * (3 + 1)),
        "prune counts: {stats:?}"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(ROOT))).await),
        vec![root[4].id, root[3].id],
        "root keeps its newest 2"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(CHILD))).await),
        vec![child[2].id, child[1].id],
        "child keeps its newest 2"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(NESTED))).await),
        vec![nested[0].id],
        "a namespace with fewer than keep is untouched"
    );
    for t in list(cp, THREAD, query(None)).await {
        assert_eq!(
            t.pending_writes.len(),
            2,
            "a kept checkpoint lost its writes"
        );
    }
    assert_eq!(
        cp.prune(Some(THREAD), 2).await.expect("prune again"),
        PruneStats::default(),
        "a second prune to the same size removed more"
    );
    for c in &root[..3] {
        assert!(
            get(cp, THREAD, ROOT, Some(c.id)).await.is_none(),
            "pruned checkpoint left"
        );
        put(cp, THREAD, ROOT, c, &[]).await;
        assert!(
            must_get(cp, THREAD, ROOT, Some(c.id))
                .await
                .pending_writes
                .is_empty(),
            "writes of a pruned checkpoint left"
        );
    }
    assert_eq!(
        list(cp, OTHER, query(None)).await.len(),
        5,
        "prune of one thread touched another"
    );
    assert_eq!(
        cp.prune(Some("nobody"), 1).await.expect("prune missing"),
        PruneStats::default(),
        "prune of a missing thread"
    );
}

/// Pruning keeps every blob a kept checkpoint's channels still need (whole delta chains back to
/// their `Set`, and unchanged channels' older blobs) and removes the rest.
pub async fn prune_keeps_needed_blobs(cp: &dyn Checkpointer) {
    // Five steps: "log" is a delta chain with a Set at step 2; "count" is Set every step;
    // "static" is written once at step 0 and never again; "gone" only at step 1 then dropped.
    let mut cs: Vec<Checkpoint> = Vec::new();
    for i in 0..5i64 {
        let mut c = ckpt(cs.last().map(|p| p.id), i, Source::Loop);
        let prev = cs.last().map(|p| p.channel_versions["log"]);
        let log = if i == 2 {
            ChannelEntry::Set(json!(["reset"]))
        } else {
            ChannelEntry::Delta {
                prev,
                writes: vec![json!(i)],
            }
        };
        let mut blobs = vec![("log", log), ("count", ChannelEntry::Set(json!(i)))];
        c.channel_versions.insert("log".into(), c.id);
        c.channel_versions.insert("count".into(), c.id);
        if i == 0 {
            blobs.push(("static", ChannelEntry::Set(json!("s"))));
            c.channel_versions.insert("static".into(), c.id);
        } else {
            c.channel_versions.insert("static".into(), cs[0].id);
        }
        if i == 1 {
            blobs.push(("gone", ChannelEntry::Set(json!("g"))));
            c.channel_versions.insert("gone".into(), c.id);
        }
        put(cp, THREAD, ROOT, &c, &blobs).await;
        cs.push(c);
    }
    let before: Vec<BTreeMap<String, Value>> = {
        let mut v = Vec::new();
        for c in &cs {
            v.push(values_of(cp, THREAD, ROOT, c).await);
        }
        v
    };
    let stats = cp.prune(Some(THREAD), 2).await.expect("prune");
    // Kept: steps 3 and 4. They need log@2,3,4, count@3,4, static@0. Removed: log@0,1,
    // count@0,1,2, gone@1.
    assert_eq!(stats.checkpoints, 3, "checkpoints removed: {stats:?}");
    assert_eq!(stats.blobs, 6, "blobs removed: {stats:?}");
    for i in [3, 4] {
        let stored = must_get(cp, THREAD, ROOT, Some(cs[i].id)).await.checkpoint;
        assert_eq!(
            values_of(cp, THREAD, ROOT, &stored).await,
            before[i],
            "kept checkpoint {i} cannot be rebuilt after prune"
        );
    }
    assert_eq!(
        entries(cp, THREAD, ROOT, "log", cs[4].id)
            .await
            .into_iter()
            .map(|x| x.0)
            .collect::<Vec<_>>(),
        vec![cs[2].id, cs[3].id, cs[4].id],
        "delta chain of a kept checkpoint"
    );
    for (ch, i) in [
        ("log", 0),
        ("log", 1),
        ("count", 0),
        ("count", 2),
        ("gone", 1),
    ] {
        match cp.channel_entries(THREAD, ROOT, ch, cs[i].id).await {
            Err(CheckpointError::MissingBlob { .. }) => {}
            other => panic!("unreachable blob {ch}@{i} was not removed: {other:?}"),
        }
    }
    let again = cp.prune(Some(THREAD), 2).await.expect("prune again");
    assert_eq!(again, PruneStats::default(), "a second prune removed more");
}

/// `prune(None, keep)` covers every thread and sums the counts.
pub async fn prune_every_thread(cp: &dyn Checkpointer) {
    let a = chain(cp, "a", ROOT, 4).await;
    let b = chain(cp, "b", ROOT, 2).await;
    let b_child = chain(cp, "b", CHILD, 3).await;
    let c = chain(cp, "c", ROOT, 1).await;
    let stats = cp.prune(None, 1).await.expect("prune all");
    assert_eq!(
        stats.checkpoints,
        3 + 1 + 2,
        "checkpoints removed: {stats:?}"
    );
    assert_eq!(
        ids(&list(cp, "a", query(None)).await),
        vec![a[3].id],
        "thread a"
    );
    assert_eq!(
        ids(&list(cp, "b", query(None)).await),
        vec![b_child[2].id, b[1].id],
        "thread b"
    );
    assert_eq!(
        ids(&list(cp, "c", query(None)).await),
        vec![c[0].id],
        "thread c"
    );
}

/// `prune(thread, 0)` removes every checkpoint, write and blob of the thread.
pub async fn prune_keep_zero_removes_all(cp: &dyn Checkpointer) {
    populate(cp, THREAD).await;
    populate(cp, OTHER).await;
    let stats = cp.prune(Some(THREAD), 0).await.expect("prune 0");
    assert_eq!(
        stats,
        PruneStats {
            checkpoints: 9,
            blobs: 9,
            writes: 9
        },
        "prune to zero counts"
    );
    assert!(
        list(cp, THREAD, query(None)).await.is_empty(),
        "checkpoints left"
    );
    assert_eq!(
        list(cp, OTHER, query(None)).await.len(),
        9,
        "other thread touched"
    );
}

/// Pruning a long history (more checkpoints than one delete batch holds) removes every old
/// checkpoint, write and unreachable blob, and the kept checkpoints read the same values.
pub async fn prune_long_history(cp: &dyn Checkpointer) {
    // 2 100 steps: "log" is a delta chain restarted by a Set every 100 steps, "static" is
    // written once at step 0, and every checkpoint has one pending write.
    const STEPS: i64 = 2_100;
    const KEEP: usize = 5;
    let mut cs: Vec<Checkpoint> = Vec::new();
    for i in 0..STEPS {
        let mut c = ckpt(cs.last().map(|p| p.id), i, Source::Loop);
        let log = if i % 100 == 0 {
            ChannelEntry::Set(json!([i]))
        } else {
            ChannelEntry::Delta {
                prev: cs.last().map(|p| p.channel_versions["log"]),
                writes: vec![json!(i)],
            }
        };
        let mut blobs = vec![("log", log)];
        c.channel_versions.insert("log".into(), c.id);
        if i == 0 {
            blobs.push(("static", ChannelEntry::Set(json!("s"))));
            c.channel_versions.insert("static".into(), c.id);
        } else {
            c.channel_versions.insert("static".into(), cs[0].id);
        }
        put(cp, THREAD, ROOT, &c, &blobs).await;
        put_writes(cp, THREAD, ROOT, c.id, "task", &[("x", json!(i))]).await;
        cs.push(c);
    }
    let newest = cs.len() - KEEP;
    let mut before = Vec::new();
    for c in &cs[newest..] {
        before.push(values_of(cp, THREAD, ROOT, c).await);
    }
    let stats = cp.prune(Some(THREAD), KEEP).await.expect("prune");
    // Kept: steps 2095..2099, whose "log" chain goes back to the Set at step 2000, and
    // "static"@0. Every other "log" blob goes: 2 100 - 100 of them.
    let dropped = STEPS as usize - KEEP;
    assert_eq!(
        stats,
        PruneStats {
            checkpoints: dropped,
            blobs: STEPS as usize - 100,
            writes: dropped,
        },
        "prune counts"
    );
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(ROOT))).await),
        cs[newest..].iter().rev().map(|c| c.id).collect::<Vec<_>>(),
        "the newest {KEEP} are kept"
    );
    for (c, want) in cs[newest..].iter().zip(&before) {
        assert_eq!(
            &values_of(cp, THREAD, ROOT, c).await,
            want,
            "a kept checkpoint reads other values after the prune"
        );
        assert_eq!(
            must_get(cp, THREAD, ROOT, Some(c.id))
                .await
                .pending_writes
                .len(),
            1,
            "a kept checkpoint lost its write"
        );
    }
    assert_eq!(before[KEEP - 1]["log"].as_array().map(Vec::len), Some(100));
    assert_eq!(
        cp.prune(Some(THREAD), KEEP).await.expect("prune again"),
        PruneStats::default(),
        "a second prune removed more"
    );
}
