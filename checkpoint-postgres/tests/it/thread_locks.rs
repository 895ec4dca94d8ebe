//! Thread leases on advisory locks, as two processes (two connections) see them: one holder
//! per thread, released on `release`, on drop, and when the holder's session dies.

use crate::common;

use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
use agentgraph_runtime::checkpoint::ThreadLocks;
use std::time::{Duration, Instant};

async fn locks(url: &str, schema: &str) -> agentgraph_postgres::PostgresThreadLocks {
    PostgresCheckpointer::connect_with(url, PostgresOptions::default().schema(schema))
        .await
        .expect("connect")
        .thread_locks()
        .await
        .expect("lock connection")
}

/// Polls `try_acquire` until it succeeds (a drop releases in the background).
async fn acquire_within(
    locks: &dyn ThreadLocks,
    thread: &str,
) -> agentgraph_runtime::checkpoint::ThreadLease {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(lease) = locks.try_acquire(thread).await.expect("try_acquire") {
            return lease;
        }
        assert!(Instant::now() < deadline, "{thread} was never released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn one_holder_per_thread_across_connections() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let (a, b) = (locks(&url, &schema).await, locks(&url, &schema).await);
    let thread = format!("t-{schema}");

    let lease = a
        .try_acquire(&thread)
        .await
        .unwrap()
        .expect("free at first");
    assert!(b.try_acquire(&thread).await.unwrap().is_none(), "held by a");
    // Another thread is independent.
    let other = b.try_acquire(&format!("{thread}-2")).await.unwrap();
    assert!(other.is_some());
    // Released and waited for: b gets it at once.
    lease.release().await;
    let lease_b = b.try_acquire(&thread).await.unwrap().expect("released");
    assert!(a.try_acquire(&thread).await.unwrap().is_none(), "held by b");
    // Dropped: released in the background.
    drop(lease_b);
    let lease = acquire_within(&a, &thread).await;
    drop(lease);
    drop(other);

    // Another table is another namespace: the same thread id does not collide.
    let other_schema = common::fresh_schema();
    let c = locks(&url, &other_schema).await;
    let held = acquire_within(&a, &thread).await;
    assert!(c.try_acquire(&thread).await.unwrap().is_some());
    assert_ne!(a.key(&thread), c.key(&thread));
    drop(held);

    common::drop_schema(&url, &schema).await;
    common::drop_schema(&url, &other_schema).await;
}

#[tokio::test]
async fn a_dead_holder_frees_its_threads() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let app = format!("aglock{}", &schema[7..19]);
    let sep = if url.contains('?') { '&' } else { '?' };
    let a = locks(&format!("{url}{sep}application_name={app}"), &schema).await;
    let b = locks(&url, &schema).await;
    let thread = format!("t-{schema}");
    let lease = a.try_acquire(&thread).await.unwrap().expect("free");
    assert!(b.try_acquire(&thread).await.unwrap().is_none());
    // The holder's backend dies (a crashed process, a dropped connection): the lock goes
    // with its session, no expiry needed.
    assert!(common::terminate_backends(&url, &app).await >= 1);
    let _taken = acquire_within(&b, &thread).await;
    // Releasing the orphaned lease is harmless, and `a` reconnects for its next acquire.
    lease.release().await;
    assert!(
        a.try_acquire(&thread).await.unwrap().is_none(),
        "b holds it"
    );
    assert!(a
        .try_acquire(&format!("{thread}-x"))
        .await
        .unwrap()
        .is_some());
    common::drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn a_cancel_request_reaches_the_holder_in_another_process() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let (a, b) = (locks(&url, &schema).await, locks(&url, &schema).await);
    let thread = format!("t-{schema}");
    assert!(!b.request_cancel(&thread).await.unwrap(), "nobody holds it");
    let lease = a.try_acquire(&thread).await.unwrap().expect("free");
    let other = a
        .try_acquire(&format!("{thread}-2"))
        .await
        .unwrap()
        .expect("free");
    assert!(b.request_cancel(&thread).await.unwrap(), "a holds it");
    tokio::time::timeout(Duration::from_secs(10), lease.cancellation().cancelled())
        .await
        .expect("the holder's lease is cancelled");
    assert!(!other.cancellation().is_cancelled(), "only that thread");
    lease.release().await;
    assert!(!b.request_cancel(&thread).await.unwrap(), "released");
    drop(other);
    common::drop_schema(&url, &schema).await;
}
