//! MCP for agentgraph: the tools of Model Context Protocol servers as agentgraph tools.
//!
//! A [`ServerConfig`] says how to reach a server (a child process over stdio, or streamable
//! HTTP) and which of its tools to use; [`toolset`] lists them through the shared [`Pool`] and
//! returns them as [`agentgraph_agents::tools::Tool`]s, with schemas [`sanitize`]d for both
//! model providers and names checked against the tools already registered. Calls go through
//! the pool: one connection per distinct server, started again with backoff when it dies, a
//! time limit per call, and the run's cancellation reaching the call in flight.
//!
//! The other way round, [`server`] serves agentgraph tools as an MCP server (stdio or
//! streamable HTTP), each session with its own state.
//!
//! Built on the official Rust SDK (`rmcp`).

mod config;
mod connection;
mod error;
mod pool;
mod schema;
pub mod server;
mod source;
mod tool;

pub use config::{ServerConfig, Transport, DEFAULT_CALL_TIMEOUT};
pub use connection::{Connection, RemoteTool};
pub use error::McpError;
pub use pool::Pool;
pub use schema::sanitize;
pub use source::McpSource;
pub use tool::{result_output, toolset, McpTool};
