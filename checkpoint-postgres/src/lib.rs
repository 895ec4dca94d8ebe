//! A PostgreSQL checkpointer for agentgraph.
//!
//! It stores exactly the key-value layout of the memory and sled checkpointers (see the runtime's
//! `checkpoint::kv`): one table `(key bytea primary key, value bytea)` holding checkpoint
//! records, per-channel blobs keyed by (channel, checkpoint id), deltas, pending writes and thread
//! markers. The checkpoint logic (puts, delta chains, listing, pruning) is the runtime's own
//! [`KvCheckpointer`]; this crate only supplies the ordered store ([`PostgresStore`]), so every
//! backend behaves the same and passes the same conformance suite.
//!
//! Several processes can share one database: each batch of writes (all the blobs, the record and
//! the thread marker of one checkpoint; one task's pending writes; one prune) is a single SQL
//! statement, hence one transaction, committed with `synchronous_commit = on` before `put`
//! returns. A run started by one process can be resumed by another.
//!
//! ```no_run
//! use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
//! # async fn demo() -> Result<(), agentgraph_postgres::PostgresError> {
//! let cp = PostgresCheckpointer::connect_with(
//!     "postgres://agentgraph:secret@localhost/agentgraph",
//!     PostgresOptions::default().table_prefix("myapp_"),
//! )
//! .await?;
//! # let _ = cp; Ok(()) }
//! ```
//!
//! Connections are plain TCP or Unix sockets (no TLS yet).
//!
//! [`PostgresCheckpointer::thread_locks`] gives the processes a shared "one active run per
//! thread" rule ([`PostgresThreadLocks`], on advisory locks).

use agentgraph_runtime::checkpoint::{
    AsyncKvStore, ChannelEntry, Checkpoint, CheckpointError, CheckpointTuple, Checkpointer,
    KvCheckpointer, KvVisitor, ListQuery, PruneStats,
};
use agentgraph_runtime::CheckpointId;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_postgres::{Client, NoTls, Statement};

mod thread_locks;
pub use thread_locks::PostgresThreadLocks;

/// Errors of connecting to and configuring the PostgreSQL store. Errors of the checkpoint
/// operations themselves are [`CheckpointError::Backend`] carrying this error's message.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// The connection string could not be parsed.
    #[error("invalid PostgreSQL connection string: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// A table prefix or schema name that is not a plain identifier.
    #[error(
        "invalid {what} {value:?}: use at most {MAX_NAME} ASCII lowercase letters, digits or \
         underscores, not starting with a digit"
    )]
    Name {
        /// `table prefix` or `schema`.
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// The server could not be reached or refused the login.
    #[error("connecting to PostgreSQL: {}", describe(.0))]
    Connect(#[source] tokio_postgres::Error),
    /// Creating the schema/table or preparing the statements failed.
    #[error("setting up checkpoint table {table}: {}", describe(.source))]
    Setup {
        /// The qualified table name.
        table: String,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A query failed.
    #[error("PostgreSQL {op} on {table}: {}", describe(.source))]
    Query {
        /// What was being done.
        op: &'static str,
        /// The qualified table name.
        table: String,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
}

impl From<PostgresError> for CheckpointError {
    fn from(e: PostgresError) -> Self {
        CheckpointError::Backend(e.to_string())
    }
}

/// tokio-postgres prints a server error as just "db error"; add the server's message.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{e}: {} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        ),
        None => e.to_string(),
    }
}

/// Whether `e` means the connection is gone: closed, or the server ended the session
/// (SQLSTATE class 57P: admin or crash shutdown, cannot connect now).
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    e.is_closed() || e.code().is_some_and(|c| c.code().starts_with("57P"))
}

const MAX_NAME: usize = 40;

fn check_name(what: &'static str, value: &str, allow_empty: bool) -> Result<(), PostgresError> {
    let ok = (allow_empty || !value.is_empty())
        && value.len() <= MAX_NAME
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !value.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(PostgresError::Name {
            what,
            value: value.to_string(),
        })
    }
}

/// Where the checkpoints live inside the database.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    table_prefix: String,
    schema: Option<String>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            table_prefix: "agentgraph_".to_string(),
            schema: None,
        }
    }
}

impl PostgresOptions {
    /// The table is named `{prefix}checkpoints` (default prefix `agentgraph_`), so several
    /// applications can share one database by using different prefixes.
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// Puts the table in this schema (created if missing) instead of the connection's
    /// `search_path` default.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    fn table(&self) -> Result<String, PostgresError> {
        check_name("table prefix", &self.table_prefix, true)?;
        let table = format!("\"{}checkpoints\"", self.table_prefix);
        match &self.schema {
            Some(s) => {
                check_name("schema", s, false)?;
                Ok(format!("\"{s}\".{table}"))
            }
            None => Ok(table),
        }
    }
}

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
    config: tokio_postgres::Config,
    table: String,
    current: Mutex<Option<Arc<Conn>>>,
    reconnect: tokio::sync::Mutex<()>,
}

