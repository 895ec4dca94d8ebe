//! The DSL's integration tests, one binary: each former test file is a module. Fixtures stay in
//! `tests/fixtures/` (`ok/`, `err/`) and `tests/viz/`.

mod agent_entries;
mod ast_snapshots;
mod deep_nesting;
mod examples;
mod extensions;
mod fmt;
mod golden;
mod js_nodes;
mod literals;
mod parse_smoke;
mod robustness;
mod send_prompts;
mod send_writes;
mod store_entries;
mod tool_nodes;
mod viz;
