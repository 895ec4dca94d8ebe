//! Runs the shared checkpointer conformance suite against every built-in backend, plus the
//! sled-only durability check.

use agentgraph_checkpoint_conformance as conformance;
use agentgraph_runtime::checkpoint::{
    ChannelEntry, Checkpoint, Checkpointer, ListQuery, MemoryCheckpointer, PendingTask,
    SledCheckpointer, Source,
};
use agentgraph_runtime::CheckpointId;
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::test]
async fn memory_checkpointer_conforms() {
    conformance::run_all(|| async { Arc::new(MemoryCheckpointer::new()) as Arc<dyn Checkpointer> })
        .await;
}

#[tokio::test]
async fn sled_checkpointer_conforms() {
    let base = tempfile::tempdir().expect("tempdir");
    let n = AtomicUsize::new(0);
    conformance::run_all(|| {
        let path = base
            .path()
            .join(format!("db-{}", n.fetch_add(1, Ordering::Relaxed)));
        async move {
            Arc::new(SledCheckpointer::open(&path).expect("open sled")) as Arc<dyn Checkpointer>
        }
    })
    .await;
}

#[test]
fn suite_check_names_are_unique() {
    let mut names: Vec<&str> = conformance::CHECKS.iter().map(|(n, _)| *n).collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "duplicate check names");
    assert!(total >= 25, "the suite lost checks: {total}");
}

fn sample(parent: Option<CheckpointId>, step: i64) -> Checkpoint {
    let id = CheckpointId::new();
    Checkpoint {
        id,
        parent,
        step,
        source: Source::Loop,
        channel_versions: BTreeMap::from([("log".to_string(), id)]),
        next: vec![PendingTask {
            node: "worker".into(),
            payload: Some(json!({"n": step})),
        }],
        barriers: BTreeMap::from([("join".to_string(), vec!["a".to_string()])]),
        input: None,
        schema_version: "v1".into(),
        event_seq: step as u64 * 3,
        metadata: Map::from_iter([("run_id".to_string(), json!("r1"))]),
    }
}

#[tokio::test]
async fn sled_data_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut written = Vec::new();
    {
        let cp: Arc<dyn Checkpointer> = Arc::new(SledCheckpointer::open(dir.path()).expect("open"));
        let mut prev: Option<CheckpointId> = None;
        for (step, ns) in [(0, ""), (1, ""), (2, "child:abc"), (3, "")] {
            let c = sample(prev, step);
            let entry = ChannelEntry::Delta {
                prev: if ns.is_empty() { prev } else { None },
                writes: vec![json!(step)],
            };
            cp.put("t", ns, &c, &[("log".to_string(), entry)])
                .await
                .expect("put");
            cp.put_writes("t", ns, c.id, "task", &[("log".to_string(), json!(step))])
                .await
                .expect("put_writes");
            if ns.is_empty() {
                prev = Some(c.id);
            }
            written.push((ns, c));
        }
        cp.flush().await.expect("flush");
    }

    let cp: Arc<dyn Checkpointer> =
        Arc::new(SledCheckpointer::open(dir.path()).expect("reopen after drop"));
    assert_eq!(cp.list_threads().await.unwrap(), vec!["t"]);
    for (ns, c) in &written {
        let t = cp
            .get("t", ns, Some(c.id))
            .await
            .unwrap()
            .expect("checkpoint survives reopen");
        assert_eq!(&t.checkpoint, c);
        assert_eq!(t.pending_writes.len(), 1, "pending writes survive reopen");
        assert_eq!(t.pending_writes[0].value, json!(c.step));
    }
    let listed = cp
        .list(
            "t",
            &ListQuery {
                ns: Some(String::new()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    let want: Vec<CheckpointId> = written
        .iter()
        .rev()
        .filter(|(ns, _)| ns.is_empty())
        .map(|(_, c)| c.id)
        .collect();
    assert_eq!(
        listed.iter().map(|t| t.checkpoint.id).collect::<Vec<_>>(),
        want
    );
    let newest = &written[3].1;
    let chain = cp
        .channel_entries("t", "", "log", newest.id)
        .await
        .expect("delta chain survives reopen");
    let steps: Vec<_> = chain
        .iter()
        .flat_map(|(_, e)| match e {
            ChannelEntry::Delta { writes, .. } => writes.clone(),
            other => panic!("unexpected entry {other:?}"),
        })
        .collect();
    assert_eq!(steps, vec![json!(0), json!(1), json!(3)]);

    // Writing after a reopen keeps ids ordered after the old ones.
    let c = sample(Some(newest.id), 4);
    cp.put("t", "", &c, &[]).await.unwrap();
    assert_eq!(cp.get("t", "", None).await.unwrap().unwrap().checkpoint, c);
}
