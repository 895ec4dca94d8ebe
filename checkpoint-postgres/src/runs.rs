//! [`PostgresRunLeases`]: the runtime's [`RunLeases`] on a table next to the checkpoints,
//! `{prefix}runs`, one row per run:
//!
//! ```text
//! run_id text PK | thread_id | graph | spec (JSON text) | status | owner | lease_expires
//! | attempts | event_ceiling | error | created_at | updated_at
//! ```
//!
//! `status` is `running` or `queued` (both may be picked up once `lease_expires` has passed),
//! or `done`, `failed`, `cancelled`, `interrupted` (never picked up). Recording a run deletes
//! the ended runs of its thread, so the table holds each thread's newest run (which carries the
//! thread's event ceiling on) and the unfinished ones. Taking an expired run
//! is one `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)` statement, so two processes never
//! take the same run; every call that changes a run has `owner = me AND lease_expires > now()`
//! in its `WHERE` (fencing). Times are the database's clock, never the processes'.

use crate::error::{connection_lost, describe};
use crate::PostgresError;
use agentgraph_runtime::checkpoint::{
    CheckpointError, ClaimedRun, RunLeases, RunOutcome, RunRecord,
};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

/// Statuses that may still be picked up.
const OPEN: &str = "('queued', 'running')";

/// [`RunLeases`] on the `{prefix}runs` table (see the module docs).
pub struct PostgresRunLeases {
    config: tokio_postgres::Config,
    table: String,
    owner: String,
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
}

impl std::fmt::Debug for PostgresRunLeases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRunLeases")
            .field("table", &self.table)
            .field("owner", &self.owner)
            .finish()
    }
}

fn query_error(source: tokio_postgres::Error) -> CheckpointError {
    CheckpointError::Backend(format!("PostgreSQL run leases: {}", describe(&source)))
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl PostgresRunLeases {
    /// Run leases in `table` (qualified and quoted), owned by `owner`; creates the table.
    pub(crate) async fn open(
        config: tokio_postgres::Config,
        table: String,
        owner: String,
    ) -> Result<Self, PostgresError> {
        let leases = PostgresRunLeases {
            config,
            table,
            owner,
            client: tokio::sync::Mutex::new(None),
        };
        let client = leases.client(None).await?;
        let t = &leases.table;
        let ddl = format!(
            "BEGIN; SELECT pg_advisory_xact_lock(7268153102); \
             CREATE TABLE IF NOT EXISTS {t} (run_id text PRIMARY KEY, thread_id text NOT NULL, \
               graph text NOT NULL, spec text NOT NULL, status text NOT NULL, owner text, \
               lease_expires timestamptz NOT NULL, attempts integer NOT NULL DEFAULT 1, \
               event_ceiling bigint NOT NULL DEFAULT 0, error text, \
               created_at timestamptz NOT NULL DEFAULT now(), \
               updated_at timestamptz NOT NULL DEFAULT now()); \
             CREATE INDEX IF NOT EXISTS {idx} ON {t} (lease_expires) WHERE status IN {OPEN}; \
             CREATE INDEX IF NOT EXISTS {tidx} ON {t} (thread_id); COMMIT;",
            idx = index_name(t, "open"),
            tidx = index_name(t, "thread"),
        );
        client
            .batch_execute(&ddl)
            .await
            .map_err(|source| PostgresError::Setup {
                table: t.clone(),
                source,
            })?;
        Ok(leases)
    }

    /// The qualified, quoted table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Drops the table (for tests and tear-down).
    pub async fn drop_table(&self) -> Result<(), CheckpointError> {
        let sql = format!("DROP TABLE IF EXISTS {}", self.table);
        let client = self.client(None).await?;
        client.batch_execute(&sql).await.map_err(query_error)
    }

    /// The recorded runs of `thread` with their status, oldest first.
    pub async fn statuses(&self, thread: &str) -> Result<Vec<(String, String)>, CheckpointError> {
        let sql = format!(
            "SELECT run_id, status FROM {} WHERE thread_id = $1 ORDER BY created_at, run_id",
            self.table
        );
        let rows = self.query(&sql, &[&thread]).await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get(0).map_err(query_error)?,
                    r.try_get(1).map_err(query_error)?,
                ))
            })
            .collect()
    }

    /// The connection, reopened when closed or found `stale`.
    async fn client(&self, stale: Option<&Arc<Client>>) -> Result<Arc<Client>, PostgresError> {
        let mut current = self.client.lock().await;
        if let Some(c) = current.as_ref() {
            if !c.is_closed() && !stale.is_some_and(|s| Arc::ptr_eq(s, c)) {
                return Ok(c.clone());
            }
        }
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(PostgresError::Connect)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "PostgreSQL run-lease connection closed");
            }
        });
        client
            .batch_execute("SET synchronous_commit = on")
            .await
            .map_err(PostgresError::Connect)?;
        let client = Arc::new(client);
        *current = Some(client.clone());
        Ok(client)
    }

    /// Runs `sql` (every statement here may safely run twice), reconnecting once when the
    /// connection was lost.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, CheckpointError> {
        let client = self.client(None).await?;
        match client.query(sql, params).await {
            Ok(rows) => Ok(rows),
            Err(e) if connection_lost(&e) => {
                let client = self.client(Some(&client)).await?;
                client.query(sql, params).await.map_err(query_error)
            }
            Err(e) => Err(query_error(e)),
        }
    }

    /// Whether an owner-fenced update of `run_id` changed its row.
    async fn fenced(
        &self,
        set: &str,
        run_id: &str,
        extra: &[&(dyn ToSql + Sync)],
    ) -> Result<bool, CheckpointError> {
        let sql = format!(
            "UPDATE {} SET {set}, updated_at = now() WHERE run_id = $1 AND owner = $2 \
             AND status IN {OPEN} AND lease_expires > now() RETURNING 1",
            self.table
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&run_id, &self.owner];
        params.extend_from_slice(extra);
        Ok(!self.query(&sql, &params).await?.is_empty())
    }
}

