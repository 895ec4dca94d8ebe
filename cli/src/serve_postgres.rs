//! `agentgraph serve --postgres URL`: checkpoints, the long-term store and the node cache in
//! PostgreSQL, thread locks shared by every server on the database, and run leases (`--lease`, `--lease-renew`) so that a run whose
//! server dies is continued by another one (docs/deploy.md).

use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
use agentgraph_runtime::cache::StoreCache;
use agentgraph_server::{LeaseSettings, ServerConfig, Storage};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The PostgreSQL options of `serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct PostgresOpts {
    /// Keep checkpoints in PostgreSQL (`postgres://user:pass@host/db`) instead of the sled
    /// folder, so several servers share threads and continue each other's runs when one dies;
    /// events stay under `--db`.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// The PostgreSQL schema of the tables (created if missing; default: the connection's
    /// `search_path`), so several deployments can share one database.
    #[arg(long, value_name = "NAME", requires = "postgres")]
    pub postgres_schema: Option<String>,
    /// How long a run stays its server's without a renewal: another server continues it this
    /// long after its server died (`30s`, `2m`, `500ms`).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub lease: Duration,
    /// How often a server renews its runs' leases and looks for runs to pick up; below half of
    /// `--lease`.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub lease_renew: Duration,
}

/// `500ms`, `2s`, `1m` or a number of seconds.
fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration such as 30s, 2m or 500ms"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("`{s}`: the unit is ms, s or m")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{s}`: {e}"))
}

/// A name for this server in the run table: the host, the process and a random part.
fn server_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_string());
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}/{}/{}", std::process::id(), &id[..8])
}

/// `config` with PostgreSQL storage, thread locks and run leases, or why not.
pub async fn configure(
    opts: &PostgresOpts,
    config: ServerConfig,
    db: &Path,
) -> Result<ServerConfig, String> {
    let Some(url) = &opts.postgres else {
        return Ok(config);
    };
    if opts.lease_renew.is_zero() || opts.lease_renew * 2 > opts.lease {
        return Err(format!(
            "--lease-renew ({:?}) must be above zero and at most half of --lease ({:?})",
            opts.lease_renew, opts.lease
        ));
    }
    let mut options = PostgresOptions::default();
    if let Some(schema) = &opts.postgres_schema {
        options = options.schema(schema.clone());
    }
    let cp = PostgresCheckpointer::connect_with(url, options.clone())
        .await
        .map_err(|e| e.to_string())?;
    // One active run per thread across every server on this database.
    let locks = cp.thread_locks().await.map_err(|e| e.to_string())?;
    let leases = cp
        .run_leases(&server_name())
        .await
        .map_err(|e| e.to_string())?;
    // The long-term store and the node cache in tables of the same database (and schema).
    let store = agentgraph_postgres::connect_store(url, options.clone())
        .await
        .map_err(|e| e.to_string())?;
    let cache = agentgraph_postgres::connect_store(
        url,
        options.clone().table_prefix("agentgraph_node_cache_"),
    )
    .await
    .map_err(|e| e.to_string())?;
    let settings = LeaseSettings {
        lease: opts.lease,
        renew_every: opts.lease_renew,
        ..LeaseSettings::default()
    };
    Ok(config
        .storage(Storage::Checkpointer {
            checkpointer: Arc::new(cp),
            events_dir: Some(db.join("server-events")),
        })
        .thread_locks(Arc::new(locks))
        .store(Arc::new(store))
        .node_cache(Arc::new(StoreCache::new(Arc::new(cache))))
        .run_leases(Arc::new(leases), settings))
}

#[cfg(test)]
mod tests {
    use super::duration;
    use std::time::Duration;

    #[test]
    fn durations_read_with_their_unit() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(duration("3h").is_err());
        assert!(duration("fast").is_err());
    }
}
