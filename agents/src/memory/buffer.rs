//! The in-process buffer: every message of every session, until cleared.

use super::{ChatMemory, MemoryError};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// Keeps every message in process memory; lost when dropped.
#[derive(Debug, Default)]
pub struct BufferMemory {
    sessions: Mutex<HashMap<String, Vec<Value>>>,
}

impl BufferMemory {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ids of the sessions that hold at least one message, sorted.
    pub fn sessions(&self) -> Vec<String> {
        let map = self.lock();
        let mut ids: Vec<String> = map
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, _)| k.clone())
            .collect();
        ids.sort();
        ids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Value>>> {
        // A panic while holding the lock cannot leave a half-written Vec behind that matters
        // more than losing the whole store, so recover from poisoning.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl ChatMemory for BufferMemory {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        Ok(self.lock().get(session).cloned().unwrap_or_default())
    }

    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        if messages.is_empty() {
            return Ok(());
        }
        self.lock()
            .entry(session.to_string())
            .or_default()
            .extend_from_slice(messages);
        Ok(())
    }

    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        self.lock().remove(session);
        Ok(())
    }
}