/// An index name derived from the quoted table name `"schema"."prefix_runs"`.
fn index_name(table: &str, what: &str) -> String {
    let bare = table.rsplit('.').next().unwrap_or(table).trim_matches('"');
    format!("\"{bare}_{what}\"")
}

fn ceiling_of(row: &Row, idx: usize) -> Result<u64, CheckpointError> {
    let c: i64 = row.try_get(idx).map_err(query_error)?;
    Ok(u64::try_from(c).unwrap_or(0))
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[async_trait]
impl RunLeases for PostgresRunLeases {
    fn owner(&self) -> &str {
        &self.owner
    }

    async fn record(
        &self,
        run: &RunRecord,
        lease: Duration,
        floor: u64,
    ) -> Result<u64, CheckpointError> {
        let t = &self.table;
        let sql = format!(
            "WITH old AS (UPDATE {t} SET status = 'cancelled', owner = NULL, updated_at = now(), \
               error = 'superseded by run ' || $1::text \
               WHERE thread_id = $2 AND run_id <> $1 AND status IN {OPEN} \
               RETURNING event_ceiling), \
             gone AS (DELETE FROM {t} WHERE thread_id = $2 AND run_id <> $1 \
               AND status NOT IN {OPEN} RETURNING event_ceiling) \
             INSERT INTO {t} (run_id, thread_id, graph, spec, status, owner, lease_expires, \
               event_ceiling) \
             VALUES ($1, $2, $3, $4, 'running', $5, now() + $6::float8 * interval '1 second', \
               GREATEST($7::bigint, COALESCE((SELECT max(event_ceiling) FROM {t} WHERE thread_id = $2), 0), \
                 COALESCE((SELECT max(event_ceiling) FROM old), 0), \
                 COALESCE((SELECT max(event_ceiling) FROM gone), 0))) \
             RETURNING event_ceiling"
        );
        let spec = run.spec.to_string();
        let (secs, floor) = (seconds(lease), as_i64(floor));
        let rows = self
            .query(
                &sql,
                &[
                    &run.run_id,
                    &run.thread_id,
                    &run.graph,
                    &spec,
                    &self.owner,
                    &secs,
                    &floor,
                ],
            )
            .await?;
        match rows.first() {
            Some(row) => ceiling_of(row, 0),
            None => Err(CheckpointError::Backend(format!(
                "recording run {} returned nothing",
                run.run_id
            ))),
        }
    }

    async fn renew(
        &self,
        runs: &[String],
        lease: Duration,
    ) -> Result<Vec<String>, CheckpointError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE {} SET lease_expires = now() + $3::float8 * interval '1 second', updated_at = now() \
             WHERE run_id = ANY($1) AND owner = $2 AND status IN {OPEN} \
             AND lease_expires > now() RETURNING run_id",
            self.table
        );
        let secs = seconds(lease);
        let rows = self.query(&sql, &[&runs, &self.owner, &secs]).await?;
        rows.iter()
            .map(|r| r.try_get::<_, String>(0).map_err(query_error))
            .collect()
    }

    async fn holds(&self, run_id: &str) -> Result<bool, CheckpointError> {
        let sql = format!(
            "SELECT 1 FROM {} WHERE run_id = $1 AND owner = $2 AND status IN {OPEN} \
             AND lease_expires > now()",
            self.table
        );
        Ok(!self.query(&sql, &[&run_id, &self.owner]).await?.is_empty())
    }

    async fn reserve_events(&self, run_id: &str, ceiling: u64) -> Result<bool, CheckpointError> {
        let ceiling = as_i64(ceiling);
        self.fenced(
            "event_ceiling = GREATEST(event_ceiling, $3::bigint)",
            run_id,
            &[&ceiling],
        )
        .await
    }

    async fn finish(
        &self,
        run_id: &str,
        outcome: RunOutcome,
        error: Option<&str>,
    ) -> Result<bool, CheckpointError> {
        let status = outcome.as_str();
        self.fenced(
            "status = $3::text, error = $4::text",
            run_id,
            &[&status, &error],
        )
        .await
    }

    async fn hand_back(&self, run_id: &str) -> Result<bool, CheckpointError> {
        self.fenced(
            "status = 'queued', owner = NULL, lease_expires = now()",
            run_id,
            &[],
        )
        .await
    }

    async fn claim_expired(
        &self,
        lease: Duration,
        max_attempts: u32,
    ) -> Result<Option<ClaimedRun>, CheckpointError> {
        let t = &self.table;
        // A handed-back run (`queued`) did not crash its server: it is not counted.
        let give_up = "(r.status = 'running' AND r.attempts >= $3)";
        let sql = format!(
            "UPDATE {t} r SET owner = CASE WHEN {give_up} THEN NULL ELSE $1 END, \
               status = CASE WHEN {give_up} THEN 'failed' ELSE 'running' END, \
               error = CASE WHEN {give_up} \
                 THEN 'given up: its server died ' || r.attempts || ' times' ELSE r.error END, \
               attempts = CASE WHEN {give_up} OR r.status = 'queued' THEN r.attempts \
                 ELSE r.attempts + 1 END, \
               lease_expires = now() + $2::float8 * interval '1 second', updated_at = now() \
             FROM (SELECT run_id, owner FROM {t} WHERE status IN {OPEN} \
                   AND lease_expires < now() ORDER BY lease_expires LIMIT 1 \
                   FOR UPDATE SKIP LOCKED) e \
             WHERE r.run_id = e.run_id \
             RETURNING r.run_id, r.thread_id, r.graph, r.spec, r.attempts, e.owner, \
               r.event_ceiling, r.status"
        );
        let secs = seconds(lease);
        let max = i32::try_from(max_attempts).unwrap_or(i32::MAX);
        let rows = self.query(&sql, &[&self.owner, &secs, &max]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let spec: String = row.try_get(3).map_err(query_error)?;
        let run_id: String = row.try_get(0).map_err(query_error)?;
        let spec = serde_json::from_str(&spec).map_err(|e| CheckpointError::Corrupt {
            key: format!("run {run_id}"),
            reason: e.to_string(),
        })?;
        let attempts: i32 = row.try_get(4).map_err(query_error)?;
        let status: String = row.try_get(7).map_err(query_error)?;
        Ok(Some(ClaimedRun {
            record: RunRecord {
                run_id,
                thread_id: row.try_get(1).map_err(query_error)?,
                graph: row.try_get(2).map_err(query_error)?,
                spec,
            },
            attempts: u32::try_from(attempts).unwrap_or(0),
            previous_owner: row.try_get(5).map_err(query_error)?,
            event_ceiling: ceiling_of(row, 6)?,
            gave_up: status == "failed",
        }))
    }
}
