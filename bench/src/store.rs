//! The checkpointer of one workload instance: none, in-memory, sled in a fresh folder, or
//! PostgreSQL in a fresh schema.

use crate::config::StoreKind;
use crate::BenchError;
use agentgraph_postgres::{PostgresCheckpointer, PostgresOptions};
use agentgraph_runtime::checkpoint::KvStore;
use agentgraph_runtime::{Checkpointer, CompiledGraph, MemoryCheckpointer, SledCheckpointer};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A store opened for one workload instance (the measured one, or the warm-up's throwaway).
pub enum Store {
    /// No checkpointer.
    None,
    /// The in-memory checkpointer.
    Memory(Arc<MemoryCheckpointer>),
    /// The sled checkpointer and the temporary folder holding it (removed on drop).
    Sled {
        /// The checkpointer.
        cp: Arc<SledCheckpointer>,
        /// The folder of the sled database.
        dir: tempfile::TempDir,
    },
    /// The Postgres checkpointer in its own schema (dropped on close).
    Postgres {
        /// The checkpointer.
        cp: Arc<PostgresCheckpointer>,
        /// The server.
        url: String,
        /// The schema created for this instance.
        schema: String,
    },
}

/// What is left of a store after it is closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// sled: total size of the files in its folder after flush and drop (`st_size`).
    pub disk_bytes: Option<u64>,
    /// sled: disk space those files actually occupy (`st_blocks` × 512; sled's files are
    /// preallocated in 512 KiB segments and may be sparse).
    pub allocated_bytes: Option<u64>,
    /// Bytes of keys and values the store holds (memory and sled): the logical payload.
    pub logical_bytes: Option<u64>,
    /// sled: flushes issued during the timed region.
    pub flushes: Option<u64>,
    /// sled: the measured fsync floor (see [`fsync_floor`]).
    pub fsync_floor: Option<Duration>,
    /// sled: how long moving what the write-ahead log still held into sled took after the
    /// timed region (the background merge's backlog).
    pub drain: Option<Duration>,
}

impl Store {
    /// Opens a fresh store of `kind`; sled goes into a new folder under `parent` (default: the
    /// system temp folder). `tag` names the folder (`bench` or `warmup`).
    /// `postgres_url` is needed for `postgres` only.
    pub async fn open(
        kind: StoreKind,
        parent: Option<&Path>,
        tag: &str,
        postgres_url: Option<&str>,
    ) -> Result<Self, BenchError> {
        match kind {
            StoreKind::Postgres => {
                let url = postgres_url.ok_or_else(|| {
                    BenchError::Usage("--checkpointer postgres needs --postgres-url".into())
                })?;
                let schema = format!("agbench_{}", uuid::Uuid::new_v4().simple());
                let options = PostgresOptions::default().schema(schema.clone());
                let cp = PostgresCheckpointer::connect_with(url, options)
                    .await
                    .map_err(|e| BenchError::Run(format!("opening the Postgres store: {e}")))?;
                Ok(Store::Postgres {
                    cp: Arc::new(cp),
                    url: url.to_string(),
                    schema,
                })
            }
            StoreKind::None => Ok(Store::None),
            StoreKind::Memory => Ok(Store::Memory(Arc::new(MemoryCheckpointer::new()))),
            StoreKind::Sled | StoreKind::Sqlite => {
                let suffix = format!("-{tag}");
                let mut b = tempfile::Builder::new();
                b.prefix("agbench-").suffix(&suffix);
                let dir = match parent {
                    Some(p) => b.tempdir_in(p),
                    None => b.tempdir(),
                }
                .map_err(|e| {
                    BenchError::Run(format!(
                        "cannot create a temporary folder for the sled store under {}: {e}",
                        parent.map(Path::display).map_or_else(
                            || std::env::temp_dir().display().to_string(),
                            |d| d.to_string()
                        )
                    ))
                })?;
                let cp = SledCheckpointer::open(dir.path().join("db"))
                    .map_err(|e| BenchError::Run(format!("opening the sled store: {e}")))?;
                Ok(Store::Sled {
                    cp: Arc::new(cp),
                    dir,
                })
            }
        }
    }

    /// The checkpointer to attach, if any.
    pub fn checkpointer(&self) -> Option<Arc<dyn Checkpointer>> {
        match self {
            Store::None => None,
            Store::Memory(cp) => Some(cp.clone()),
            Store::Sled { cp, .. } => Some(cp.clone()),
            Store::Postgres { cp, .. } => Some(cp.clone()),
        }
    }

    /// `graph` with this store attached (unchanged for `none`).
    pub fn attach(&self, graph: CompiledGraph) -> CompiledGraph {
        match self.checkpointer() {
            Some(cp) => graph.with_checkpointer(cp),
            None => graph,
        }
    }

    /// sled: flushes issued since the store was opened.
    pub fn flushes(&self) -> Option<u64> {
        match self {
            Store::Sled { cp, .. } => Some(cp.store().flushes()),
            Store::Postgres { cp, .. } => Some(cp.store().commits()),
            _ => None,
        }
    }

