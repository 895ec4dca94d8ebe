//! # agentgraph agents
//!
//! The agent layer over the runtime: chat models ([`models`]: the provider-neutral
//! [`models::ChatModel`] trait, Anthropic and OpenAI-compatible providers with streaming,
//! retries and cancellation, the scripted model for tests and offline demos, structured output,
//! pricing, token budgets and history compaction), the agent nodes ([`nodes`]: `llm`,
//! `tool_executor`, `compact`, `agent_output`), the [`tools::Tool`] trait with argument
//! validation against JSON schemas, and chat memory stores ([`memory`]: buffer, window, sled,
//! Redis), and deep-agent primitives ([`orchestration`]: sub-agents, `delegate`, `plan`,
//! deferred tools, confirmation).
//!
//! The engine (`agentgraph-runtime`) knows nothing of this crate: agent nodes are ordinary
//! [`agentgraph_runtime::Node`]s.

#![warn(missing_docs)]

pub mod memory;
pub mod models;
pub mod nodes;
pub mod orchestration;
pub mod tools;
