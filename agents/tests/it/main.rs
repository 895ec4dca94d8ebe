//! The agent layer's integration tests, one binary: each former test file is a module; helpers
//! shared by several of them live in `tests/common/`.

mod common {
    pub use agentgraph_test_support::graphs::*;
}

mod agent_nodes;
mod budget;
mod memory;
mod models_scripted;
mod observational;
mod observational_replay;
mod orchestration;
mod orchestration_usage;
mod providers;
mod recorded;
mod store_memory;
mod verify_loop;
