//! Checks of `list`: ordering, namespace and metadata filters, `before` and `limit`.

use super::{
    chain, ckpt, ids, list, newest_first, obj, put, put_writes, query, CHILD, NESTED, OTHER, ROOT,
    THREAD,
};
use agentgraph_runtime::checkpoint::{Checkpoint, Checkpointer, ListQuery, Source};
use agentgraph_runtime::CheckpointId;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `list` returns every checkpoint of the thread, newest first, with pending writes.
pub async fn list_newest_first(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 6).await;
    put_writes(cp, THREAD, ROOT, cs[2].id, "t", &[("x", json!(2))]).await;
    chain(cp, OTHER, ROOT, 2).await;
    let listed = list(cp, THREAD, query(None)).await;
    assert_eq!(
        ids(&listed),
        newest_first(&cs),
        "not every checkpoint, newest first"
    );
    for t in &listed {
        let c = cs.iter().find(|c| c.id == t.checkpoint.id).expect("listed");
        assert_eq!(
            &t.checkpoint, c,
            "listed checkpoint differs from the one put"
        );
        let want = usize::from(c.id == cs[2].id);
        assert_eq!(t.pending_writes.len(), want, "listed pending writes");
    }
    assert_eq!(
        ids(&list(cp, THREAD, query(Some(ROOT))).await),
        newest_first(&cs),
        "list with ns Some(\"\")"
    );
}

/// `ns: Some("")` lists only the root, `Some(ns)` only that namespace, `None` every namespace
/// merged newest first.
pub async fn list_namespace_filter(cp: &dyn Checkpointer) {
    let mut all: Vec<(String, CheckpointId)> = Vec::new();
    let mut parents: BTreeMap<&str, CheckpointId> = BTreeMap::new();
    // Interleave namespaces so that "newest first" has to merge them.
    for ns in [ROOT, CHILD, ROOT, NESTED, CHILD, ROOT, NESTED] {
        let c = ckpt(parents.get(ns).copied(), 0, Source::Loop);
        put(cp, THREAD, ns, &c, &[]).await;
        parents.insert(ns, c.id);
        all.push((ns.to_string(), c.id));
    }
    all.reverse();
    for ns in [ROOT, CHILD, NESTED] {
        let listed = list(cp, THREAD, query(Some(ns))).await;
        let want: Vec<CheckpointId> = all.iter().filter(|(n, _)| n == ns).map(|x| x.1).collect();
        assert_eq!(ids(&listed), want, "list of namespace {ns:?}");
        assert!(
            listed.iter().all(|t| t.ns == ns),
            "tuple names the wrong namespace"
        );
    }
    let listed = list(cp, THREAD, query(None)).await;
    let got: Vec<(String, CheckpointId)> = listed
        .iter()
        .map(|t| (t.ns.clone(), t.checkpoint.id))
        .collect();
    assert_eq!(got, all, "ns None must list every namespace, newest first");
    let limited = list(
        cp,
        THREAD,
        ListQuery {
            limit: Some(3),
            ..query(None)
        },
    )
    .await;
    assert_eq!(
        ids(&limited),
        all.iter().take(3).map(|x| x.1).collect::<Vec<_>>(),
        "limit over every namespace"
    );
    assert!(
        list(cp, THREAD, query(Some("missing"))).await.is_empty(),
        "a missing namespace lists checkpoints"
    );
}

