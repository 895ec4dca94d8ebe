//! The agent layer's integration tests, one binary: each former test file is a module; helpers
//! shared by several of them live in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;

mod agent_nodes;
mod budget;
mod memory;
mod models_scripted;
mod providers;
