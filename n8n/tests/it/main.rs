//! agentgraph-n8n's integration tests, one binary: the chat page in a browser (`browser`), the
//! catalogue order and the stored catalogues (`catalogue`: fetched from a loopback fake npm
//! registry, saved from the real n8n of `scripts/n8n`).

mod browser;
mod catalogue;
