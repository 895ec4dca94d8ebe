//! Group commit for PostgreSQL: concurrent writes share one statement and one commit.
//!
//! With `synchronous_commit = on` every commit waits for its WAL flush, and the statements of
//! one connection run one after the other, so N runs writing at once would pay N flushes in a
//! row. Here a writer that finds no batch in flight sends its own at once (no added latency for a
//! lone run); writers arriving meanwhile queue, and the next leader merges the whole queue into
//! one upsert — applied in arrival order, so the outcome equals applying the batches one by one
//! — committed once. If a merged statement fails for another reason than a lost connection, each
//! batch is retried alone, so only the offending one fails.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::oneshot;

/// One caller's atomic batch: deletes first, then puts in order.
pub(crate) struct Batch {
    pub(crate) puts: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) deletes: Vec<Vec<u8>>,
}

/// The merged form sent in one statement: keys to delete, and keys with their final values.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Merged {
    pub(crate) deletes: Vec<Vec<u8>>,
    pub(crate) keys: Vec<Vec<u8>>,
    pub(crate) values: Vec<Vec<u8>>,
}

impl Merged {
    /// Folds batches in order: the last operation on a key wins.
    pub(crate) fn of<'a>(batches: impl IntoIterator<Item = &'a Batch>) -> Merged {
        let mut last: BTreeMap<&[u8], Option<&[u8]>> = BTreeMap::new();
        for b in batches {
            for k in &b.deletes {
                last.insert(k, None);
            }
            for (k, v) in &b.puts {
                last.insert(k, Some(v));
            }
        }
        let mut m = Merged::default();
        for (k, v) in last {
            match v {
                Some(v) => {
                    m.keys.push(k.to_vec());
                    m.values.push(v.to_vec());
                }
                None => m.deletes.push(k.to_vec()),
            }
        }
        m
    }
}

/// Why a batch was not written: the message, and whether the failure may be the batch's own
/// (then the batches merged with it are retried alone).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WriteFailed {
    pub(crate) message: String,
    pub(crate) batch_specific: bool,
}

type E = WriteFailed;

/// A queued batch and where its result goes.
struct Queued {
    batch: Batch,
    done: oneshot::Sender<Result<(), E>>,
}

/// The queue of batches waiting for the next commit, and the commit counter.
pub(crate) struct WriteQueue {
    queue: Mutex<Vec<Queued>>,
    leader: tokio::sync::Mutex<()>,
    commits: AtomicU64,
}

impl WriteQueue {
    pub(crate) fn new() -> Self {
        WriteQueue {
            queue: Mutex::new(Vec::new()),
            leader: tokio::sync::Mutex::new(()),
            commits: AtomicU64::new(0),
        }
    }

    /// Statements that wrote batches so far (each one commit).
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Applies `batch`, sharing the commit with the batches queued meanwhile; `send` writes a
    /// merged batch in one statement.
    pub(crate) async fn apply<F, Fut>(&self, batch: Batch, send: F) -> Result<(), E>
    where
        F: Fn(Merged) -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
    {
        let (tx, mut rx) = oneshot::channel();
        self.lock().push(Queued { batch, done: tx });
        // A caller dropped while waiting leaves its batch queued: the next leader writes it.
        let _leader = self.leader.lock().await;
        if let Ok(result) = rx.try_recv() {
            return result;
        }
        let queued = std::mem::take(&mut *self.lock());
        let result = send(Merged::of(queued.iter().map(|q| &q.batch))).await;
        self.commits.fetch_add(1, Ordering::Relaxed);
        match result {
            Err(e) if queued.len() > 1 && e.batch_specific => {
                for q in queued {
                    let r = send(Merged::of([&q.batch])).await;
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    let _ = q.done.send(r);
                }
            }
            result => {
                for q in queued {
                    let _ = q.done.send(result.clone());
                }
            }
        }
        // Our own batch was in `queued`, so it has been answered.
        rx.try_recv().unwrap_or_else(|_| {
            Err(WriteFailed {
                message: "the write queue lost a batch".into(),
                batch_specific: false,
            })
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn b(puts: &[(&str, &str)], deletes: &[&str]) -> Batch {
        Batch {
            puts: puts
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect(),
            deletes: deletes.iter().map(|k| k.as_bytes().to_vec()).collect(),
        }
    }

    fn strs(v: &[Vec<u8>]) -> Vec<String> {
        v.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    #[test]
    fn merging_equals_applying_in_order() {
        // a: put then deleted by the second batch; b: deleted then put again; c: put twice.
        let m = Merged::of(&[
            b(&[("a", "1"), ("c", "1")], &["b"]),
            b(&[("b", "2"), ("c", "2")], &["a"]),
            b(&[], &["d"]),
        ]);
        assert_eq!(strs(&m.deletes), ["a", "d"]);
        assert_eq!(strs(&m.keys), ["b", "c"]);
        assert_eq!(strs(&m.values), ["2", "2"]);
        // Within one batch a put beats a delete of the same key (deletes go first).
        let m = Merged::of(&[b(&[("k", "v")], &["k"])]);
        assert!(m.deletes.is_empty());
        assert_eq!(strs(&m.keys), ["k"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writers_share_commits() {
        let q = Arc::new(WriteQueue::new());
        let written = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut tasks = Vec::new();
        for i in 0..32 {
            let (q, written) = (q.clone(), written.clone());
            tasks.push(tokio::spawn(async move {
                let key = format!("k{i}");
                q.apply(b(&[(&key, "v")], &[]), |m| {
                    let written = written.clone();
                    async move {
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        written.lock().expect("lock").extend(strs(&m.keys));
                        Ok(())
                    }
                })
                .await
            }));
        }
        for t in tasks {
            t.await.expect("join").expect("write");
        }
        let mut all = written.lock().expect("lock").clone();
        all.sort();
        assert_eq!(all.len(), 32, "every key written once: {all:?}");
        assert!(q.commits() < 32, "{} commits for 32 writers", q.commits());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_batch_fails_alone() {
        let q = Arc::new(WriteQueue::new());
        let mut tasks = Vec::new();
        for i in 0..8 {
            let q = q.clone();
            tasks.push(tokio::spawn(async move {
                let key = if i == 3 {
                    "bad".to_string()
                } else {
                    format!("k{i}")
                };
                let r = q
                    .apply(b(&[(&key, "v")], &[]), |m| async move {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        if m.keys.iter().any(|k| k == b"bad") {
                            Err(WriteFailed {
                                message: "bad key".into(),
                                batch_specific: true,
                            })
                        } else {
                            Ok(())
                        }
                    })
                    .await;
                (i, r)
            }));
        }
        for t in tasks {
            let (i, r) = t.await.expect("join");
            assert_eq!(r.is_err(), i == 3, "batch {i}: {r:?}");
        }
    }
}
