//! `knowledge_base_search`: semantic search over an embedded [`VectorStore`], queries embedded
//! by an [`Embedder`] (see [`super::embeddings`] and [`super::vector_store`]). One tool, two
//! ways to give it documents: a store filled by the application ([`KnowledgeBaseSearch::new`]),
//! or documents named in the tool's settings, loaded on first use
//! ([`KnowledgeBaseSearch::from_settings`], the form graph files use; see
//! `knowledge_base_files`).

use super::embeddings::{EmbedError, Embedder};
use super::knowledge_base_files::SettingsStores;
use super::vector_store::VectorStore;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// The `knowledge_base_search` tool: embeds `query` and returns the `top_k` most similar
/// documents of its [`VectorStore`] as `{"query", "hits": [{"id", "score", "text",
/// "metadata"}]}` (best first).
///
/// Errors: `INVALID_ARGUMENTS` (empty query, `top_k` out of range), `EMBEDDING_AUTH_FAILED`,
/// `EMBEDDING_CONFIG`, `EMBEDDING_FAILED`, `STORE_MISMATCH` (the query vector's length differs
/// from the stored ones'); from settings also `KNOWLEDGE_BASE_NOT_CONFIGURED` and
/// `KNOWLEDGE_BASE_UNAVAILABLE`.
#[derive(Clone)]
pub struct KnowledgeBaseSearch {
    documents: Documents,
    default_top_k: usize,
    max_top_k: usize,
    min_score: Option<f32>,
}

/// Where the searched documents come from.
#[derive(Clone)]
enum Documents {
    /// A store the application filled, and the embedder it was filled with.
    Store {
        store: Arc<VectorStore>,
        embedder: Arc<dyn Embedder>,
    },
    /// The documents the tool's settings name, loaded once per distinct settings value.
    Settings(Arc<SettingsStores>),
}

/// A store to search: documents, their embedder and the settings' default `top_k`.
pub(super) struct Loaded {
    pub(super) store: Arc<VectorStore>,
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) top_k: Option<usize>,
}

impl std::fmt::Debug for KnowledgeBaseSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeBaseSearch")
            .field("documents", &self.store().map(|s| s.len()))
            .field("default_top_k", &self.default_top_k)
            .field("max_top_k", &self.max_top_k)
            .field("min_score", &self.min_score)
            .finish_non_exhaustive()
    }
}

impl KnowledgeBaseSearch {
    /// Searches `store`, embedding queries with `embedder` (the one the store was filled with);
    /// 5 hits by default, at most 50, no minimum score.
    pub fn new(store: Arc<VectorStore>, embedder: Arc<dyn Embedder>) -> Self {
        Self::with_documents(Documents::Store { store, embedder })
    }

    /// Searches the documents its settings name (`{documents: "file.json", embedder?, model?,
    /// top_k?}`, see `knowledge_base_files`), loaded and embedded on first use.
    pub fn from_settings() -> Self {
        Self::with_documents(Documents::Settings(Arc::default()))
    }

    fn with_documents(documents: Documents) -> Self {
        KnowledgeBaseSearch {
            documents,
            default_top_k: 5,
            max_top_k: 50,
            min_score: None,
        }
    }

    /// Hits returned when the call gives no `top_k`.
    pub fn with_default_top_k(mut self, k: usize) -> Self {
        self.default_top_k = k.max(1);
        self
    }

    /// Largest `top_k` a call may ask for.
    pub fn with_max_top_k(mut self, k: usize) -> Self {
        self.max_top_k = k.max(1);
        self
    }

    /// Drops hits scoring below `score`.
    pub fn with_min_score(mut self, score: f32) -> Self {
        self.min_score = Some(score);
        self
    }

    /// The store searched, when the application gave one.
    pub fn store(&self) -> Option<&Arc<VectorStore>> {
        match &self.documents {
            Documents::Store { store, .. } => Some(store),
            Documents::Settings(_) => None,
        }
    }

    async fn loaded(&self, ctx: &ToolContext) -> Result<Loaded, ToolError> {
        match &self.documents {
            Documents::Store { store, embedder } => Ok(Loaded {
                store: store.clone(),
                embedder: embedder.clone(),
                top_k: None,
            }),
            Documents::Settings(stores) => stores.load(ctx.settings()).await,
        }
    }
}

#[async_trait]
impl Tool for KnowledgeBaseSearch {
    fn name(&self) -> &str {
        "knowledge_base_search"
    }

    fn description(&self) -> &str {
        "Search the knowledge base for passages relevant to a question (semantic search). \
         Returns {query, hits: [{id, score, text, metadata}]}, best first; the score is the \
         cosine similarity (higher is closer). Use the hits' text to answer and cite their ids."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to look for, as a natural-language question or phrase."
                },
                "top_k": {
                    "type": "integer",
                    "description": format!(
                        "How many hits to return (default {}, at most {}).",
                        self.default_top_k, self.max_top_k
                    )
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if query.is_empty() {
            return Err(ToolError::new(
                "INVALID_ARGUMENTS",
                "`query` must be a non-empty string describing what to look for",
            ));
        }
        let loaded = self.loaded(ctx).await?;
        let top_k = match args.get("top_k").filter(|v| !v.is_null()) {
            None => loaded.top_k.map_or(self.default_top_k, |k| k.max(1)),
            Some(v) => match v.as_f64() {
                Some(k) if k >= 1.0 && k.fract() == 0.0 && k <= self.max_top_k as f64 => k as usize,
                _ => {
                    return Err(ToolError::new(
                        "INVALID_ARGUMENTS",
                        format!(
                            "`top_k` must be a whole number from 1 to {}, got {v}",
                            self.max_top_k
                        ),
                    ))
                }
            },
        };
        let vectors = loaded.embedder.embed(&[query.to_string()]).await?;
        let qv = vectors.into_iter().next().ok_or_else(|| {
            ToolError::from(EmbedError::InvalidResponse(
                "no embedding for the query".into(),
            ))
        })?;
        let hits = loaded
            .store
            .search(&qv, top_k, self.min_score)
            .map_err(|e| ToolError::new("STORE_MISMATCH", e.to_string()))?;
        let hits: Vec<Value> = hits
            .into_iter()
            .map(|h| {
                json!({
                    "id": h.document.id,
                    "score": (f64::from(h.score) * 10_000.0).round() / 10_000.0,
                    "text": h.document.text,
                    "metadata": h.document.metadata,
                })
            })
            .collect();
        let mut out = json!({"query": query, "hits": hits});
        if loaded.store.is_empty() {
            out["note"] = json!("the knowledge base is empty");
        }
        Ok(ToolOutput {
            content: out,
            writes: Vec::new(),
        })
    }
}