    /// The folder of the sled database.
    pub fn sled_path(&self) -> Option<PathBuf> {
        match self {
            Store::Sled { dir, .. } => Some(dir.path().join("db")),
            _ => None,
        }
    }

    /// Flushes, closes and measures the store, then removes its folder. Every graph holding
    /// the checkpointer must have been dropped before.
    pub async fn close(self) -> Result<StoreStats, BenchError> {
        match self {
            Store::None => Ok(StoreStats::default()),
            Store::Memory(cp) => Ok(StoreStats {
                logical_bytes: Some(cp.store().bytes() as u64),
                ..StoreStats::default()
            }),
            Store::Postgres { cp, url, schema } => {
                drop(cp);
                let bytes = drop_schema(&url, &schema).await?;
                Ok(StoreStats {
                    disk_bytes: Some(bytes),
                    ..StoreStats::default()
                })
            }
            Store::Sled { cp, dir } => {
                let started = std::time::Instant::now();
                cp.store()
                    .drain()
                    .map_err(|e| BenchError::Run(format!("draining the sled store: {e}")))?;
                let drain = started.elapsed();
                let logical = logical_bytes(cp.store())?;
                cp.flush()
                    .await
                    .map_err(|e| BenchError::Run(format!("flushing the sled store: {e}")))?;
                let cp = Arc::try_unwrap(cp).map_err(|cp| {
                    BenchError::Run(format!(
                        "the sled store is still used ({} references) and cannot be closed",
                        Arc::strong_count(&cp)
                    ))
                })?;
                drop(cp);
                let (bytes, allocated) = dir_size(&dir.path().join("db")).map_err(|e| {
                    BenchError::Run(format!("measuring {}: {e}", dir.path().display()))
                })?;
                Ok(StoreStats {
                    disk_bytes: Some(bytes),
                    allocated_bytes: Some(allocated),
                    logical_bytes: Some(logical),
                    drain: Some(drain),
                    ..StoreStats::default()
                })
            }
        }
    }
}

/// Total size (`st_size`) and allocated space (`st_blocks` × 512) of the files under `path`,
/// recursively.
pub fn dir_size(path: &Path) -> std::io::Result<(u64, u64)> {
    let (mut size, mut allocated) = (0, 0);
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            let (s, a) = dir_size(&entry.path())?;
            size += s;
            allocated += a;
        } else {
            size += meta.len();
            allocated += meta.blocks() * 512;
        }
    }
    Ok((size, allocated))
}

/// Bytes of every key and value in a store (one full scan).
fn logical_bytes(store: &impl KvStore) -> Result<u64, BenchError> {
    let mut total = 0u64;
    store
        .scan(&[], &[0xff, 0xff], false, &mut |k, v| {
            total += (k.len() + v.len()) as u64;
            true
        })
        .map_err(|e| BenchError::Run(format!("scanning the store: {e}")))?;
    Ok(total)
}

/// Samples of [`fsync_floor`].
const FLOOR_SAMPLES: usize = 200;

/// The cheapest durable write the disk under `dir` allows: the median of 200 overwrites of a
/// 4 KiB block (rotating over a preallocated 1 MiB file) each followed by `fdatasync`. Every
/// durable checkpoint costs at least this; the file is removed afterwards.
pub fn fsync_floor(dir: &Path) -> Result<Duration, BenchError> {
    use std::io::{Seek, SeekFrom, Write};
    let err = |e: std::io::Error| {
        BenchError::Run(format!(
            "measuring the fsync floor in {}: {e}",
            dir.display()
        ))
    };
    let mut file = tempfile::tempfile_in(dir).map_err(err)?;
    let block = [0x5au8; 4096];
    for _ in 0..256 {
        file.write_all(&block).map_err(err)?;
    }
    file.sync_all().map_err(err)?;
    let mut samples = Vec::with_capacity(FLOOR_SAMPLES);
    for i in 0..FLOOR_SAMPLES {
        file.seek(SeekFrom::Start((i % 256) as u64 * 4096))
            .map_err(err)?;
        let t0 = Instant::now();
        file.write_all(&block).map_err(err)?;
        file.sync_data().map_err(err)?;
        samples.push(t0.elapsed());
    }
    samples.sort();
    Ok(samples[FLOOR_SAMPLES / 2])
}

/// Measures (`pg_total_relation_size` of its tables) and drops a bench schema.
async fn drop_schema(url: &str, schema: &str) -> Result<u64, BenchError> {
    let err = |e: tokio_postgres::Error| BenchError::Run(format!("dropping schema {schema}: {e}"));
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(err)?;
    let task = tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
             JOIN pg_namespace s ON s.oid = c.relnamespace \
             WHERE s.nspname = $1 AND c.relkind IN ('r', 'm')",
            &[&schema],
        )
        .await
        .map_err(err)?;
    let bytes: i64 = row.get(0);
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .map_err(err)?;
    drop(client);
    let _ = task.await;
    Ok(bytes.max(0) as u64)
}
