//! Memory on Redis: a list of JSON messages per session under a key prefix, with a TTL.

use super::{ChatMemory, MemoryError};
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use serde_json::Value;
use std::time::Duration;

/// The key prefix used unless another is set.
pub const DEFAULT_KEY_PREFIX: &str = "agent:memory:";

/// Messages in Redis: session `s` is the list at key `{prefix}{s}`, one JSON message per
/// element (`RPUSH` on append, `LRANGE 0 -1` on load, `DEL` on clear). With a TTL, every
/// append (re)sets the key's expiry, in the same transaction as the push, so an idle session
/// disappears `ttl` after its last append.
#[derive(Clone)]
pub struct RedisMemory {
    conn: MultiplexedConnection,
    prefix: String,
    ttl: Option<Duration>,
}

impl std::fmt::Debug for RedisMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisMemory")
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn backend(e: redis::RedisError) -> MemoryError {
    MemoryError::Backend(e.to_string())
}

impl RedisMemory {
    /// Connects to the server at `url` (for example `redis://127.0.0.1:6379/`), with the
    /// [`DEFAULT_KEY_PREFIX`] and no TTL.
    pub async fn connect(url: &str) -> Result<Self, MemoryError> {
        let client = redis::Client::open(url).map_err(backend)?;
        let conn = client
            .get_multiplexed_tokio_connection()
            .await
            .map_err(backend)?;
        Ok(Self::from_connection(conn))
    }

    /// Uses an existing connection, with the [`DEFAULT_KEY_PREFIX`] and no TTL.
    pub fn from_connection(conn: MultiplexedConnection) -> Self {
        Self {
            conn,
            prefix: DEFAULT_KEY_PREFIX.to_string(),
            ttl: None,
        }
    }

    /// Sets the key prefix.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the time to live refreshed on every append; `None` or zero means no expiry.
    /// Redis keeps millisecond precision (`PEXPIRE`); a nonzero TTL is at least 1 ms.
    pub fn with_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl.filter(|t| !t.is_zero());
        self
    }

    /// The Redis key of `session`.
    pub fn key(&self, session: &str) -> String {
        format!("{}{}", self.prefix, session)
    }
}

#[async_trait]
impl ChatMemory for RedisMemory {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        let mut conn = self.conn.clone();
        let raw: Vec<String> = redis::cmd("LRANGE")
            .arg(self.key(session))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(backend)?;
        raw.iter()
            .map(|s| serde_json::from_str(s).map_err(MemoryError::from))
            .collect()
    }

    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        if messages.is_empty() {
            return Ok(());
        }
        let encoded = messages
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?;
        let key = self.key(session);
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("RPUSH").arg(&key).arg(encoded).ignore();
        if let Some(ttl) = self.ttl {
            let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            pipe.cmd("PEXPIRE").arg(&key).arg(ms).ignore();
        }
        let mut conn = self.conn.clone();
        pipe.query_async::<()>(&mut conn).await.map_err(backend)
    }

    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        let mut conn = self.conn.clone();
        redis::cmd("DEL")
            .arg(self.key(session))
            .query_async::<()>(&mut conn)
            .await
            .map_err(backend)
    }
}
