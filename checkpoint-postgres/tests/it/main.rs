//! The PostgreSQL checkpointer's integration tests, one binary. They need a server
//! (`AGENTGRAPH_TEST_POSTGRES_URL`, see `tests/common/`); without one they skip, and fail under
//! `CI=true`.

#[path = "../common/mod.rs"]
mod common;

mod conformance;
mod item_store;
mod run_leases;
mod store;
mod thread_locks;
mod two_instances;
