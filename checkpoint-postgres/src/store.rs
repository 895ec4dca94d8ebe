//! [`PostgresStore`]: the ordered key-value store over one table — the connection (reopened
//! when lost), the table's DDL and prepared statements, paged scans and atomic batches.

use crate::batch::{Batch, WriteFailed, WriteQueue};
use crate::error::{connection_lost, describe};
use crate::{PostgresError, PostgresOptions};
use agentgraph_runtime::checkpoint::{AsyncKvStore, CheckpointError, KvVisitor};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use tokio_postgres::{Client, NoTls, Statement};

/// One live connection with its prepared statements.
struct Conn {
    client: Client,
    get: Statement,
    scan_forward: Statement,
    scan_reverse: Statement,
    apply: Statement,
}

/// The ordered key-value store over one PostgreSQL table.
///
/// One connection is shared by all callers: tokio-postgres pipelines concurrent queries on it,
/// and every atomic batch is a single statement, so no transaction has to hold the connection
/// (hence no pool). When the connection is found closed (server restart, killed backend) it is
/// reopened and the query retried once; every query is idempotent, so that is safe.
pub struct PostgresStore {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) table: String,
    current: Mutex<Option<Arc<Conn>>>,
    reconnect: tokio::sync::Mutex<()>,
    /// Concurrent writes wait here to share one statement and commit.
    writes: WriteQueue,
}

/// Rows fetched per round trip of a scan: small first (most scans stop after a row or two),
/// then growing.
const FIRST_PAGE: i64 = 16;
const MAX_PAGE: i64 = 1024;

impl PostgresStore {
    pub(crate) async fn open(url: &str, options: &PostgresOptions) -> Result<Self, PostgresError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(PostgresError::Url)?;
        if config.get_application_name().is_none() {
            // Shows up in `pg_stat_activity`.
            config.application_name("agentgraph");
        }
        let table = options.table()?;
        let store = PostgresStore {
            config,
            table,
            current: Mutex::new(None),
            reconnect: tokio::sync::Mutex::new(()),
            writes: WriteQueue::new(),
        };
        let conn = store.connect(options.schema.as_deref(), true).await?;
        *store.lock() = Some(conn);
        Ok(store)
    }

    /// Statements that wrote checkpoint data so far, each one commit (one WAL flush with
    /// `synchronous_commit = on`); concurrent writers share them.
    pub fn commits(&self) -> u64 {
        self.writes.commits()
    }

    /// The qualified, quoted table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Drops the table and everything in it (for tests and tear-down).
    pub async fn drop_table(&self) -> Result<(), PostgresError> {
        let sql = format!("DROP TABLE IF EXISTS {}", self.table);
        let sql = &sql;
        self.run("drop table", |c| async move {
            c.client.batch_execute(sql).await
        })
        .await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Conn>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn query_error(&self, op: &'static str, source: tokio_postgres::Error) -> PostgresError {
        PostgresError::Query {
            op,
            table: self.table.clone(),
            source,
        }
    }

    async fn connect(
        &self,
        schema: Option<&str>,
        create: bool,
    ) -> Result<Arc<Conn>, PostgresError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(PostgresError::Connect)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "PostgreSQL checkpointer connection closed");
            }
        });
        let t = &self.table;
        let setup = |source| PostgresError::Setup {
            table: t.clone(),
            source,
        };
        // Durability does not depend on the server's default: a commit returns once it is in
        // the WAL on disk.
        client
            .batch_execute("SET synchronous_commit = on")
            .await
            .map_err(setup)?;
        if create {
            // Serialised by an advisory lock: concurrent `CREATE TABLE IF NOT EXISTS` of the
            // same table can otherwise fail on a unique index of the catalog.
            let mut sql = String::from("BEGIN; SELECT pg_advisory_xact_lock(7268153101);");
            if let Some(s) = schema {
                sql.push_str(&format!("CREATE SCHEMA IF NOT EXISTS \"{s}\";"));
            }
            sql.push_str(&format!(
                "CREATE TABLE IF NOT EXISTS {t} (key bytea PRIMARY KEY, value bytea NOT NULL); \
                 COMMIT;"
            ));
            client.batch_execute(&sql).await.map_err(setup)?;
        }
        let get = client
            .prepare(&format!("SELECT value FROM {t} WHERE key = $1"))
            .await
            .map_err(setup)?;
        let scan = |dir: &str| {
            format!(
                "SELECT key, value FROM {t} WHERE key >= $1 AND key < $2 \
                 ORDER BY key {dir} LIMIT $3"
            )
        };
        let scan_forward = client.prepare(&scan("ASC")).await.map_err(setup)?;
        let scan_reverse = client.prepare(&scan("DESC")).await.map_err(setup)?;
        // One statement, hence one transaction: the deletes and the upserts commit together.
        let apply = client
            .prepare(&format!(
                "WITH deleted AS (DELETE FROM {t} WHERE key = ANY($1::bytea[])) \
                 INSERT INTO {t} (key, value) \
                 SELECT * FROM unnest($2::bytea[], $3::bytea[]) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            ))
            .await
            .map_err(setup)?;
        Ok(Arc::new(Conn {
            client,
            get,
            scan_forward,
            scan_reverse,
            apply,
        }))
    }

    /// Runs `query` on the live connection; when that connection turns out to be closed (a
    /// server restart, a killed backend), runs it once more on a new one. Every query here is
    /// idempotent (reads, upserts and deletes of given keys), so the retry is safe even when
    /// the first attempt committed before the connection dropped.
    async fn run<T, F, Fut>(&self, op: &'static str, query: F) -> Result<T, PostgresError>
    where
        F: Fn(Arc<Conn>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let conn = self.conn().await?;
        match query(conn.clone()).await {
            Ok(v) => Ok(v),
            Err(e) if connection_lost(&e) || conn.client.is_closed() => {
                tracing::info!(
                    error = %describe(&e),
                    table = %self.table,
                    "PostgreSQL connection lost; reconnecting"
                );
                {
                    let mut current = self.lock();
                    if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                        *current = None;
                    }
                }
                let conn = self.conn().await?;
                query(conn).await.map_err(|e| self.query_error(op, e))
            }
            Err(e) => Err(self.query_error(op, e)),
        }
    }

    /// The live connection, reopened if it was closed.
    async fn conn(&self) -> Result<Arc<Conn>, PostgresError> {
        if let Some(c) = self.lock().as_ref() {
            if !c.client.is_closed() {
                return Ok(c.clone());
            }
        }
        let _one_at_a_time = self.reconnect.lock().await;
        if let Some(c) = self.lock().as_ref() {
            if !c.client.is_closed() {
                return Ok(c.clone());
            }
        }
        let conn = self.connect(None, false).await?;
        *self.lock() = Some(conn.clone());
        Ok(conn)
    }
}

