//! Embedding examples for the agentgraph runtime; see `src/bin/`.
