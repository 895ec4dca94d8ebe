//! Group commit: many writers, one flush.
//!
//! A durable run waits, after each checkpoint, for a flush that covers it. Without coordination
//! every run pays its own fsync, so N concurrent runs issue N fsyncs per step and queue behind
//! each other on the disk. [`GroupCommit`] lets them share: at most one flush is in flight; a
//! caller that arrives while one runs waits for it to end and then for the *next* one (the
//! running flush may have started before the caller's write), which every caller that arrived
//! meanwhile shares. A caller that finds no flush in flight yields once before starting one, so
//! the tasks already queued on the runtime (other runs about to write their checkpoints) join it
//! (in the server's load test: 4.0 syncs per run before, 1.6 after); a lone caller has nothing
//! queued and starts at once. The window adapts to the load and adds no latency when there is
//! none: the number of flushes per second is bounded by the disk, not multiplied by the number
//! of writers.
//!
//! On a multi-threaded runtime the caller that starts a flush runs it on its own thread
//! (`block_in_place`: the worker's other tasks move to another thread meanwhile), so a lone run
//! pays the sync and nothing else; elsewhere the flush runs on tokio's blocking pool in a
//! detached task. Either way a caller whose future is dropped (a cancelled run) never leaves the
//! committer stuck with a flush marked in flight: an inline flush cannot be interrupted, and a
//! detached one ends on its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::runtime::RuntimeFlavor;
use tokio::sync::Notify;

/// The blocking flush a [`GroupCommit`] coordinates; its error is reported as text.
pub type FlushFn = dyn Fn() -> Result<(), String> + Send + Sync;

/// Coordinates the flushes of one store (see the module docs).
#[derive(Clone)]
pub struct GroupCommit {
    inner: Arc<Inner>,
    /// Kept apart from `inner`: a flush drops its handle on the store before it announces its
    /// end, so a caller that closes the store right after its flush returned holds the last one.
    flush: Arc<FlushFn>,
}

struct Inner {
    state: Mutex<State>,
    ended: Notify,
    /// Flushes issued so far.
    issued: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Number of the newest flush started (flushes are numbered from 1).
    started: u64,
    /// Number of the newest flush ended, successfully or not.
    ended: u64,
    /// Number of the newest flush that succeeded.
    succeeded: u64,
    /// The error of the newest failed flush, with its number.
    error: Option<(u64, String)>,
    in_flight: bool,
}

