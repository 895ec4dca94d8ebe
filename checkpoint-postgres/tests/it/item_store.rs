//! The long-term store and the node cache on PostgreSQL: the runtime's shared suites, each
//! check on a fresh table (its own prefix) in a schema created for this run and dropped
//! afterwards.

use crate::common;

use agentgraph_checkpoint_conformance::{node_cache, store as suite};
use agentgraph_postgres::{connect_store, PostgresItems, PostgresOptions};
use agentgraph_runtime::store::{ns, Store};
use futures::FutureExt;
use serde_json::json;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

async fn items(url: &str, schema: &str, prefix: String) -> PostgresItems {
    let options = PostgresOptions::default()
        .schema(schema.to_string())
        .table_prefix(prefix);
    PostgresItems::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let n = AtomicUsize::new(0);
    let outcome = AssertUnwindSafe(suite::run_store_suite(|| {
        items(
            &url,
            &schema,
            format!("s{}_", n.fetch_add(1, Ordering::Relaxed)),
        )
    }))
    .catch_unwind()
    .await;
    common::drop_schema(&url, &schema).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_cache_on_postgres() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let backend = items(&url, &schema, "cache_".into()).await;
    let outcome = AssertUnwindSafe(node_cache::run_cache_suite(backend))
        .catch_unwind()
        .await;
    common::drop_schema(&url, &schema).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Two connections to one table (two processes, say) see each other's items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_share_items() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::fresh_schema();
    let options = || PostgresOptions::default().schema(schema.clone());
    let outcome = AssertUnwindSafe(async {
        let a = connect_store(&url, options()).await.expect("first");
        let b = connect_store(&url, options()).await.expect("second");
        a.put(&ns(&["users", "u1"]), "tz", json!("Europe/Paris"), None)
            .await
            .expect("put");
        let item = b
            .get(&ns(&["users", "u1"]), "tz")
            .await
            .expect("get")
            .expect("seen by the other connection");
        assert_eq!(item.value, json!("Europe/Paris"));
    })
    .catch_unwind()
    .await;
    common::drop_schema(&url, &schema).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
