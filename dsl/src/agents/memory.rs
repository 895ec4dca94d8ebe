//! Building conversation memories from the `memory` entry of an `llm` node.
//!
//! ```text
//! memory: { store: "buffer", window: 20 }                       # in this process only
//! memory: { store: "sled", window: 20 }                         # under the app's data folder
//! memory: { store: "sled", path: "memory", window: 20 }         # relative to the graph file
//! memory: { store: "redis", url: env("REDIS_URL", "redis://127.0.0.1/"), prefix: "agent:",
//!           ttl: 86400, window: 20 }
//! ```
//!
//! A sled memory without `path` lives in the application's data folder ([`set_memory_dir`]:
//! the CLI and the server give `<db>/memory`), else in `.agentgraph-memory` beside the graph
//! file; a relative `path` is read from the graph file's folder. Never the current folder: two
//! processes started in one folder would fight over its lock. The database opens at the first
//! message, not when the graph is built (`check` touches no disk).
//!
//! `window` (optional) keeps the last N messages; `ttl` is in seconds. The session is the run
//! setting `session_id` (CLI: `--session`), else the thread id.
//!
//! ```text
//! memory: { store: "store", namespace: ["users", user_id], window: 20 }
//! ```
//!
//! `store: "store"` keeps the conversation in the graph's long-term store (which `agentgraph
//! run` and `serve` give every graph), one item per message under `namespace`: a list of
//! expressions evaluated on each task's state (and send payload), so every thread computing
//! the same namespace — the same user — shares the conversation. There is no session then.

use crate::ast::{Expr, ExprKind};
use crate::eval::{eval, Scope};
use crate::extensions::Extensions;
use agentgraph_agents::memory::{
    BufferMemory, ChatMemory, MemoryError, RedisMemory, SledMemory, StoreMemorySpec, WindowMemory,
};
use agentgraph_runtime::NodeError;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::OnceCell;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySpec {
    store: String,
    #[serde(default)]
    window: Option<usize>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    ttl: Option<u64>,
}

/// A Redis memory that connects on first use (graphs are built outside any async context).
struct LazyRedis {
    url: String,
    prefix: Option<String>,
    ttl: Option<Duration>,
    conn: OnceCell<RedisMemory>,
}

impl LazyRedis {
    async fn get(&self) -> Result<&RedisMemory, MemoryError> {
        self.conn
            .get_or_try_init(|| async {
                let mut m = RedisMemory::connect(&self.url).await?;
                if let Some(p) = &self.prefix {
                    m = m.with_prefix(p.clone());
                }
                Ok(m.with_ttl(self.ttl))
            })
            .await
    }
}

#[async_trait]
impl ChatMemory for LazyRedis {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        self.get().await?.load(session).await
    }
    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        self.get().await?.append(session, messages).await
    }
    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        self.get().await?.clear(session).await
    }
}

/// The folder of sled memories that name no `path` (see [`set_memory_dir`]).
static MEMORY_DIR: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Sets where `memory: { store: "sled" }` without a `path` keeps its database, for every graph
/// built afterwards in this process: the application's data folder (the `agentgraph` CLI and
/// server pass `<db>/memory`). `None`: `.agentgraph-memory` in each graph file's folder.
pub fn set_memory_dir(dir: Option<PathBuf>) {
    *MEMORY_DIR.write().unwrap_or_else(|e| e.into_inner()) = dir;
}

/// The folder a sled memory of a graph in `base_dir` uses.
fn sled_memory_path(path: Option<&str>, base_dir: &Path) -> PathBuf {
    match path {
        Some(p) => base_dir.join(p),
        None => MEMORY_DIR
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| base_dir.join(".agentgraph-memory")),
    }
}

/// A sled memory that opens its database at first use.
struct LazySled {
    path: PathBuf,
    db: OnceCell<SledMemory>,
}

impl LazySled {
    async fn get(&self) -> Result<&SledMemory, MemoryError> {
        self.db
            .get_or_try_init(|| async {
                SledMemory::open(&self.path).map_err(|e| {
                    let text = e.to_string();
                    if text.contains("lock") || text.contains("WouldBlock") {
                        MemoryError::Backend(format!(
                            "the sled memory at {} is open in another process (an `agentgraph \
                             serve` or run on the same data folder?); stop it, or give this \
                             graph's memory its own `path`: {text}",
                            self.path.display()
                        ))
                    } else {
                        e
                    }
                })
            })
            .await
    }
}

