//! The long-term store on PostgreSQL: [`PostgresItems`], an [`ItemBackend`] over one table
//! `{prefix}store` (created on connect, in the options' schema), so the runtime's
//! [`ItemStore`] gives it the same semantics as the memory and sled stores.
//!
//! A row is `(ns, key, record, expires_at)`: `ns` is the namespace in the runtime's key layout
//! ([`encode_prefix`], so a namespace prefix is a text prefix), `record` the item as JSON bytes
//! (exact round trip of numbers), `expires_at` in ms since the epoch for sweeps. Both text
//! columns use the `C` collation, so rows sort in the order of the other backends. Each write
//! is one statement committed with `synchronous_commit = on`.

use crate::error::{connection_lost, describe};
use crate::{PostgresError, PostgresOptions};
use agentgraph_runtime::store::{encode_prefix, ItemBackend, ItemStore, Record, StoreError};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

/// Items in one PostgreSQL table.
pub struct PostgresItems {
    config: tokio_postgres::Config,
    table: String,
    current: Mutex<Option<Arc<Client>>>,
    reconnect: tokio::sync::Mutex<()>,
}

/// The PostgreSQL store.
pub type PostgresItemStore = ItemStore<PostgresItems>;

/// Opens a [`PostgresItemStore`] (see [`PostgresItems::connect`]).
pub async fn connect_store(
    url: &str,
    options: PostgresOptions,
) -> Result<PostgresItemStore, PostgresError> {
    Ok(ItemStore::with_backend(
        PostgresItems::connect(url, options).await?,
    ))
}

impl PostgresItems {
    /// Connects and creates the table `{prefix}store` (and the schema) if missing.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, PostgresError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(PostgresError::Url)?;
        if config.get_application_name().is_none() {
            config.application_name("agentgraph");
        }
        let items = PostgresItems {
            config,
            table: options.table_named("store")?,
            current: Mutex::new(None),
            reconnect: tokio::sync::Mutex::new(()),
        };
        let client = items.open(options.schema.as_deref()).await?;
        *items.lock() = Some(client);
        Ok(items)
    }

    /// The qualified, quoted table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Client>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn open(&self, create_in: Option<&str>) -> Result<Arc<Client>, PostgresError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(PostgresError::Connect)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "PostgreSQL store connection closed");
            }
        });
        let t = &self.table;
        let setup = |source| PostgresError::Setup {
            table: t.clone(),
            source,
        };
        let mut sql = String::from(
            "SET synchronous_commit = on; BEGIN; SELECT pg_advisory_xact_lock(7268153102);",
        );
        if let Some(s) = create_in {
            sql.push_str(&format!("CREATE SCHEMA IF NOT EXISTS \"{s}\";"));
        }
        sql.push_str(&format!(
            "CREATE TABLE IF NOT EXISTS {t} (ns text COLLATE \"C\" NOT NULL, \
             key text COLLATE \"C\" NOT NULL, record bytea NOT NULL, expires_at bigint, \
             PRIMARY KEY (ns, key)); COMMIT;"
        ));
        client.batch_execute(&sql).await.map_err(setup)?;
        Ok(Arc::new(client))
    }

    /// The live connection, reopened if it was closed.
    async fn client(&self) -> Result<Arc<Client>, PostgresError> {
        if let Some(c) = self.lock().as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let _one_at_a_time = self.reconnect.lock().await;
        if let Some(c) = self.lock().as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let client = self.open(None).await?;
        *self.lock() = Some(client.clone());
        Ok(client)
    }

    /// Runs one statement, once more on a new connection if the first was lost (every
    /// statement here is an idempotent read, upsert or delete).
    async fn query(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        let err = match client.query(sql, params).await {
            Ok(rows) => return Ok(rows),
            Err(e) => e,
        };
        if !(connection_lost(&err) || client.is_closed()) {
            return Err(self.failed(op, &err));
        }
        tracing::info!(error = %describe(&err), table = %self.table, "PostgreSQL connection lost; reconnecting");
        {
            let mut current = self.lock();
            if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &client)) {
                *current = None;
            }
        }
        let client = self.client().await?;
        client
            .query(sql, params)
            .await
            .map_err(|e| self.failed(op, &e))
    }

    fn failed(&self, op: &'static str, e: &tokio_postgres::Error) -> StoreError {
        StoreError::Backend(format!(
            "PostgreSQL {op} on {}: {}",
            self.table,
            describe(e)
        ))
    }

    fn decode(&self, row: &Row) -> Result<Record, StoreError> {
        let bytes: Vec<u8> = row.try_get(0).map_err(|e| self.failed("read", &e))?;
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            key: format!("a row of {}", self.table),
            reason: e.to_string(),
        })
    }
}

