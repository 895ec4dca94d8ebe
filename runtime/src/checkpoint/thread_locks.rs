//! Thread leases: at most one active run per thread, across every process that shares them.
//!
//! A [`Checkpointer`](super::Checkpointer) shared by several processes (PostgreSQL) lets any of
//! them run any thread, so "one run per thread" can no longer be a map in one process. A
//! [`ThreadLocks`] hands out a [`ThreadLease`] per thread; whoever holds it may run the thread,
//! everyone else is refused until it is released. [`LocalThreadLocks`] is the in-process
//! version; `agentgraph-postgres` has one on advisory locks.
//!
//! ```
//! use agentgraph_runtime::checkpoint::{LocalThreadLocks, ThreadLocks};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let locks = LocalThreadLocks::default();
//! let lease = locks.try_acquire("t1").await?.expect("free");
//! assert!(locks.try_acquire("t1").await?.is_none(), "held");
//! lease.release().await;
//! assert!(locks.try_acquire("t1").await?.is_some(), "free again");
//! # Ok::<_, agentgraph_runtime::checkpoint::CheckpointError>(()) });
//! ```

use super::CheckpointError;
use async_trait::async_trait;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A release action: run once, by [`ThreadLease::release`] or (without waiting) on drop.
pub type ReleaseFn = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The right to run one thread. Released by [`ThreadLease::release`] (which waits until the
/// release took effect) or, best effort, when dropped. Its [`ThreadLease::cancellation`]
/// fires when another process asks for the thread's run to stop
/// ([`ThreadLocks::request_cancel`]).
pub struct ThreadLease {
    thread: String,
    release: Option<ReleaseFn>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for ThreadLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadLease")
            .field("thread", &self.thread)
            .finish()
    }
}

impl ThreadLease {
    /// A lease on `thread` that runs `release` when given back.
    pub fn new(thread: impl Into<String>, release: ReleaseFn) -> Self {
        Self {
            thread: thread.into(),
            release: Some(release),
            cancel: CancellationToken::new(),
        }
    }

    /// The same lease, cancelled through `token` (what the [`ThreadLocks`] fires on a
    /// cancellation request).
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Fires when somebody asked, through the locks, for this thread's run to stop: link it to
    /// the run's cancellation.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The thread this lease is for.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// Gives the thread back and waits until others can take it.
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            release().await;
        }
    }
}

impl Drop for ThreadLease {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let fut = release();
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(fut);
                }
                Err(_) => tracing::warn!(
                    thread = %self.thread,
                    "thread lease dropped outside a tokio runtime; not released"
                ),
            }
        }
    }
}

/// Hands out [`ThreadLease`]s: at most one holder per thread at a time.
#[async_trait]
pub trait ThreadLocks: Send + Sync {
    /// Takes the thread's lease, or `Ok(None)` when somebody else holds it.
    async fn try_acquire(&self, thread: &str) -> Result<Option<ThreadLease>, CheckpointError>;

    /// Asks the holder of the thread's lease, wherever it runs, to stop the run (its lease's
    /// [`ThreadLease::cancellation`] fires). `Ok(true)` when a holder was asked, `Ok(false)`
    /// when nobody holds the thread. Idempotent.
    async fn request_cancel(&self, thread: &str) -> Result<bool, CheckpointError>;
}

/// Leases within one process.
#[derive(Debug, Default, Clone)]
pub struct LocalThreadLocks {
    held: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

#[async_trait]
impl ThreadLocks for LocalThreadLocks {
    async fn try_acquire(&self, thread: &str) -> Result<Option<ThreadLease>, CheckpointError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.contains_key(thread) {
            return Ok(None);
        }
        let token = CancellationToken::new();
        held.insert(thread.to_string(), token.clone());
        let (set, key) = (self.held.clone(), thread.to_string());
        let release: ReleaseFn = Box::new(move || {
            set.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            Box::pin(async {})
        });
        Ok(Some(
            ThreadLease::new(thread, release).with_cancellation(token),
        ))
    }

    async fn request_cancel(&self, thread: &str) -> Result<bool, CheckpointError> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match held.get(thread) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropping_a_lease_releases_it() {
        let locks = LocalThreadLocks::default();
        let lease = locks.try_acquire("a").await.unwrap().unwrap();
        assert!(locks.try_acquire("b").await.unwrap().is_some());
        assert!(locks.try_acquire("a").await.unwrap().is_none());
        drop(lease);
        assert!(locks.try_acquire("a").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_cancel_request_reaches_the_holder() {
        let locks = LocalThreadLocks::default();
        assert!(!locks.request_cancel("a").await.unwrap(), "nobody holds it");
        let lease = locks.try_acquire("a").await.unwrap().unwrap();
        assert!(!lease.cancellation().is_cancelled());
        assert!(locks.request_cancel("a").await.unwrap());
        assert!(lease.cancellation().is_cancelled());
    }
}
