use super::*;
use std::path::Path;

fn open(dir: &Path, settings: WalSettings) -> WalTree {
    let db = sled::Config::new().path(dir).open().expect("sled");
    WalTree::open(db, "t", dir, settings).expect("open")
}

/// Never merges on its own: batches stay in the log and the overlay until `drain`.
fn lazy() -> WalSettings {
    WalSettings {
        merge_bytes: usize::MAX / 8,
        merge_every: Duration::from_secs(3600),
        segment_bytes: 1 << 20,
        compress_values: true,
    }
}

fn put(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

fn all(t: &WalTree, reverse: bool) -> Vec<String> {
    let mut out = Vec::new();
    t.scan(b"", &[0xff], reverse, &mut |k, v| {
        out.push(format!(
            "{}={}",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        ));
        true
    })
    .expect("scan");
    out
}

fn get(t: &WalTree, k: &str) -> Option<String> {
    t.get(k.as_bytes())
        .expect("get")
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

/// Copies a folder as a crash would leave it: whatever the files hold now.
fn snapshot(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            snapshot(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[tokio::test]
async fn reads_see_the_overlay_over_sled_and_deletes_hide_sled_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = open(dir.path(), lazy());
    t.apply(vec![put("a", "1"), put("b", "2"), put("c", "3")], vec![])
        .expect("apply");
    t.drain().expect("drain");
    assert_eq!(
        t.sled_tree().len(),
        3,
        "the drain moved the batch into sled"
    );
    t.apply(vec![put("b", "20"), put("d", "4")], vec![b"c".to_vec()])
        .expect("apply");
    assert_eq!(get(&t, "b").as_deref(), Some("20"));
    assert_eq!(get(&t, "c"), None);
    assert_eq!(all(&t, false), ["a=1", "b=20", "d=4"]);
    assert_eq!(all(&t, true), ["d=4", "b=20", "a=1"]);
    t.drain().expect("drain");
    assert_eq!(all(&t, false), ["a=1", "b=20", "d=4"]);
    assert_eq!(t.sled_tree().get(b"c").expect("sled"), None);
}

#[tokio::test]
async fn flushed_batches_survive_a_crash_before_any_merge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let t = open(&live, lazy());
    t.apply(vec![put("a", "1"), put("b", "2")], vec![])
        .expect("apply");
    t.apply(vec![put("b", "3")], vec![b"a".to_vec()])
        .expect("apply");
    t.flush().await.expect("flush");
    assert_eq!(t.sled_tree().len(), 0, "nothing merged into sled yet");
    let crashed = dir.path().join("crashed");
    snapshot(&live, &crashed);

    let back = open(&crashed, lazy());
    assert_eq!(all(&back, false), ["b=3"], "the log was replayed in order");
    assert_eq!(back.sled_tree().len(), 1, "the replay went into sled");
    assert_eq!(
        std::fs::read_dir(crashed.join("wal")).expect("wal").count(),
        1,
        "the replayed segments are gone; one fresh segment"
    );
}

#[tokio::test]
async fn a_crash_after_a_merge_keeps_the_newest_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let t = open(&live, lazy());
    t.apply(vec![put("k", "old"), put("x", "1")], vec![])
        .expect("apply");
    t.drain().expect("drain");
    t.apply(vec![put("k", "new")], vec![b"x".to_vec()])
        .expect("apply");
    t.flush().await.expect("flush");
    // Not flushed: may or may not survive, but never partly.
    t.apply(vec![put("y", "unflushed")], vec![]).expect("apply");
    let crashed = dir.path().join("crashed");
    snapshot(&live, &crashed);
    let back = open(&crashed, lazy());
    let rows = all(&back, false);
    assert_eq!(&rows[..1], ["k=new"], "{rows:?}");
    assert!(!rows.iter().any(|r| r.starts_with("x=")), "{rows:?}");
}

#[tokio::test]
async fn a_torn_tail_is_dropped_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let t = open(&live, lazy());
    t.apply(vec![put("a", "1")], vec![]).expect("apply");
    t.flush().await.expect("flush");
    let crashed = dir.path().join("crashed");
    snapshot(&live, &crashed);
    let segment = std::fs::read_dir(crashed.join("wal"))
        .expect("wal")
        .next()
        .expect("a segment")
        .expect("entry")
        .path();
    let mut bytes = std::fs::read(&segment).expect("read");
    // The segment is zero-filled ahead of its records: keep the record, then a cut one.
    let frame::Read::Record(_, end) = frame::read(&bytes, 0, frame::Format::Named) else {
        panic!("the flushed record")
    };
    assert_eq!(
        frame::read(&bytes, end, frame::Format::Named),
        frame::Read::Zeros
    );
    bytes.truncate(end);
    let mut torn = Vec::new();
    frame::append(&mut torn, 2, b"t", &[put("b", "2")], &[]);
    bytes.extend_from_slice(&torn[..torn.len() - 1]);
    std::fs::write(&segment, bytes).expect("write");
    let back = open(&crashed, lazy());
    assert_eq!(all(&back, false), ["a=1"]);
}

