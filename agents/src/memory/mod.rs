//! Conversation memory: stores of chat messages keyed by a session id.
//!
//! Messages are the JSON objects of [`agentgraph_runtime::messages`] (`type`/`role`, `id`, `content`, and
//! optionally `tool_calls` / `tool_call_id`); a store keeps them in append order per session and
//! never mixes sessions. Five stores share the [`ChatMemory`] trait:
//!
//! - [`BufferMemory`]: in-process, keeps everything until cleared;
//! - [`WindowMemory`]: wraps any store and loads only the last N messages, never starting the
//!   window on a tool result whose AI tool call fell outside it;
//! - [`SledMemory`]: persistent on sled, one ordered range per session in its own tree;
//! - [`RedisMemory`]: a Redis list per session under a key prefix, with an optional TTL;
//! - [`StoreMemory`]: items of the graph's long-term store under a namespace computed from the
//!   state ([`StoreMemorySpec`]), shared by every thread that computes the same namespace.
//!
//! [`observational`] is the other kind of memory: a long conversation's oldest messages turned
//! into observations by a model (thread-scoped), plus the user-scoped working memory.

mod buffer;
pub mod observational;
mod redis_store;
mod sled_store;
mod store_memory;
mod window;

pub use buffer::BufferMemory;
pub use observational::{ObserveNode, UpdateWorkingMemoryTool};
pub use redis_store::{RedisMemory, DEFAULT_KEY_PREFIX};
pub use sled_store::SledMemory;
pub use store_memory::{NamespaceFn, StoreMemory, StoreMemorySpec};
pub use window::{window_start, WindowMemory};

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Why a memory operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The storage backend (sled, Redis, ...) reported an error.
    #[error("memory backend error: {0}")]
    Backend(String),
    /// A stored message could not be encoded or decoded as JSON.
    #[error("memory codec error: {0}")]
    Codec(String),
}

impl From<serde_json::Error> for MemoryError {
    fn from(e: serde_json::Error) -> Self {
        MemoryError::Codec(e.to_string())
    }
}

/// A store of chat messages per session id.
#[async_trait]
pub trait ChatMemory: Send + Sync + 'static {
    /// The messages of `session`, oldest first (empty when the session is unknown).
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError>;
    /// Appends `messages` to `session`, in order.
    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError>;
    /// Forgets every message of `session`.
    async fn clear(&self, session: &str) -> Result<(), MemoryError>;
}

#[async_trait]
impl<M: ChatMemory + ?Sized> ChatMemory for Arc<M> {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        (**self).load(session).await
    }
    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        (**self).append(session, messages).await
    }
    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        (**self).clear(session).await
    }
}

#[async_trait]
impl<M: ChatMemory + ?Sized> ChatMemory for Box<M> {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        (**self).load(session).await
    }
    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        (**self).append(session, messages).await
    }
    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        (**self).clear(session).await
    }
}
