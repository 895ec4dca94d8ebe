//! Thread leases on PostgreSQL session advisory locks, so several processes sharing one
//! database agree on "at most one active run per thread".
//!
//! Each lease is `pg_try_advisory_lock(key)` on one dedicated connection, where `key` is a
//! 64-bit FNV-1a hash of the checkpoint table's name and the thread id (so two applications
//! with different tables never block each other). Releasing runs `pg_advisory_unlock(key)` on
//! the same connection. Session locks die with their session, so a process that crashes or
//! loses its connection frees its threads at once: no stale locks, no expiry to tune. The
//! flip side: when the lock connection drops while runs are active, their leases are gone
//! (logged); the next acquire reconnects.
//!
//! Cancelling across processes: the lock connection `LISTEN`s on `agentgraph_cancel`;
//! [`ThreadLocks::request_cancel`] sends `NOTIFY agentgraph_cancel, '<key>'`, and the process
//! holding that key fires its lease's cancellation.

use crate::{connection_lost, describe, PostgresError};
use agentgraph_runtime::checkpoint::{CheckpointError, ThreadLease, ThreadLocks};
use async_trait::async_trait;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tokio_util::sync::CancellationToken;

/// The notification channel of cancellation requests.
const CANCEL_CHANNEL: &str = "agentgraph_cancel";

/// Leases this process holds, by key: the cancellation they share and how many there are (a
/// session may take its own advisory lock again).
type Held = Arc<Mutex<HashMap<i64, (CancellationToken, usize)>>>;

fn held_lock(held: &Held) -> std::sync::MutexGuard<'_, HashMap<i64, (CancellationToken, usize)>> {
    held.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`ThreadLocks`] on PostgreSQL advisory locks (see the module docs).
pub struct PostgresThreadLocks {
    config: tokio_postgres::Config,
    namespace: String,
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
    held: Held,
}

impl std::fmt::Debug for PostgresThreadLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresThreadLocks")
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// FNV-1a, 64 bits: stable across processes, builds and platforms (unlike `DefaultHasher`).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in *part {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl PostgresThreadLocks {
    /// Leases for the threads of the checkpoint table `namespace` (its qualified name), over
    /// a connection opened with `config`.
    pub(crate) async fn open(
        config: tokio_postgres::Config,
        namespace: String,
    ) -> Result<Self, PostgresError> {
        let locks = Self {
            config,
            namespace,
            client: tokio::sync::Mutex::new(None),
            held: Held::default(),
        };
        locks.client(None).await?;
        Ok(locks)
    }

    /// The advisory-lock key of `thread`.
    pub fn key(&self, thread: &str) -> i64 {
        fnv1a(&[self.namespace.as_bytes(), thread.as_bytes()]) as i64
    }

    /// The lock connection, reconnecting when it was closed or is `stale` (found dead).
    async fn client(&self, stale: Option<&Arc<Client>>) -> Result<Arc<Client>, PostgresError> {
        let mut current = self.client.lock().await;
        if let Some(c) = current.as_ref() {
            if !c.is_closed() && !stale.is_some_and(|s| Arc::ptr_eq(s, c)) {
                return Ok(c.clone());
            }
        }
        let (client, mut connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(PostgresError::Connect)?;
        let (namespace, held) = (self.namespace.clone(), self.held.clone());
        tokio::spawn(async move {
            // Drives the connection and dispatches cancellation requests to held leases.
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) if n.channel() == CANCEL_CHANNEL => {
                        let Ok(key) = n.payload().parse::<i64>() else {
                            continue;
                        };
                        if let Some((token, _)) = held_lock(&held).get(&key) {
                            tracing::info!(key, "cancellation requested by another process");
                            token.cancel();
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(
                            error = %e, namespace = %namespace,
                            "PostgreSQL thread-lock connection closed: the thread leases it held \
                             are released"
                        );
                        break;
                    }
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN {CANCEL_CHANNEL}"))
            .await
            .map_err(PostgresError::Connect)?;
        let client = Arc::new(client);
        *current = Some(client.clone());
        Ok(client)
    }
}

fn query_error(source: tokio_postgres::Error) -> CheckpointError {
    CheckpointError::Backend(format!("PostgreSQL thread lock: {}", describe(&source)))
}

#[async_trait]
impl ThreadLocks for PostgresThreadLocks {
    async fn try_acquire(&self, thread: &str) -> Result<Option<ThreadLease>, CheckpointError> {
        let key = self.key(thread);
        let mut client = self.client(None).await?;
        let row = match client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .await
        {
            Ok(row) => row,
            // The session died since the last call (its leases with it): reconnect once.
            Err(e) if connection_lost(&e) => {
                client = self.client(Some(&client)).await?;
                client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                    .await
                    .map_err(query_error)?
            }
            Err(e) => return Err(query_error(e)),
        };
        let taken: bool = row.try_get(0).map_err(query_error)?;
        if !taken {
            return Ok(None);
        }
        let token = {
            let mut held = held_lock(&self.held);
            let entry = held
                .entry(key)
                .or_insert_with(|| (CancellationToken::new(), 0));
            entry.1 += 1;
            entry.0.clone()
        };
        let (name, held) = (thread.to_string(), self.held.clone());
        let lease = ThreadLease::new(
            thread,
            Box::new(move || {
                {
                    let mut map = held_lock(&held);
                    if let Some(entry) = map.get_mut(&key) {
                        entry.1 -= 1;
                        if entry.1 == 0 {
                            map.remove(&key);
                        }
                    }
                }
                Box::pin(async move {
                    // On the session that took it; a closed session already let it go.
                    if client.is_closed() {
                        return;
                    }
                    if let Err(e) = client
                        .query_one("SELECT pg_advisory_unlock($1)", &[&key])
                        .await
                    {
                        tracing::warn!(thread = %name, error = %describe(&e),
                            "could not release a PostgreSQL thread lock");
                    }
                })
            }),
        );
        Ok(Some(lease.with_cancellation(token)))
    }

    async fn request_cancel(&self, thread: &str) -> Result<bool, CheckpointError> {
        let key = self.key(thread);
        // An advisory bigint key shows in pg_locks as classid (high half), objid (low half),
        // objsubid 1.
        let (high, low) = ((key as u64 >> 32) as i64, (key as u64 & 0xffff_ffff) as i64);
        let sql = "SELECT pg_notify($1, $2), EXISTS (SELECT 1 FROM pg_locks \
                   WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
                   AND classid = $3::int8::oid AND objid = $4::int8::oid \
                   AND database = (SELECT oid FROM pg_database \
                                   WHERE datname = current_database()))";
        let payload = key.to_string();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&CANCEL_CHANNEL, &payload, &high, &low];
        let client = self.client(None).await?;
        let row = match client.query_one(sql, &params).await {
            Ok(row) => row,
            Err(e) if connection_lost(&e) => {
                let client = self.client(Some(&client)).await?;
                client.query_one(sql, &params).await.map_err(query_error)?
            }
            Err(e) => return Err(query_error(e)),
        };
        row.try_get(1).map_err(query_error)
    }
}

#[cfg(test)]
mod tests {
    use super::fnv1a;

    #[test]
    fn keys_are_stable_and_separate_parts() {
        // Fixed value: a change would let old and new processes disagree on a thread's key.
        assert_eq!(
            fnv1a(&[b"agentgraph_checkpoints", b"t1"]),
            0x6f67_30b2_d943_d761
        );
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
    }
}
