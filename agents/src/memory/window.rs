//! The window: only the last N messages of an underlying store.

use super::{ChatMemory, MemoryError};
use async_trait::async_trait;
use serde_json::Value;

/// Wraps a store and loads at most the last `max` messages of a session.
///
/// The window never starts on a tool result: when the cut falls between an AI message with
/// `tool_calls` and its tool results, the orphaned results are dropped too, so a tool call and
/// its results are either both in the window or both out of it (providers reject tool messages
/// that do not follow their call). The window thus holds at most `max` messages, sometimes
/// fewer. Appends and clears go to the underlying store unchanged; it keeps the full history.
#[derive(Debug)]
pub struct WindowMemory<M> {
    inner: M,
    max: usize,
}

impl<M: ChatMemory> WindowMemory<M> {
    /// A window of the last `max` messages over `inner`.
    pub fn new(inner: M, max: usize) -> Self {
        Self { inner, max }
    }

    /// The window size.
    pub fn max_messages(&self) -> usize {
        self.max
    }

    /// The underlying store.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

/// The kind of a message: its `type`, else its `role`.
fn kind(m: &Value) -> Option<&str> {
    m.get("type")
        .or_else(|| m.get("role"))
        .and_then(Value::as_str)
}

fn is_tool_result(m: &Value) -> bool {
    kind(m) == Some("tool")
}

/// The index at which the window of the last `max` messages of `messages` starts: the naive
/// cut `len - max`, moved forward past any tool results whose call lies before the cut.
pub fn window_start(messages: &[Value], max: usize) -> usize {
    let mut start = messages.len().saturating_sub(max);
    if start == 0 {
        return 0;
    }
    while start < messages.len() && is_tool_result(&messages[start]) {
        start += 1;
    }
    start
}

#[async_trait]
impl<M: ChatMemory> ChatMemory for WindowMemory<M> {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        let mut all = self.inner.load(session).await?;
        let start = window_start(&all, self.max);
        Ok(all.split_off(start))
    }

    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        self.inner.append(session, messages).await
    }

    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        self.inner.clear(session).await
    }
}