#[tokio::test]
async fn the_merger_moves_a_full_overlay_into_sled_and_trims_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = open(
        dir.path(),
        WalSettings {
            merge_bytes: 4096,
            merge_every: Duration::from_secs(3600),
            segment_bytes: 2048,
            ..WalSettings::default()
        },
    );
    for i in 0..200 {
        t.apply(vec![put(&format!("k{i:03}"), &"v".repeat(64))], vec![])
            .expect("apply");
        t.flush().await.expect("flush");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while t.sled_tree().len() < 150 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        t.sled_tree().len() >= 150,
        "merged: {}",
        t.sled_tree().len()
    );
    let segments = std::fs::read_dir(dir.path().join("wal"))
        .expect("wal")
        .count();
    assert!(segments <= 4, "{segments} segments left after merges");
    assert_eq!(all(&t, false).len(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_share_syncs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = Arc::new(open(dir.path(), lazy()));
    let mut tasks = Vec::new();
    for w in 0..32 {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                t.apply(vec![put(&format!("w{w:02}-{i}"), "v")], vec![])
                    .expect("apply");
                t.flush().await.expect("flush");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    assert_eq!(all(&t, false).len(), 320);
    assert!(t.syncs() < 320, "{} syncs for 320 flushes", t.syncs());
}

#[test]
fn drop_drains_so_the_next_open_replays_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let t = open(dir.path(), lazy());
        t.apply(vec![put("a", "1")], vec![]).expect("apply");
    }
    let db = sled::Config::new().path(dir.path()).open().expect("sled");
    let tree = db.open_tree("t").expect("tree");
    let stored = tree.get(b"a").expect("get").expect("merged into sled");
    // A new database stores its values behind the codec's tag (a short one as it is).
    assert_eq!(stored.as_ref(), &[0, b'1'][..]);
}

#[test]
fn large_values_reach_sled_compressed_and_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = "{\"role\":\"ai\",\"content\":\"the same words again\"}".repeat(50);
    {
        let t = open(dir.path(), lazy());
        t.apply(vec![put("big", &big), put("small", "s")], vec![])
            .expect("apply");
        t.drain().expect("drain");
        let stored = t.sled_tree().get(b"big").expect("get").expect("merged");
        assert!(
            stored.len() < big.len() / 4,
            "{} bytes stored for {}",
            stored.len(),
            big.len()
        );
    }
    let t = open(dir.path(), lazy());
    assert_eq!(t.get(b"big").expect("get"), Some(big.clone().into_bytes()));
    assert_eq!(
        all(&t, false),
        vec![format!("big={big}"), "small=s".to_string()]
    );
    assert_eq!(all(&t, true).len(), 2);
}

#[test]
fn a_database_without_the_codec_marker_keeps_its_values_as_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = "x".repeat(1000);
    {
        // Written by an older version: values straight into sled, no marker.
        let db = sled::Config::new().path(dir.path()).open().expect("sled");
        db.open_tree("t")
            .expect("tree")
            .insert("old", big.as_bytes())
            .expect("insert");
        db.flush().expect("flush");
    }
    let t = open(dir.path(), lazy());
    assert_eq!(t.get(b"old").expect("get"), Some(big.clone().into_bytes()));
    t.apply(vec![put("new", &big)], vec![]).expect("apply");
    t.drain().expect("drain");
    assert_eq!(
        t.sled_tree().get(b"new").expect("get").as_deref(),
        Some(big.as_bytes()),
        "stored as it is"
    );
}

#[tokio::test]
async fn sibling_trees_share_one_log_and_replay_into_their_own_trees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let t = open(&live, lazy());
    let other = t.sibling("other").expect("sibling");
    t.apply(vec![put("k", "in t")], vec![]).expect("apply");
    other
        .apply(vec![put("k", "in other"), put("o", "1")], vec![])
        .expect("apply");
    // One flush makes both durable: the sibling's batch is in the same log.
    let before = t.syncs();
    t.flush().await.expect("flush");
    assert_eq!(t.syncs(), before + 1);
    other.flush().await.expect("nothing left to sync");
    assert_eq!(
        t.syncs(),
        before + 1,
        "the sibling's flush found nothing to sync"
    );
    assert_eq!(get(&t, "k").as_deref(), Some("in t"));
    assert_eq!(get(&other, "k").as_deref(), Some("in other"));
    assert_eq!(all(&t, false), ["k=in t"]);
    let crashed = dir.path().join("crashed");
    snapshot(&live, &crashed);

    let back = open(&crashed, lazy());
    let back_other = back.sibling("other").expect("sibling");
    assert_eq!(all(&back, false), ["k=in t"]);
    assert_eq!(all(&back_other, false), ["k=in other", "o=1"]);
    assert_eq!(
        back_other.sled_tree().len(),
        2,
        "replayed into its own sled tree"
    );
}

#[tokio::test]
async fn the_log_of_an_older_version_is_replayed_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A `wal-t` folder as an older version left it: records without tree names.
    let legacy = dir.path().join("wal-t");
    std::fs::create_dir_all(&legacy).expect("mkdir");
    let segment = frame::one_tree_record(1, b"old", b"value");
    std::fs::write(legacy.join(format!("{:020}.log", 1)), segment).expect("segment");
    let t = open(dir.path(), lazy());
    assert_eq!(all(&t, false), ["old=value"]);
    assert_eq!(t.sled_tree().len(), 1, "replayed into sled");
    assert!(!legacy.exists(), "the older log is removed once replayed");
}