impl GroupCommit {
    /// Coordinates calls of `flush`, a blocking function that makes every write applied before
    /// it was called durable.
    pub fn new(flush: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> Self {
        GroupCommit {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                ended: Notify::new(),
                issued: AtomicU64::new(0),
            }),
            flush: Arc::new(flush),
        }
    }

    /// Returns once every write applied before this call is durable: after a flush that started
    /// after the call ended well. The error of a failed flush is returned to every caller that
    /// was waiting for it (a later successful flush covers them too, but they are told).
    pub async fn flush(&self) -> Result<(), String> {
        self.flush_by(None).await
    }

    /// Like [`GroupCommit::flush`], but a flush need not start at once: the caller shares any
    /// flush that starts within `delay` of its call (another writer's), and starts one itself
    /// only when none has by then. For writes that may be made durable a little later, so
    /// that they ride on the flushes other writers issue anyway instead of adding their own
    /// (the server's event log: many small appends between two checkpoints).
    pub async fn flush_within(&self, delay: std::time::Duration) -> Result<(), String> {
        self.flush_by(Some(tokio::time::Instant::now() + delay))
            .await
    }

    /// Waits for a flush that starts after this call; starts one when none is in flight and
    /// `deadline` has passed (`None`: at once).
    async fn flush_by(&self, deadline: Option<tokio::time::Instant>) -> Result<(), String> {
        let target = {
            let s = self.inner.lock();
            s.started + 1
        };
        let mut lingered = false;
        loop {
            let ended = self.inner.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let waiting = {
                let mut s = self.inner.lock();
                if s.succeeded >= target {
                    return Ok(());
                }
                if s.ended >= target {
                    let msg = match &s.error {
                        Some((n, msg)) if *n >= target => msg.clone(),
                        _ => "the store could not be flushed".to_string(),
                    };
                    return Err(msg);
                }
                if s.in_flight {
                    None
                } else if !lingered && deadline.is_none() {
                    // Before starting a flush, let the tasks already waiting to run go first:
                    // writers among them apply their batches and share this flush instead of
                    // each starting the next one. A lone caller finds nothing to wait for.
                    Some(None)
                } else if deadline.is_none_or(|d| tokio::time::Instant::now() >= d) {
                    s.in_flight = true;
                    s.started += 1;
                    let number = s.started;
                    drop(s);
                    self.start(number);
                    None
                } else {
                    Some(deadline)
                }
            };
            match waiting {
                None => ended.await,
                Some(None) => {
                    lingered = true;
                    tokio::task::yield_now().await;
                }
                Some(Some(deadline)) => {
                    tokio::select! {
                        () = &mut ended => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    /// How many flushes were issued so far.
    pub fn flushes(&self) -> u64 {
        self.inner.issued.load(Ordering::Relaxed)
    }

    /// Runs flush `number` on the blocking pool and publishes its end.
    fn start(&self, number: u64) {
        let (inner, flush) = (self.inner.clone(), self.flush.clone());
        let run = move || {
            inner.issued.fetch_add(1, Ordering::Relaxed);
            // A panicking flush must still release the waiters, with an error.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flush()))
                .unwrap_or_else(|_| Err("the flush panicked".to_string()));
            drop(flush);
            inner.finish(number, result);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                // On the caller's thread: the worker's other tasks move to another thread
                // while the flush blocks this one, and the caller goes on the moment the sync
                // returns, without the hand-off to a blocking thread and back (tens of
                // microseconds each way, per flush). A caller that cannot block here (a
                // runtime entered from outside its workers in a way tokio refuses) flushes on
                // the blocking pool instead.
                let mut run = Some(run);
                let inline = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tokio::task::block_in_place(|| {
                        if let Some(run) = run.take() {
                            run();
                        }
                    })
                }));
                if let (Err(_), Some(run)) = (inline, run.take()) {
                    drop(handle.spawn_blocking(run));
                }
            }
            Ok(handle) => {
                // The task is detached: its handle is not needed, `finish` reports the end.
                drop(handle.spawn_blocking(run));
            }
            // Outside a runtime (a synchronous caller driving the future by hand): flush here.
            Err(_) => run(),
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, number: u64, result: Result<(), String>) {
        {
            let mut s = self.lock();
            if s.ended >= number {
                return;
            }
            s.ended = number;
            s.in_flight = false;
            match result {
                Ok(()) => s.succeeded = number,
                Err(e) => s.error = Some((number, e)),
            }
        }
        self.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A flush that takes `ms` and counts how often it ran and how many ran at once.
    fn slow(ms: u64) -> (GroupCommit, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let overlap = Arc::new(AtomicUsize::new(0));
        let active = Arc::new(AtomicUsize::new(0));
        let (r, o, a) = (runs.clone(), overlap.clone(), active.clone());
        let gc = GroupCommit::new(move || {
            let now = a.fetch_add(1, Ordering::SeqCst) + 1;
            o.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
            r.fetch_add(1, Ordering::SeqCst);
            a.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
        (gc, runs, overlap)
    }

    #[tokio::test]
    async fn a_lone_caller_flushes_once() {
        let (gc, runs, _) = slow(1);
        gc.flush().await.expect("flush");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        gc.flush().await.expect("flush");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(gc.flushes(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_share_flushes_and_never_overlap() {
        let (gc, runs, overlap) = slow(20);
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let gc = gc.clone();
            tasks.push(tokio::spawn(async move { gc.flush().await }));
        }
        for t in tasks {
            t.await.expect("join").expect("flush");
        }
        let n = runs.load(Ordering::SeqCst);
        // 64 callers: the first starts a flush, all the others share at most one more.
        assert!((1..=2).contains(&n), "{n} flushes for 64 callers");
        assert_eq!(
            overlap.load(Ordering::SeqCst),
            1,
            "flushes ran at the same time"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_arriving_during_a_flush_waits_for_the_next_one() {
        let (gc, runs, _) = slow(50);
        let first = {
            let gc = gc.clone();
            tokio::spawn(async move { gc.flush().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        // The first flush is running and may have started before this caller's write.
        gc.flush().await.expect("flush");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        first.await.expect("join").expect("flush");
    }

    #[tokio::test]
    async fn a_failed_flush_is_reported_and_the_next_one_recovers() {
        let fail = Arc::new(AtomicUsize::new(1));
        let f = fail.clone();
        let gc = GroupCommit::new(move || {
            if f.fetch_sub(1, Ordering::SeqCst) == 1 {
                Err("disk full".into())
            } else {
                Ok(())
            }
        });
        assert_eq!(gc.flush().await, Err("disk full".to_string()));
        gc.flush().await.expect("the next flush succeeds");
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_flush_rides_on_another_writers_flush() {
        let (gc, runs, _) = slow(0);
        let late = {
            let gc = gc.clone();
            tokio::spawn(async move { gc.flush_within(Duration::from_millis(50)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 0, "started before its delay");
        gc.flush().await.expect("flush");
        late.await.expect("join").expect("covered");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one flush for both");
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_flush_starts_its_own_when_nobody_flushes() {
        let (gc, runs, _) = slow(0);
        let t0 = tokio::time::Instant::now();
        gc.flush_within(Duration::from_millis(20))
            .await
            .expect("flush");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(
            t0.elapsed() >= Duration::from_millis(20),
            "not before its delay"
        );
    }

    #[tokio::test]
    async fn a_panicking_flush_releases_its_waiters() {
        let gc = GroupCommit::new(|| panic!("boom"));
        assert_eq!(gc.flush().await, Err("the flush panicked".to_string()));
    }

    #[tokio::test]
    async fn the_store_is_released_when_the_flush_returns() {
        let store = Arc::new(());
        let held = store.clone();
        let gc = GroupCommit::new(move || {
            let _ = &held;
            Ok(())
        });
        gc.flush().await.expect("flush");
        drop(gc);
        assert_eq!(
            Arc::strong_count(&store),
            1,
            "a flush still holds the store"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_caller_does_not_stall_the_others() {
        let (gc, runs, _) = slow(30);
        let abandoned = {
            let gc = gc.clone();
            tokio::spawn(async move { gc.flush().await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        abandoned.abort();
        tokio::time::timeout(Duration::from_secs(5), gc.flush())
            .await
            .expect("not stuck")
            .expect("flush");
        assert!(runs.load(Ordering::SeqCst) >= 2);
    }
}