fn millis(v: Option<u64>) -> Option<i64> {
    v.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

#[async_trait]
impl ItemBackend for PostgresItems {
    async fn write(&self, record: Record) -> Result<(), StoreError> {
        let ns = encode_prefix(&record.namespace);
        let bytes = serde_json::to_vec(&record).map_err(|e| StoreError::Backend(e.to_string()))?;
        let expires = millis(record.expires_at);
        let sql = format!(
            "INSERT INTO {} (ns, key, record, expires_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (ns, key) DO UPDATE SET record = EXCLUDED.record, \
             expires_at = EXCLUDED.expires_at",
            self.table
        );
        self.query("put", &sql, &[&ns, &record.key, &bytes, &expires])
            .await
            .map(|_| ())
    }

    async fn insert_new(&self, record: Record, now: u64) -> Result<Option<Record>, StoreError> {
        let ns = encode_prefix(&record.namespace);
        let bytes = serde_json::to_vec(&record).map_err(|e| StoreError::Backend(e.to_string()))?;
        let expires = millis(record.expires_at);
        let now = millis(Some(now));
        // One statement: the row is inserted, or replaced only when the one there has expired;
        // a conflicting live row is left alone (and read back below).
        let t = &self.table;
        let sql = format!(
            "INSERT INTO {t} AS t (ns, key, record, expires_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (ns, key) DO UPDATE SET record = EXCLUDED.record, \
             expires_at = EXCLUDED.expires_at \
             WHERE t.expires_at IS NOT NULL AND t.expires_at <= $5 RETURNING 1"
        );
        // The row seen may be deleted before it is read back: then try again.
        for _ in 0..8 {
            let written = self
                .query(
                    "put_if_absent",
                    &sql,
                    &[&ns, &record.key, &bytes, &expires, &now],
                )
                .await?;
            if !written.is_empty() {
                return Ok(None);
            }
            if let Some(existing) = self.read(&record.namespace, &record.key).await? {
                return Ok(Some(existing));
            }
        }
        Err(StoreError::Backend(format!(
            "put_if_absent of {}/{}: the item kept changing under the insert",
            record.namespace.join("/"),
            record.key
        )))
    }

    async fn read(&self, namespace: &[String], key: &str) -> Result<Option<Record>, StoreError> {
        let sql = format!(
            "SELECT record FROM {} WHERE ns = $1 AND key = $2",
            self.table
        );
        let rows = self
            .query("get", &sql, &[&encode_prefix(namespace), &key])
            .await?;
        rows.first().map(|r| self.decode(r)).transpose()
    }

    async fn remove(&self, namespace: &[String], key: &str) -> Result<bool, StoreError> {
        let sql = format!(
            "DELETE FROM {} WHERE ns = $1 AND key = $2 RETURNING 1",
            self.table
        );
        let rows = self
            .query("delete", &sql, &[&encode_prefix(namespace), &key])
            .await?;
        Ok(!rows.is_empty())
    }

    async fn scan(&self, prefix: &[String]) -> Result<Vec<Record>, StoreError> {
        let sql = format!(
            "SELECT record FROM {} WHERE starts_with(ns, $1) ORDER BY ns, key",
            self.table
        );
        let rows = self.query("scan", &sql, &[&encode_prefix(prefix)]).await?;
        rows.iter().map(|r| self.decode(r)).collect()
    }

    async fn remove_expired(&self, now: u64) -> Result<usize, StoreError> {
        let sql = format!(
            "DELETE FROM {} WHERE expires_at <= $1 RETURNING 1",
            self.table
        );
        let rows = self.query("sweep", &sql, &[&millis(Some(now))]).await?;
        Ok(rows.len())
    }
}
