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
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// A release action: run once, by [`ThreadLease::release`] or (without waiting) on drop.
pub type ReleaseFn = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The right to run one thread. Released by [`ThreadLease::release`] (which waits until the
/// release took effect) or, best effort, when dropped.
pub struct ThreadLease {
    thread: String,
    release: Option<ReleaseFn>,
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
        }
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
}

/// Leases within one process.
#[derive(Debug, Default, Clone)]
pub struct LocalThreadLocks {
    held: Arc<Mutex<HashSet<String>>>,
}

#[async_trait]
impl ThreadLocks for LocalThreadLocks {
    async fn try_acquire(&self, thread: &str) -> Result<Option<ThreadLease>, CheckpointError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if !held.insert(thread.to_string()) {
            return Ok(None);
        }
        let (set, key) = (self.held.clone(), thread.to_string());
        Ok(Some(ThreadLease::new(
            thread,
            Box::new(move || {
                set.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
                Box::pin(async {})
            }),
        )))
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
}
