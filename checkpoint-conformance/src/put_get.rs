//! Checks of `put` and `get`: round trips, sources, latest-vs-by-id, missing data, and
//! isolation of namespaces and threads.

use super::{
    chain, channel_value, ckpt, full_checkpoint, get, ids, list, must_get, newest_first, obj, put,
    query, CHILD, NESTED, OTHER, ROOT, THREAD,
};
use agentgraph_runtime::checkpoint::{ChannelEntry, Checkpointer, Source};
use agentgraph_runtime::CheckpointId;
use serde_json::json;

/// Every field of a checkpoint comes back from `get` unchanged, by id and as the newest, with
/// the thread and namespace it was put under and no pending writes; a root checkpoint (no
/// parent, empty maps, no input) round-trips too.
pub async fn put_get_round_trip(cp: &dyn Checkpointer) {
    let root = ckpt(None, -1, Source::Input);
    put(cp, THREAD, ROOT, &root, &[]).await;
    let t = must_get(cp, THREAD, ROOT, Some(root.id)).await;
    assert_eq!(
        t.checkpoint, root,
        "bare root checkpoint did not round-trip"
    );
    assert_eq!(t.checkpoint.parent, None, "root checkpoint grew a parent");

    let c = full_checkpoint(Some(root.id));
    put(
        cp,
        THREAD,
        ROOT,
        &c,
        &[("count", ChannelEntry::Set(json!(7)))],
    )
    .await;
    for id in [Some(c.id), None] {
        let t = must_get(cp, THREAD, ROOT, id).await;
        assert_eq!(
            t.checkpoint, c,
            "checkpoint fields differ after get({id:?})"
        );
        assert_eq!(t.thread_id, THREAD, "tuple names the wrong thread");
        assert_eq!(t.ns, ROOT, "tuple names the wrong namespace");
        assert!(t.pending_writes.is_empty(), "fresh checkpoint has writes");
    }

    let mut in_child = full_checkpoint(Some(c.id));
    in_child.source = Source::Update;
    put(cp, THREAD, CHILD, &in_child, &[]).await;
    let t = must_get(cp, THREAD, CHILD, None).await;
    assert_eq!(t.checkpoint, in_child, "child-namespace checkpoint differs");
    assert_eq!(t.ns, CHILD, "tuple names the wrong namespace");
}

/// Each [`Source`] and both signs of `step` round-trip, and `get` and `list` report them.
pub async fn put_get_every_source(cp: &dyn Checkpointer) {
    let mut put_order = Vec::new();
    let mut parent = None;
    for (step, source) in [
        (-1, Source::Input),
        (0, Source::Loop),
        (1, Source::Update),
        (2, Source::Fork),
        (i64::MAX, Source::Loop),
    ] {
        let mut c = ckpt(parent, step, source);
        if source == Source::Input {
            c.input = Some(json!("start"));
        }
        put(cp, THREAD, ROOT, &c, &[]).await;
        let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
        assert_eq!(
            t.checkpoint, c,
            "{source:?} checkpoint at step {step} differs"
        );
        parent = Some(c.id);
        put_order.push(c);
    }
    let listed = list(cp, THREAD, query(None)).await;
    let got: Vec<(i64, Source)> = listed
        .iter()
        .map(|t| (t.checkpoint.step, t.checkpoint.source))
        .collect();
    let want: Vec<(i64, Source)> = put_order.iter().rev().map(|c| (c.step, c.source)).collect();
    assert_eq!(got, want, "list reports the wrong steps or sources");
}

/// `get(None)` is the newest checkpoint of the namespace; `get(Some(id))` is exactly that one,
/// with its parent link.
pub async fn get_latest_and_by_id(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 4).await;
    let latest = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(
        latest.checkpoint, cs[3],
        "get(None) is not the newest checkpoint"
    );
    for (i, c) in cs.iter().enumerate() {
        let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
        assert_eq!(&t.checkpoint, c, "get(Some) returned another checkpoint");
        let want_parent = if i == 0 { None } else { Some(cs[i - 1].id) };
        assert_eq!(t.checkpoint.parent, want_parent, "parent link lost");
    }
    // A newer checkpoint put later becomes the latest.
    let newer = ckpt(Some(cs[3].id), 3, Source::Loop);
    put(cp, THREAD, ROOT, &newer, &[]).await;
    assert_eq!(
        must_get(cp, THREAD, ROOT, None).await.checkpoint.id,
        newer.id,
        "get(None) did not move to the checkpoint put last"
    );
}

