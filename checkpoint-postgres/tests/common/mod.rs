//! Shared test setup: the server comes from `AGENTGRAPH_TEST_POSTGRES_URL`; without it the
//! tests skip through `agentgraph-test-support` (recorded, and a failure under `CI=true`), so
//! `cargo test` works on machines without PostgreSQL. `.ci/run` starts a server and sets the
//! variable.

#![allow(dead_code)]

use tokio_postgres::NoTls;

pub const URL_VAR: &str = "AGENTGRAPH_TEST_POSTGRES_URL";

/// The test server's URL, or `None` (a recorded skip; a failure under `CI=true`).
pub fn url() -> Option<String> {
    agentgraph_test_support::require_postgres()
}

/// A schema name no other run uses.
pub fn fresh_schema() -> String {
    format!("agtest_{}", uuid::Uuid::new_v4().simple())
}

/// Drops a test schema and everything in it.
pub async fn drop_schema(url: &str, schema: &str) {
    match tokio_postgres::connect(url, NoTls).await {
        Ok((client, conn)) => {
            let task = tokio::spawn(conn);
            if let Err(e) = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await
            {
                eprintln!("could not drop test schema {schema}: {e}");
            }
            drop(client);
            let _ = task.await;
        }
        Err(e) => eprintln!("could not drop test schema {schema}: {e}"),
    }
}

/// Terminates the server backends of connections named `application_name`; returns how many.
pub async fn terminate_backends(url: &str, application_name: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("admin connection");
    let task = tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1",
            &[&application_name],
        )
        .await
        .expect("terminate backends");
    drop(client);
    let _ = task.await;
    row.get(0)
}
