//! `catalogue::instance::save_from_n8n` against the real n8n of `scripts/n8n` (skipped without
//! it, a failure under `CI=true`): the saved file is the instance's catalogue, and a refused
//! login leaves it as it was.

use agentgraph_n8n::catalogue::instance::{save_from_n8n, FromN8nError};
use agentgraph_n8n::catalogue::store::Store;
use agentgraph_n8n::client::ClientError;
use agentgraph_std_tools::catalogue::Catalogue;

#[tokio::test]
async fn the_instance_catalogue_is_saved_and_a_wrong_password_is_refused() {
    let Some(n8n) = agentgraph_test_support::require_n8n() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let store = Store::new(data.path());
    let source = save_from_n8n(&store, &n8n.url, &n8n.email, &n8n.password)
        .await
        .unwrap();
    let file = data.path().join("catalogue/instance/nodes.json");
    let catalogue = Catalogue::load_node_types_export(&file).unwrap();
    for t in [
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.set",
        "@n8n/n8n-nodes-langchain.agent",
    ] {
        assert!(catalogue.contains(t), "{t} is missing");
    }
    // n8n 1.123 has about 800 node types.
    assert!(catalogue.len() > 500, "{} node types", catalogue.len());
    assert_eq!(source.node_types, catalogue.len());
    assert_eq!(source.url, n8n.url.trim_end_matches('/'));
    assert_eq!(store.instance().unwrap(), Some(source));

    let before = std::fs::read(&file).unwrap();
    let err = save_from_n8n(&store, &n8n.url, &n8n.email, "not-the-password")
        .await
        .unwrap_err();
    assert!(
        matches!(err, FromN8nError::Client(ClientError::Config(_))),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("check the email and password"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