/// Missing threads, namespaces and ids read as `None` (not errors); listing them is empty.
pub async fn get_missing(cp: &dyn Checkpointer) {
    assert!(
        get(cp, "nobody", ROOT, None).await.is_none(),
        "missing thread"
    );
    assert!(
        get(cp, "nobody", ROOT, Some(CheckpointId::new()))
            .await
            .is_none(),
        "missing thread by id"
    );
    assert!(
        list(cp, "nobody", query(None)).await.is_empty(),
        "list of missing thread"
    );

    let cs = chain(cp, THREAD, ROOT, 2).await;
    assert!(
        get(cp, THREAD, ROOT, Some(CheckpointId::new()))
            .await
            .is_none(),
        "an id never put was found"
    );
    assert!(
        get(cp, THREAD, CHILD, None).await.is_none(),
        "missing namespace"
    );
    assert!(
        get(cp, THREAD, CHILD, Some(cs[0].id)).await.is_none(),
        "a root checkpoint was found under a child namespace"
    );
    assert!(
        get(cp, OTHER, ROOT, Some(cs[0].id)).await.is_none(),
        "a checkpoint was found under another thread"
    );
}

/// The root namespace, a child namespace and a nested one (and prefixes of each other) hold
/// separate checkpoints and blobs.
pub async fn namespaces_isolated(cp: &dyn Checkpointer) {
    let namespaces = [ROOT, CHILD, NESTED, "a:1", "child"];
    let mut by_ns = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        let mut c = ckpt(None, i as i64, Source::Loop);
        c.channel_versions.insert("x".into(), c.id);
        c.metadata = obj(json!({"ns": ns}));
        put(cp, THREAD, ns, &c, &[("x", ChannelEntry::Set(json!(ns)))]).await;
        by_ns.push(c);
    }
    for (ns, c) in namespaces.iter().zip(&by_ns) {
        let t = must_get(cp, THREAD, ns, None).await;
        assert_eq!(
            &t.checkpoint, c,
            "namespace {ns:?} returned another namespace's newest"
        );
        assert_eq!(t.ns, *ns, "tuple names the wrong namespace");
        assert_eq!(
            channel_value(cp, THREAD, ns, "x", c.id).await,
            Some(json!(ns)),
            "blob of namespace {ns:?} differs"
        );
        for (other_ns, other) in namespaces.iter().zip(&by_ns) {
            if other_ns != ns {
                assert!(
                    get(cp, THREAD, ns, Some(other.id)).await.is_none(),
                    "checkpoint of {other_ns:?} visible under {ns:?}"
                );
                assert!(
                    cp.channel_entries(THREAD, ns, "x", other.id).await.is_err(),
                    "blob of {other_ns:?} visible under {ns:?}"
                );
            }
        }
        let listed = list(cp, THREAD, query(Some(ns))).await;
        assert_eq!(
            ids(&listed),
            vec![c.id],
            "list of {ns:?} is not exactly its checkpoint"
        );
    }
}

/// Threads (including one whose id is a prefix of another's) hold separate checkpoints.
pub async fn threads_isolated(cp: &dyn Checkpointer) {
    let threads = ["t", "t2", "t:1", "T", "t 1"];
    let mut by_thread = Vec::new();
    for t in threads {
        by_thread.push(chain(cp, t, ROOT, 2).await);
    }
    for (t, cs) in threads.iter().zip(&by_thread) {
        assert_eq!(
            must_get(cp, t, ROOT, None).await.checkpoint,
            cs[1],
            "thread {t:?} returned another thread's newest"
        );
        let listed = list(cp, t, query(None)).await;
        assert_eq!(ids(&listed), newest_first(cs), "list of thread {t:?}");
        assert!(
            listed.iter().all(|x| x.thread_id == *t),
            "tuple names the wrong thread"
        );
        for (other_t, other) in threads.iter().zip(&by_thread) {
            if other_t != t {
                assert!(
                    get(cp, t, ROOT, Some(other[0].id)).await.is_none(),
                    "checkpoint of {other_t:?} visible under {t:?}"
                );
            }
        }
    }
}
