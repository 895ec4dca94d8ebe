//! # agentgraph language server
//!
//! A language server for `.ag` files over stdio: the dsl crate's check diagnostics as you type,
//! hover, go to definition, completion and formatting. [`run_stdio`] is what `agentgraph lsp`
//! calls; [`serve`] runs the same server on any `lsp_server::Connection` (tests use
//! `Connection::memory`). Positions are converted between byte offsets and UTF-16 units.

mod diagnostics;
mod features;
pub mod position;
mod server;
mod symbols;
mod transport;

use agentgraph_dsl::RegistryFactory;

pub use server::capabilities;

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The client broke the protocol (e.g. no `initialize` first).
    #[error("protocol error: {0}")]
    Protocol(#[from] lsp_server::ProtocolError),
    /// The connection to the client closed while the server was answering.
    #[error("the connection to the client closed")]
    Closed,
    /// Reading stdin or writing stdout failed.
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
    /// A value could not be serialized.
    #[error("serializing a message: {0}")]
    Json(#[from] serde_json::Error),
}

/// Serves `conn` until the client exits, with the names of registries from `registry`.
pub fn serve(conn: &lsp_server::Connection, registry: &RegistryFactory) -> Result<(), LspError> {
    server::serve(conn, registry())
}

/// Serves on stdin/stdout until the client exits.
pub fn run_stdio(registry: &RegistryFactory) -> Result<(), LspError> {
    let (conn, threads) = transport::stdio();
    let served = serve(&conn, registry);
    drop(conn);
    served?;
    threads.join()?;
    Ok(())
}
