//! The HTTP server's integration tests, one binary: each former test file is a module. The
//! graphs they serve are in `tests/graphs/`.

mod agent;
mod api;
mod auth;
mod background_tasks;
mod event_packs;
mod reload;
mod snapshots;
mod store;
mod tool_confirm;
