//! The `agentgraph` command's integration tests, one binary: each former test file is a module.
//! `tests/scenario/` (the builder scenarios) and `tests/wire/` (the provider wire formats) are
//! helpers shared by the builder modules; fixtures stay in `tests/chat/`, `tests/fixtures/`.

#[path = "../scenario/mod.rs"]
mod scenario;
#[path = "../wire/mod.rs"]
mod wire;

/// A data folder holding no stored catalogue (never created): runs of the binary that expect
/// the built-in catalogue get it whatever `agentgraph catalogue fetch` stored on this machine.
pub const NO_DATA_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/no-agentgraph-data");

mod builder;
mod builder_wire;
mod catalogue;
mod chat;
mod chat_instance;
mod chat_piped;
mod chat_tty;
mod cli;
mod demo_session;
mod eval;
mod lsp;
mod mcp_agent;
mod mcp_server;
mod n8n_deploy;
mod n8n_scenarios;
mod otlp_export;
mod react_agent;
mod recorded;
mod serve_auth;
mod serve_failover;
mod serve_owners;
mod serve_postgres;
mod serve_signals;
mod snapshots;
mod validate;
