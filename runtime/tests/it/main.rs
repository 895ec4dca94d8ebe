//! The runtime's integration tests, one binary: each former test file is a module; helpers shared
//! by several of them live in `tests/common/`.

mod common {
    pub use agentgraph_test_support::graphs::*;
}

mod checkpointer_conformance;
mod engine_basics;
mod engine_interrupts;
mod engine_persistence;
mod engine_streaming;
mod engine_subgraphs;
mod portable;
mod reducer_index;
mod reducer_props;
mod send_sync;
mod sled_and_group_commit;
mod smoke;
mod store;
