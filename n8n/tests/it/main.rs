//! agentgraph-n8n's integration tests, one binary. Against a real n8n (started by
//! `scripts/n8n start`; `.ci/run` does it): the client's calls and errors, running workflows,
//! the validator's verdicts next to n8n's own on the workflow corpus, saving an instance's
//! catalogue; without an instance they skip (a failure under `CI=true`). Offline: the chat page
//! in a browser (`browser`), the catalogue order and the catalogue fetched from a loopback fake
//! npm registry (`catalogue`), the studio in a browser (`studio`).

mod browser;
mod catalogue;
mod client;
mod corpus;
mod instance_ai;
mod instance_ai_transcript;
mod run;
mod run_tool;
mod studio;

use agentgraph_n8n::client::N8nClient;

/// A client for the test instance, or a recorded skip.
pub fn client() -> Option<N8nClient> {
    let n8n = agentgraph_test_support::require_n8n()?;
    Some(N8nClient::new(&n8n.url, &n8n.api_key).expect("the test instance's address and key"))
}