/// Filters on `source`, `step` and custom metadata keys, ANDed; no match gives an empty list.
pub async fn list_metadata_filter(cp: &dyn Checkpointer) {
    let plan = [
        (-1, Source::Input, "run-1", "alice"),
        (0, Source::Loop, "run-1", "alice"),
        (1, Source::Loop, "run-1", "bob"),
        (1, Source::Update, "run-2", "bob"),
        (2, Source::Loop, "run-2", "alice"),
        (3, Source::Fork, "run-3", "carol"),
    ];
    let mut cs = Vec::new();
    let mut parent = None;
    for (step, source, run, user) in plan {
        let mut c = ckpt(parent, step, source);
        c.metadata = obj(json!({"run_id": run, "user": user, "score": step * 10}));
        put(cp, THREAD, ROOT, &c, &[]).await;
        parent = Some(c.id);
        cs.push(c);
    }
    let filtered = |f: Value| {
        let filter = obj(f);
        async move {
            ids(&list(
                cp,
                THREAD,
                ListQuery {
                    filter,
                    ..ListQuery::default()
                },
            )
            .await)
        }
    };
    let want = |pred: &dyn Fn(&Checkpoint) -> bool| -> Vec<CheckpointId> {
        cs.iter().rev().filter(|c| pred(c)).map(|c| c.id).collect()
    };
    assert_eq!(
        filtered(json!({"source": "loop"})).await,
        want(&|c| c.source == Source::Loop),
        "filter on source"
    );
    assert_eq!(
        filtered(json!({"source": "input"})).await,
        want(&|c| c.source == Source::Input),
        "filter on source input"
    );
    assert_eq!(
        filtered(json!({"step": 1})).await,
        want(&|c| c.step == 1),
        "filter on step"
    );
    assert_eq!(
        filtered(json!({"step": -1})).await,
        want(&|c| c.step == -1),
        "filter on a negative step"
    );
    assert_eq!(
        filtered(json!({"run_id": "run-1"})).await,
        want(&|c| c.metadata["run_id"] == "run-1"),
        "filter on a custom key"
    );
    assert_eq!(
        filtered(json!({"score": 20})).await,
        want(&|c| c.step == 2),
        "filter on a numeric custom key"
    );
    assert_eq!(
        filtered(json!({"source": "loop", "user": "alice", "run_id": "run-2"})).await,
        vec![cs[4].id],
        "several keys are ANDed"
    );
    assert_eq!(
        filtered(json!({"step": 1, "user": "bob"})).await,
        vec![cs[3].id, cs[2].id],
        "step and custom key"
    );
    assert!(
        filtered(json!({"user": "dave"})).await.is_empty(),
        "no match"
    );
    assert!(
        filtered(json!({"source": "loop", "user": "carol"}))
            .await
            .is_empty(),
        "AND with no match"
    );
    assert!(
        filtered(json!({"absent": 1})).await.is_empty(),
        "missing key matched"
    );
    assert_eq!(
        filtered(json!({})).await,
        want(&|_| true),
        "an empty filter matches everything"
    );
}

/// `before` is a cursor (strictly older), `limit` caps the count, and both combine for paging.
pub async fn list_before_and_limit(cp: &dyn Checkpointer) {
    let cs = chain(cp, THREAD, ROOT, 7).await;
    let all = newest_first(&cs);
    let q = |before: Option<CheckpointId>, limit: Option<usize>| ListQuery {
        ns: Some(ROOT.into()),
        before,
        limit,
        ..ListQuery::default()
    };
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(cs[4].id), None)).await),
        all[3..].to_vec(),
        "before is not 'strictly older than'"
    );
    assert!(
        list(cp, THREAD, q(Some(cs[0].id), None)).await.is_empty(),
        "before the oldest"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(CheckpointId::new()), None)).await),
        all,
        "before an id newer than every checkpoint"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(None, Some(3))).await),
        all[..3].to_vec(),
        "limit"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(None, Some(100))).await),
        all,
        "limit above the count"
    );
    assert!(
        list(cp, THREAD, q(None, Some(0))).await.is_empty(),
        "limit 0"
    );
    assert_eq!(
        ids(&list(cp, THREAD, q(Some(cs[5].id), Some(2))).await),
        vec![cs[4].id, cs[3].id],
        "limit with before"
    );
    // Page through with limit + before.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = ids(&list(cp, THREAD, q(cursor, Some(3))).await);
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3, "page larger than limit");
        cursor = page.last().copied();
        paged.extend(page);
        assert!(paged.len() <= all.len(), "paging does not terminate");
    }
    assert_eq!(paged, all, "paging with limit + before");
    // before + filter + limit together.
    let filtered = list(
        cp,
        THREAD,
        ListQuery {
            filter: obj(json!({"source": "loop"})),
            ..q(Some(cs[6].id), Some(2))
        },
    )
    .await;
    assert_eq!(
        ids(&filtered),
        vec![cs[5].id, cs[4].id],
        "before + filter + limit"
    );
}
