//! Checks of key validation and value fidelity: invalid keys, `flush`, `null` payloads and
//! inputs, and exact float round trips.

use super::{
    assert_invalid_key, chain, ckpt, entries, get, must_get, obj, put, put_writes, query, ROOT,
    THREAD,
};
use agentgraph_runtime::checkpoint::{ChannelEntry, Checkpointer, PendingTask, Source};
use serde_json::{json, Value};

/// Ids the store cannot key (a NUL in a thread id, namespace, channel or task id) are an
/// `InvalidKey` error and write nothing.
pub async fn invalid_keys(cp: &dyn Checkpointer) {
    let bad = "a\0b";
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("x".into(), c.id);
    let blobs = vec![("x".to_string(), ChannelEntry::Set(json!(1)))];
    let writes = vec![("x".to_string(), json!(1))];
    assert_invalid_key(cp.put(bad, ROOT, &c, &blobs).await, "thread id", "put");
    assert_invalid_key(cp.put(THREAD, bad, &c, &blobs).await, "namespace", "put");
    let bad_blob = vec![
        ("x".to_string(), ChannelEntry::Set(json!(1))),
        (bad.to_string(), ChannelEntry::Set(json!(2))),
    ];
    assert_invalid_key(cp.put(THREAD, ROOT, &c, &bad_blob).await, "channel", "put");
    assert!(
        get(cp, THREAD, ROOT, None).await.is_none(),
        "a put that failed on a bad channel wrote the checkpoint"
    );
    assert!(
        cp.channel_entries(THREAD, ROOT, "x", c.id).await.is_err(),
        "a put that failed on a bad channel wrote a blob"
    );
    assert_invalid_key(
        cp.put_writes(bad, ROOT, c.id, "t", &writes).await,
        "thread id",
        "put_writes",
    );
    assert_invalid_key(
        cp.put_writes(THREAD, bad, c.id, "t", &writes).await,
        "namespace",
        "put_writes",
    );
    assert_invalid_key(
        cp.put_writes(THREAD, ROOT, c.id, bad, &writes).await,
        "task id",
        "put_writes",
    );
    assert_invalid_key(cp.get(bad, ROOT, None).await, "thread id", "get");
    assert_invalid_key(cp.get(THREAD, bad, Some(c.id)).await, "namespace", "get");
    assert_invalid_key(cp.list(bad, &query(None)).await, "thread id", "list");
    assert_invalid_key(
        cp.list(THREAD, &query(Some(bad))).await,
        "namespace",
        "list",
    );
    assert_invalid_key(
        cp.channel_entries(bad, ROOT, "x", c.id).await,
        "thread id",
        "channel_entries",
    );
    assert_invalid_key(
        cp.channel_entries(THREAD, bad, "x", c.id).await,
        "namespace",
        "channel_entries",
    );
    assert_invalid_key(cp.delete_thread(bad).await, "thread id", "delete_thread");
    assert_invalid_key(cp.prune(Some(bad), 1).await, "thread id", "prune");
    assert!(
        cp.list_threads().await.expect("list_threads").is_empty(),
        "failed calls created a thread"
    );
}

/// `flush` succeeds on an empty store and after writes, and what was written stays readable.
pub async fn flush_works(cp: &dyn Checkpointer) {
    cp.flush().await.expect("flush of an empty store");
    let cs = chain(cp, THREAD, ROOT, 3).await;
    put_writes(cp, THREAD, ROOT, cs[2].id, "t", &[("x", json!(1))]).await;
    cp.flush().await.expect("flush");
    let t = must_get(cp, THREAD, ROOT, None).await;
    assert_eq!(t.checkpoint, cs[2]);
    assert_eq!(t.pending_writes.len(), 1);
    cp.flush().await.expect("second flush");
}

/// A push task whose `send` payload is JSON `null`, and an input checkpoint whose input is
/// `null`, round-trip as `Some(Value::Null)` (a plain `Option<Value>` field would read them
/// back as `None`, turning a push task into a pull task).
pub async fn null_payload_and_input_round_trip(cp: &dyn Checkpointer) {
    let mut c = ckpt(None, -1, Source::Input);
    c.input = Some(Value::Null);
    c.next = vec![PendingTask {
        node: "worker".into(),
        payload: Some(Value::Null),
    }];
    put(cp, THREAD, ROOT, &c, &[]).await;
    let got = must_get(cp, THREAD, ROOT, Some(c.id)).await.checkpoint;
    assert_eq!(got.next, c.next, "a null send payload did not round-trip");
    assert_eq!(got.input, c.input, "a null input did not round-trip");
}

/// Floats in checkpoint fields, blobs and pending writes read back bit for bit (serde_json
/// needs its `float_roundtrip` feature for this: without it 130586.53403353193 reads back as
/// 130586.53403353192, and a value rebuilt from storage differs from the live one).
pub async fn floats_round_trip_exactly(cp: &dyn Checkpointer) {
    let floats = [
        130586.53403353193,
        -987765.3163121423,
        0.1 + 0.2,
        1.0e-300,
        f64::MAX,
        std::f64::consts::PI,
    ];
    let mut c = ckpt(None, 0, Source::Loop);
    c.channel_versions.insert("f".into(), c.id);
    c.metadata = obj(json!({"floats": floats}));
    c.input = Some(json!(floats));
    put(
        cp,
        THREAD,
        ROOT,
        &c,
        &[("f", ChannelEntry::Set(json!(floats)))],
    )
    .await;
    put_writes(cp, THREAD, ROOT, c.id, "t", &[("f", json!(floats))]).await;
    let t = must_get(cp, THREAD, ROOT, Some(c.id)).await;
    assert_eq!(t.checkpoint, c, "floats in checkpoint fields");
    assert_eq!(
        t.pending_writes[0].value,
        json!(floats),
        "floats in pending writes"
    );
    assert_eq!(
        entries(cp, THREAD, ROOT, "f", c.id).await,
        vec![(c.id, ChannelEntry::Set(json!(floats)))],
        "floats in blobs"
    );
}
