//! Export, import and check of checkpoint stores (`checkpoint::portable`): a round trip keeps
//! every checkpoint, blob and pending write; a damaged record is reported per thread.

use crate::common::*;
use agentgraph_runtime::checkpoint::portable::{self, PortableError};
use agentgraph_runtime::checkpoint::{KvStore, MemoryCheckpointer};
use agentgraph_runtime::*;
use serde_json::json;
use std::sync::Arc;

fn tuples_query() -> ListQuery {
    ListQuery::default()
}

/// Two threads of a logging chain (its log channel stores deltas), one of them forked.
async fn populated() -> Arc<MemoryCheckpointer> {
    let cp = Arc::new(MemoryCheckpointer::new());
    let g = logged_chain("chain", &["a", "b", "c"])
        .edge("c", END)
        .compile()
        .unwrap()
        .with_checkpointer(cp.clone());
    run_on(&g, "t1").await;
    run_on(&g, "t2").await;
    let h = g.history("t1", ListQuery::default()).await.unwrap();
    let middle = h[2].checkpoint_id;
    g.update_state("t1", Some(middle), json!({}), None)
        .await
        .unwrap();
    cp
}

async fn export_of(cp: &MemoryCheckpointer, skip: bool) -> Result<Vec<u8>, PortableError> {
    let mut out = Vec::new();
    portable::export(cp, &mut out, skip).await.map(|_| out)
}

#[tokio::test]
async fn export_then_import_gives_the_same_threads() {
    let src = populated().await;
    let file = export_of(&src, false).await.unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    assert!(text.starts_with(r#"{"kind":"header","format":"agentgraph-checkpoints","version":1}"#));

    let dst = MemoryCheckpointer::new();
    let stats = portable::import(&dst, &mut file.as_slice()).await.unwrap();
    assert_eq!(stats.threads, 2);
    assert_eq!(dst.list_threads().await.unwrap(), vec!["t1", "t2"]);
    for t in ["t1", "t2"] {
        let (a, b) = (
            src.list(t, &tuples_query()).await.unwrap(),
            dst.list(t, &tuples_query()).await.unwrap(),
        );
        assert!(a.len() >= 5, "{t}: {}", a.len());
        assert_eq!(a, b, "{t}: checkpoints or pending writes differ");
        // Every channel rebuilds to the same value at every checkpoint.
        for tuple in &a {
            for (ch, v) in &tuple.checkpoint.channel_versions {
                assert_eq!(
                    src.channel_entries(t, &tuple.ns, ch, *v).await.unwrap(),
                    dst.channel_entries(t, &tuple.ns, ch, *v).await.unwrap(),
                    "{t} {ch}@{v}"
                );
            }
        }
    }
    // The target now holds the threads: a second import is refused before writing.
    let e = portable::import(&dst, &mut file.as_slice())
        .await
        .unwrap_err();
    assert!(
        matches!(e, PortableError::ThreadExists(ref t) if t == "t1"),
        "{e}"
    );

    let checked = portable::check(&dst).await.unwrap();
    assert_eq!((checked.threads, checked.damaged.len()), (2, 0));
    assert_eq!(checked.checkpoints, stats.checkpoints);
}

#[tokio::test]
async fn a_damaged_blob_is_reported_for_its_thread_only() {
    let cp = populated().await;
    // Overwrite one blob of t2 with bytes that decode as nothing.
    let mut victim = None;
    cp.store()
        .scan(b"B", b"C", false, &mut |k, _| {
            if k.windows(2).any(|w| w == b"t2") {
                victim = Some(k.to_vec());
                return false;
            }
            true
        })
        .unwrap();
    let victim = victim.expect("a blob of t2");
    cp.store()
        .apply(vec![(victim, b"\xff\x00garbage".to_vec())], Vec::new())
        .unwrap();

    let checked = portable::check(cp.as_ref()).await.unwrap();
    assert_eq!(checked.threads, 1, "t1 is readable");
    assert_eq!(checked.damaged.len(), 1);
    assert_eq!(checked.damaged[0].thread, "t2");
    assert!(!checked.damaged[0].error.is_empty());

    let e = export_of(&cp, false).await.unwrap_err();
    assert!(
        matches!(e, PortableError::Damaged { ref thread, .. } if thread == "t2"),
        "{e}"
    );
    let file = export_of(&cp, true).await.unwrap();
    let dst = MemoryCheckpointer::new();
    let stats = portable::import(&dst, &mut file.as_slice()).await.unwrap();
    assert_eq!(dst.list_threads().await.unwrap(), vec!["t1"]);
    assert!(stats.checkpoints >= 5);
}

#[tokio::test]
async fn a_file_that_is_not_an_export_is_refused_with_its_line() {
    let dst = MemoryCheckpointer::new();
    for (text, line) in [
        ("not json\n", 1),
        ("{\"kind\":\"header\",\"format\":\"other\",\"version\":1}\n", 1),
        (
            "{\"kind\":\"header\",\"format\":\"agentgraph-checkpoints\",\"version\":1}\n\n{\"kind\":\"checkpoint\"}\n",
            3,
        ),
    ] {
        match portable::import(&dst, &mut text.as_bytes()).await {
            Err(PortableError::BadRecord { line: l, .. }) => assert_eq!(l, line, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    assert!(dst.list_threads().await.unwrap().is_empty());
}

#[tokio::test]
async fn threads_longer_than_a_page_go_through_whole() {
    use agentgraph_runtime::checkpoint::{ChannelEntry, Checkpoint};
    use std::collections::BTreeMap;
    // 600 checkpoints (more than two pages of 256), each with a blob and a pending write.
    let src = MemoryCheckpointer::new();
    let mut parent = None;
    for step in 0..600i64 {
        let id = CheckpointId::new();
        let c = Checkpoint {
            id,
            parent,
            step,
            source: Source::Loop,
            channel_versions: BTreeMap::from([("n".to_string(), id)]),
            next: Vec::new(),
            barriers: BTreeMap::new(),
            input: None,
            schema_version: "v1".into(),
            event_seq: 0,
            metadata: Default::default(),
        };
        src.put(
            "long",
            "",
            &c,
            &[("n".into(), ChannelEntry::Set(json!(step)))],
        )
        .await
        .unwrap();
        src.put_writes("long", "", id, "task", &[("n".into(), json!(step))])
            .await
            .unwrap();
        parent = Some(id);
    }
    let checked = portable::check(&src).await.unwrap();
    assert_eq!(
        (checked.checkpoints, checked.blobs, checked.writes),
        (600, 600, 600)
    );
    let file = export_of(&src, false).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&file).lines().count(), 601);
    let dst = MemoryCheckpointer::new();
    let stats = portable::import(&dst, &mut file.as_slice()).await.unwrap();
    assert_eq!(
        (stats.checkpoints, stats.blobs, stats.writes),
        (600, 600, 600)
    );
    assert_eq!(
        src.list("long", &tuples_query()).await.unwrap(),
        dst.list("long", &tuples_query()).await.unwrap()
    );
}
