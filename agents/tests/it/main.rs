//! The agent layer's integration tests, one binary: each former test file is a module; helpers
//! shared by several of them live in `tests/common/`.

mod common {
    pub use agentgraph_test_support::graphs::*;

    use agentgraph_agents::nodes::has_tool_calls;
    use agentgraph_runtime::{GraphBuilder, Node, END, START};
    use std::sync::Arc;

    /// The agent ⇄ tools loop most tests build: `agent` first, then `tools` while the agent's
    /// last answer (channel `messages`) calls tools, back to `agent` after them.
    pub trait AgentLoop {
        fn agent_loop(self, agent: Arc<dyn Node>, tools: Arc<dyn Node>) -> Self;
    }

    impl AgentLoop for GraphBuilder {
        fn agent_loop(self, agent: Arc<dyn Node>, tools: Arc<dyn Node>) -> Self {
            self.node("agent", agent)
                .node("tools", tools)
                .edge(START, "agent")
                .route("agent", |s| {
                    if has_tool_calls(s, "messages") {
                        "tools"
                    } else {
                        END
                    }
                })
                .edge("tools", "agent")
        }
    }
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