/// Rows fetched per round trip of a scan: small first (most scans stop after a row or two),
/// then growing.
const FIRST_PAGE: i64 = 16;
const MAX_PAGE: i64 = 1024;

impl PostgresStore {
    async fn open(url: &str, options: &PostgresOptions) -> Result<Self, PostgresError> {
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
        };
        let conn = store.connect(options.schema.as_deref(), true).await?;
        *store.lock() = Some(conn);
        Ok(store)
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
        // wins and a put key is not deleted. Duplicates would make the upsert fail.
        let mut last: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
        for (k, v) in puts {
            last.insert(k, v);
        }
        let deletes: Vec<Vec<u8>> = deletes
            .into_iter()
            .filter(|k| !last.contains_key(k))
            .collect();
        let (keys, values): (Vec<Vec<u8>>, Vec<Vec<u8>>) = last.into_iter().unzip();
        let (deletes, keys, values) = (&deletes, &keys, &values);
        self.run("write", |c| async move {
            c.client.execute(&c.apply, &[deletes, keys, values]).await
        })
        .await?;
        Ok(())
    }

    async fn flush_async(&self) -> Result<(), CheckpointError> {
        // Every batch was committed synchronously when it was applied.
        Ok(())
    }
}

/// The PostgreSQL checkpointer: the runtime's key-value checkpointer over a [`PostgresStore`].
pub struct PostgresCheckpointer {
    inner: KvCheckpointer<PostgresStore>,
}

impl PostgresCheckpointer {
    /// Connects with the default options (table `agentgraph_checkpoints` on the connection's
    /// `search_path`), creating the table if it is missing. `url` is a libpq-style connection
    /// string, either `postgres://user:password@host:port/db` or `host=/run/postgresql user=me`.
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects with explicit options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, PostgresError> {
        let store = PostgresStore::open(url, &options).await?;
        Ok(PostgresCheckpointer {
            inner: KvCheckpointer::with_store(store),
        })
    }

    /// The underlying store.
    pub fn store(&self) -> &PostgresStore {
        self.inner.store()
    }

    /// Thread leases shared by every process using this database and table (one extra
    /// connection): give them to a server so that a thread runs on one process at a time.
    pub async fn thread_locks(&self) -> Result<PostgresThreadLocks, PostgresError> {
        let store = self.inner.store();
        PostgresThreadLocks::open(store.config.clone(), store.table.clone()).await
    }
}

#[async_trait]
impl Checkpointer for PostgresCheckpointer {
    async fn put(
        &self,
        thread: &str,
        ns: &str,
        checkpoint: &Checkpoint,
        blobs: &[(String, ChannelEntry)],
    ) -> Result<(), CheckpointError> {
        self.inner.put(thread, ns, checkpoint, blobs).await
    }

    async fn put_writes(
        &self,
        thread: &str,
        ns: &str,
        id: CheckpointId,
        task_id: &str,
        writes: &[(String, Value)],
    ) -> Result<(), CheckpointError> {
        self.inner.put_writes(thread, ns, id, task_id, writes).await
    }

    async fn get(
        &self,
        thread: &str,
        ns: &str,
        id: Option<CheckpointId>,
    ) -> Result<Option<CheckpointTuple>, CheckpointError> {
        self.inner.get(thread, ns, id).await
    }

    async fn list(
        &self,
        thread: &str,
        query: &ListQuery,
    ) -> Result<Vec<CheckpointTuple>, CheckpointError> {
        self.inner.list(thread, query).await
    }

    async fn channel_entries(
        &self,
        thread: &str,
        ns: &str,
        channel: &str,
        version: CheckpointId,
    ) -> Result<Vec<(CheckpointId, ChannelEntry)>, CheckpointError> {
        self.inner
            .channel_entries(thread, ns, channel, version)
            .await
    }

    async fn list_threads(&self) -> Result<Vec<String>, CheckpointError> {
        self.inner.list_threads().await
    }

    async fn delete_thread(&self, thread: &str) -> Result<(), CheckpointError> {
        self.inner.delete_thread(thread).await
    }

    async fn prune(
        &self,
        thread: Option<&str>,
        keep: usize,
    ) -> Result<PruneStats, CheckpointError> {
        self.inner.prune(thread, keep).await
    }

    async fn flush(&self) -> Result<(), CheckpointError> {
        self.inner.flush().await
    }
}
