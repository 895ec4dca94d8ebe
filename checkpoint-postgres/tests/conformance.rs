//! The runtime's checkpointer conformance suite against PostgreSQL: every check gets a fresh
//! table (its own prefix) in a schema created for this run and dropped afterwards.

mod common;

use agentgraph_checkpoint_conformance as conformance;
use agentgraph_postgres::{PostgresCheckpointer, PostgresError, PostgresOptions};
use agentgraph_runtime::checkpoint::Checkpointer;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_checkpointer_conforms() {
    let Some(url) = common::url("postgres_checkpointer_conforms") else {
        return;
    };
    let schema = common::fresh_schema();
    let n = AtomicUsize::new(0);
    let outcome = AssertUnwindSafe(conformance::run_all(|| {
        let options = PostgresOptions::default()
            .schema(schema.clone())
            .table_prefix(format!("c{}_", n.fetch_add(1, Ordering::Relaxed)));
        let url = url.clone();
        async move {
            let cp = PostgresCheckpointer::connect_with(&url, options)
                .await
                .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
            Arc::new(cp) as Arc<dyn Checkpointer>
        }
    }))
    .catch_unwind()
    .await;
    common::drop_schema(&url, &schema).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test]
async fn bad_names_and_urls_are_typed_errors() {
    let err = PostgresCheckpointer::connect_with(
        "postgres://nobody@127.0.0.1:1/x",
        PostgresOptions::default().table_prefix("Robert'); DROP TABLE x;--"),
    )
    .await
    .err()
    .expect("a bad prefix is refused");
    assert!(matches!(err, PostgresError::Name { .. }), "{err}");
    let err = PostgresCheckpointer::connect("not a url=")
        .await
        .err()
        .expect("a bad url is refused");
    assert!(matches!(err, PostgresError::Url(_)), "{err}");
    // Port 1 on loopback: nothing listens, so the connection is refused.
    let err = PostgresCheckpointer::connect("postgres://nobody@127.0.0.1:1/x")
        .await
        .err()
        .expect("no server there");
    assert!(matches!(err, PostgresError::Connect(_)), "{err}");
}
