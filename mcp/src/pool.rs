//! Connections shared by every graph and run of a process: one per distinct server
//! ([`Transport`]), started at first use, started again (with backoff) after it dies, closed by
//! [`Pool::shutdown`].

use crate::config::Transport;
use crate::connection::{Connection, RemoteTool};
use crate::error::McpError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The first wait before starting a server again after a failed start; doubled each time up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One server's connection and its restart bookkeeping.
#[derive(Default)]
struct Slot {
    conn: Option<Arc<Connection>>,
    /// Failed starts in a row.
    failures: u32,
    /// No new start before this instant.
    not_before: Option<Instant>,
}

/// Shared MCP connections, keyed by how the server is reached.
#[derive(Default)]
pub struct Pool {
    slots: Mutex<HashMap<Transport, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

impl Pool {
    /// An empty pool (tests; applications share [`Pool::global`]).
    pub fn new() -> Arc<Pool> {
        Arc::new(Pool::default())
    }

    /// The process-wide pool.
    pub fn global() -> Arc<Pool> {
        static GLOBAL: OnceLock<Arc<Pool>> = OnceLock::new();
        GLOBAL.get_or_init(Pool::new).clone()
    }

    fn slot(&self, transport: &Transport) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(transport.clone()).or_default().clone()
    }

    /// The live connection to the server, started (again) when there is none or it died.
    /// After a failed start the next one waits (0.5 s, doubling, at most 30 s), bounded by
    /// `patience`; a start still too early then fails without trying.
    pub async fn connection(
        &self,
        transport: &Transport,
        patience: Duration,
    ) -> Result<Arc<Connection>, McpError> {
        let slot = self.slot(transport);
        let mut slot = slot.lock().await;
        if let Some(conn) = &slot.conn {
            if !conn.is_closed() {
                return Ok(conn.clone());
            }
            tracing::warn!(server = %transport, "MCP server connection closed; starting it again");
            slot.conn = None;
        }
        if let Some(at) = slot.not_before {
            let wait = at.saturating_duration_since(Instant::now());
            if wait > patience {
                return Err(McpError::Connect {
                    server: transport.to_string(),
                    message: format!(
                        "it failed to start {} time(s) in a row; the next attempt is in {:.1} s",
                        slot.failures,
                        wait.as_secs_f64()
                    ),
                });
            }
            tokio::time::sleep(wait).await;
        }
        match Connection::open(transport).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                slot.conn = Some(conn.clone());
                slot.failures = 0;
                slot.not_before = None;
                Ok(conn)
            }
            Err(e) => {
                slot.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(2u32.saturating_pow(slot.failures.saturating_sub(1)))
                    .min(MAX_BACKOFF);
                slot.not_before = Some(Instant::now() + backoff);
                Err(e)
            }
        }
    }

    /// The server's tools.
    pub async fn list_tools(&self, transport: &Transport) -> Result<Vec<RemoteTool>, McpError> {
        let conn = self.connection(transport, MAX_BACKOFF).await?;
        match conn.list_tools().await {
            Err(e @ McpError::Closed { .. }) => {
                self.forget(transport, &conn).await;
                Err(e)
            }
            other => other,
        }
    }

    /// Calls a tool; a connection found closed by the call is dropped, so the next call starts
    /// the server again.
    pub async fn call(
        &self,
        transport: &Transport,
        tool: &str,
        args: Value,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let conn = self.connection(transport, limit).await?;
        let result = conn.call(tool, args, limit, cancel).await;
        if matches!(result, Err(McpError::Closed { .. })) || conn.is_closed() {
            self.forget(transport, &conn).await;
            if let Ok(v) = result {
                return Ok(v);
            }
            return Err(McpError::Closed {
                server: transport.to_string(),
                message: "the server stopped during the call".into(),
            });
        }
        result
    }

    async fn forget(&self, transport: &Transport, conn: &Arc<Connection>) {
        let slot = self.slot(transport);
        let mut slot = slot.lock().await;
        if slot.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            slot.conn = None;
        }
    }

    /// Closes every connection (child processes are stopped). Later calls start them again.
    pub async fn shutdown(&self) {
        let slots: Vec<_> = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.drain().map(|(_, s)| s).collect()
        };
        for slot in slots {
            let conn = slot.lock().await.conn.take();
            if let Some(conn) = conn.and_then(|c| Arc::try_unwrap(c).ok()) {
                conn.close().await;
            }
        }
    }
}
