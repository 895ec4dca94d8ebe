//! Building conversation memories from the `memory` entry of an `llm` node.
//!
//! ```text
//! memory: { store: "buffer", window: 20 }                       # in this process only
//! memory: { store: "sled", path: ".agentgraph-memory", window: 20 }
//! memory: { store: "redis", url: env("REDIS_URL", "redis://127.0.0.1/"), prefix: "agent:",
//!           ttl: 86400, window: 20 }
//! ```
//!
//! `window` (optional) keeps the last N messages; `ttl` is in seconds. The session is the run
//! setting `session_id` (CLI: `--session`), else the thread id.

use agentgraph_agents::memory::{
    BufferMemory, ChatMemory, MemoryError, RedisMemory, SledMemory, WindowMemory,
};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
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

const FORMAT: &str = "write {store: \"buffer\"|\"sled\"|\"redis\", window?: N, path?: \"dir\" \
                      (sled), url?: \"redis://…\", prefix?: \"…\", ttl?: seconds (redis)}";

/// Builds the memory an entry value describes.
pub fn build_memory(value: Value) -> Result<Arc<dyn ChatMemory>, String> {
    let spec: MemorySpec =
        serde_json::from_value(value).map_err(|e| format!("`memory`: {e}; {FORMAT}"))?;
    let base: Arc<dyn ChatMemory> = match spec.store.as_str() {
        "buffer" => Arc::new(BufferMemory::new()),
        "sled" => {
            let path = spec.path.as_deref().unwrap_or(".agentgraph-memory");
            Arc::new(
                SledMemory::open(path)
                    .map_err(|e| format!("`memory`: cannot open sled memory at {path}: {e}"))?,
            )
        }
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
