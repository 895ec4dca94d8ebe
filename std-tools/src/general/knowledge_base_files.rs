//! The documents of `knowledge_base_search` named in the tool's settings, loaded and embedded
//! on first use ([`super::KnowledgeBaseSearch::from_settings`]): the form graph files use.
//!
//! ```text
//! node tools: tool_executor {
//!   tools: toolbox
//!   settings: { knowledge_base_search: { documents: "data/handbook.json", embedder: "hash" } }
//! }
//! ```
//!
//! Settings: `documents` (a JSON file holding `[{id, text, metadata?}]`, relative to
//! `base_dir`, which the DSL sets to the graph file's folder), `embedder` (`"hash"`, the
//! default: offline and deterministic; or `"openai"`: OpenAI-compatible embeddings from
//! `OPENAI_API_KEY`/`OPENAI_BASE_URL`), `model` (for `openai`), `top_k` (default hits).

use super::embeddings::{Embedder, HashEmbedder, OpenAiEmbedder};
use super::knowledge_base::Loaded;
use super::vector_store::{Document, VectorStore};
use agentgraph_agents::tools::ToolError;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex;

#[derive(Debug, Deserialize)]
struct Settings {
    documents: String,
    #[serde(default)]
    embedder: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    base_dir: Option<String>,
}

/// The stores of [`KnowledgeBaseSearch::from_settings`](super::KnowledgeBaseSearch::from_settings):
/// each distinct settings value is loaded once and kept.
#[derive(Default)]
pub(super) struct SettingsStores {
    loaded: Mutex<HashMap<String, Arc<Loaded>>>,
}

impl SettingsStores {
    /// The store the settings name, loading and embedding its documents on first use.
    pub(super) async fn load(&self, settings: &Value) -> Result<Loaded, ToolError> {
        let l = self.load_shared(settings).await?;
        Ok(Loaded {
            store: l.store.clone(),
            embedder: l.embedder.clone(),
            top_k: l.top_k,
        })
    }

    async fn load_shared(&self, settings: &Value) -> Result<Arc<Loaded>, ToolError> {
        let key = settings.to_string();
        let mut loaded = self.loaded.lock().await;
        if let Some(t) = loaded.get(&key) {
            return Ok(t.clone());
        }
        let s: Settings = serde_json::from_value(settings.clone()).map_err(|e| {
            ToolError::new(
                "KNOWLEDGE_BASE_NOT_CONFIGURED",
                format!(
                    "the knowledge base is not configured ({e}); the graph must give this \
                     tool the settings {{documents: \"file.json\", embedder?: \"hash\"|\"openai\"}}"
                ),
            )
        })?;
        let mut path = PathBuf::from(&s.documents);
        if path.is_relative() {
            if let Some(base) = &s.base_dir {
                path = PathBuf::from(base).join(path);
            }
        }
        let text = tokio::fs::read_to_string(&path).await.map_err(|e| {
            ToolError::new(
                "KNOWLEDGE_BASE_UNAVAILABLE",
                format!("cannot read the documents at {}: {e}", path.display()),
            )
        })?;
        let docs: Vec<Document> = serde_json::from_str(&text).map_err(|e| {
            ToolError::new(
                "KNOWLEDGE_BASE_UNAVAILABLE",
                format!(
                    "{} is not a JSON list of {{id, text, metadata?}}: {e}",
                    path.display()
                ),
            )
        })?;
        let embedder: Arc<dyn Embedder> = match s.embedder.as_deref().unwrap_or("hash") {
            "hash" => Arc::new(HashEmbedder::default()),
            "openai" => Arc::new(OpenAiEmbedder::from_env(s.model.as_deref())?),
            other => {
                return Err(ToolError::new(
                    "KNOWLEDGE_BASE_NOT_CONFIGURED",
                    format!("unknown embedder `{other}`; use \"hash\" or \"openai\""),
                ))
            }
        };
        let store = VectorStore::new();
        store
            .add_documents(embedder.as_ref(), docs)
            .await
            .map_err(|e| ToolError::new("KNOWLEDGE_BASE_UNAVAILABLE", e.to_string()))?;
        let l = Arc::new(Loaded {
            store: Arc::new(store),
            embedder,
            top_k: s.top_k,
        });
        loaded.insert(key, l.clone());
        Ok(l)
    }
}
