//! The n8n crate's tests against a real n8n (started by `scripts/n8n start`; `.ci/run` does
//! it): the client's calls and errors, running workflows, and the validator's verdicts next
//! to n8n's own on the workflow corpus. Without an instance they skip (a failure under
//! `CI=true`).

mod client;
mod corpus;
mod run;
mod run_tool;

use agentgraph_n8n::client::N8nClient;

/// A client for the test instance, or a recorded skip.
pub fn client() -> Option<N8nClient> {
    let n8n = agentgraph_test_support::require_n8n()?;
    Some(N8nClient::new(&n8n.url, &n8n.api_key).expect("the test instance's address and key"))
}