#[async_trait]
impl AsyncKvStore for PostgresStore {
    async fn get_async(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CheckpointError> {
        Ok(self
            .run("get", |c| async move {
                let row = c.client.query_opt(&c.get, &[&key]).await?;
                row.map(|r| r.try_get::<_, Vec<u8>>(0)).transpose()
            })
            .await?)
    }

    async fn scan_async(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        visit: &mut KvVisitor<'_>,
    ) -> Result<(), CheckpointError> {
        let (mut start, mut end) = (start.to_vec(), end.to_vec());
        let mut page = FIRST_PAGE;
        loop {
            // Each page is its own query from the last key seen, so a page can be retried on
            // a new connection.
            let (from, to) = (&start, &end);
            let rows = self
                .run("scan", |c| async move {
                    let stmt = if reverse {
                        &c.scan_reverse
                    } else {
                        &c.scan_forward
                    };
                    c.client.query(stmt, &[from, to, &page]).await
                })
                .await?;
            let full = rows.len() as i64 == page;
            let mut last: Option<Vec<u8>> = None;
            for row in &rows {
                let k: &[u8] = row.try_get(0).map_err(|e| self.query_error("scan", e))?;
                let v: &[u8] = row.try_get(1).map_err(|e| self.query_error("scan", e))?;
                if !visit(k, v) {
                    return Ok(());
                }
                last = Some(k.to_vec());
            }
            let Some(last) = last else { return Ok(()) };
            if !full {
                return Ok(());
            }
            if reverse {
                end = last;
            } else {
                // The smallest key after `last`.
                start = last;
                start.push(0);
            }
            page = (page * 4).min(MAX_PAGE);
        }
    }

    async fn apply_async(
        &self,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        deletes: Vec<Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        if puts.is_empty() && deletes.is_empty() {
            return Ok(());
        }
        // Same outcome as sled's batch (deletes, then puts in order): the last put of a key
        // wins and a put key is not deleted; `Merged` folds them (and the batches of other
        // writers sharing the commit) so no key appears twice in the upsert.
        let batch = Batch { puts, deletes };
        self.writes
            .apply(batch, |m| async move {
                let (deletes, keys, values) = (&m.deletes, &m.keys, &m.values);
                self.run("write", |c| async move {
                    c.client.execute(&c.apply, &[deletes, keys, values]).await
                })
                .await
                .map(|_| ())
                .map_err(|e| WriteFailed {
                    batch_specific: !matches!(e, PostgresError::Connect(_)),
                    message: e.to_string(),
                })
            })
            .await
            .map_err(|e| CheckpointError::Backend(e.message))
    }

    async fn flush_async(&self) -> Result<(), CheckpointError> {
        // Every batch was committed synchronously when it was applied.
        Ok(())
    }
}