#[async_trait]
impl ChatMemory for LazySled {
    async fn load(&self, session: &str) -> Result<Vec<Value>, MemoryError> {
        self.get().await?.load(session).await
    }
    async fn append(&self, session: &str, messages: &[Value]) -> Result<(), MemoryError> {
        self.get().await?.append(session, messages).await
    }
    async fn clear(&self, session: &str) -> Result<(), MemoryError> {
        self.get().await?.clear(session).await
    }
}

const FORMAT: &str = "write {store: \"buffer\"|\"sled\"|\"redis\", window?: N, path?: \"dir\" \
                      (sled), url?: \"redis://…\", prefix?: \"…\", ttl?: seconds (redis)}";

/// Builds the memory an entry value describes, for a graph whose file is in `base_dir`.
pub fn build_memory(value: Value, base_dir: &Path) -> Result<Arc<dyn ChatMemory>, String> {
    let spec: MemorySpec =
        serde_json::from_value(value).map_err(|e| format!("`memory`: {e}; {FORMAT}"))?;
    let base: Arc<dyn ChatMemory> = match spec.store.as_str() {
        "buffer" => Arc::new(BufferMemory::new()),
        "sled" => Arc::new(LazySled {
            path: sled_memory_path(spec.path.as_deref(), base_dir),
            db: OnceCell::new(),
        }),
        "redis" => Arc::new(LazyRedis {
            url: spec
                .url
                .unwrap_or_else(|| "redis://127.0.0.1:6379/".to_string()),
            prefix: spec.prefix,
            ttl: spec.ttl.map(Duration::from_secs),
            conn: OnceCell::new(),
        }),
        other => return Err(format!("`memory`: unknown store `{other}`; {FORMAT}")),
    };
    Ok(match spec.window {
        Some(n) => Arc::new(WindowMemory::new(base, n)),
        None => base,
    })
}

/// The store named by `memory: { store: "store", … }`: the graph's long-term store.
pub const GRAPH_STORE: &str = "store";

/// The `store` an entry value names, when it is a literal.
pub fn store_name(memory: &Expr) -> Option<&str> {
    match &memory.kind {
        ExprKind::Object { object } => object.get("store").and_then(|e| match &e.kind {
            ExprKind::Str { lit } => Some(lit.value.as_str()),
            _ => None,
        }),
        _ => None,
    }
}

/// A memory on the graph's store (`memory: { store: "store", namespace: [...], window? }`), or
/// `None` for the other stores (built by [`build_memory`]).
pub fn build_store_memory(
    memory: &Expr,
    extensions: &Arc<Extensions>,
) -> Result<Option<StoreMemorySpec>, String> {
    let ExprKind::Object { object } = &memory.kind else {
        return Ok(None);
    };
    if store_name(memory) != Some(GRAPH_STORE) {
        return Ok(None);
    }
    let mut window = None;
    let mut items = None;
    for (key, value) in &object.entries {
        match key.name.as_str() {
            "store" => {}
            "namespace" => match &value.kind {
                ExprKind::List { items: list } if !list.is_empty() => items = Some(list.clone()),
                _ => return Err(NAMESPACE_FORMAT.to_string()),
            },
            "window" => {
                let n = crate::agents::const_value(value)?;
                window = Some(
                    n.as_u64()
                        .filter(|n| *n > 0)
                        .ok_or("`memory`: `window` is a positive integer")?
                        as usize,
                );
            }
            other => {
                return Err(format!(
                    "`memory`: `{other}` is not an option of a memory on the graph's store \
                     (options: store, namespace, window)"
                ))
            }
        }
    }
    let items = items.ok_or(NAMESPACE_FORMAT)?;
    let extensions = extensions.clone();
    Ok(Some(StoreMemorySpec {
        namespace: Arc::new(move |ctx| {
            let scope = Scope::state(ctx.state())
                .with_extensions(&extensions)
                .with_payload(ctx.payload());
            items
                .iter()
                .map(|e| match eval(e, &scope) {
                    Ok(Value::String(s)) => Ok(s),
                    Ok(Value::Null) => Err(NodeError::fatal(
                        "memory namespace: an element is null (is the channel set?)",
                    )
                    .with_code("MEMORY")),
                    Ok(other) => Ok(other.to_string()),
                    Err(err) => {
                        Err(NodeError::fatal(format!("memory namespace: {err}"))
                            .with_code("MEMORY"))
                    }
                })
                .collect()
        }),
        window,
    }))
}

const NAMESPACE_FORMAT: &str = "`memory` on the graph's store needs `namespace`: a non-empty \
                                list of expressions, e.g. `namespace: [\"users\", user_id]`";
