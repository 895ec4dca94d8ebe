//! [`VectorStore`]: documents (id, text, metadata) with their embeddings, in memory, ranked by
//! cosine similarity, optionally saved to and loaded from a JSON file.

use super::embeddings::{EmbedError, Embedder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::RwLock;

/// A stored document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Unique id (adding a document with an existing id replaces it).
    pub id: String,
    /// The text searched and returned.
    pub text: String,
    /// Anything else (source, title, …); `null` when none.
    #[serde(default)]
    pub metadata: Value,
}

impl Document {
    /// A document without metadata.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Document {
            id: id.into(),
            text: text.into(),
            metadata: Value::Null,
        }
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }
}

/// A search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Cosine similarity to the query, in [-1, 1].
    pub score: f32,
    /// The document.
    #[serde(flatten)]
    pub document: Document,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    #[serde(flatten)]
    document: Document,
    embedding: Vec<f32>,
}

#[derive(Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    entries: Vec<Entry>,
}

/// A store failure (wrong vector length, unreadable file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// A vector's length differs from the store's.
    #[error("vector has {got} dimensions but the store holds {expected}-dimensional vectors; use the embedder the store was built with")]
    Dimensions {
        /// The store's dimension.
        expected: usize,
        /// The vector's.
        got: usize,
    },
    /// Reading or writing the persistence file failed.
    #[error("vector store file: {0}")]
    Io(String),
    /// An embedding failed while adding documents.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// An in-memory vector store ranked by cosine similarity. Thread-safe; share it in an `Arc`.
#[derive(Debug, Default)]
pub struct VectorStore {
    entries: RwLock<Vec<Entry>>,
}

impl VectorStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Entry>> {
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Entry>> {
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The vector length of the stored documents (`None` when empty).
    pub fn dimensions(&self) -> Option<usize> {
        self.read().first().map(|e| e.embedding.len())
    }

    /// Adds (or replaces, by id) a document with its embedding.
    pub fn insert(&self, document: Document, embedding: Vec<f32>) -> Result<(), StoreError> {
        let mut entries = self.write();
        if let Some(first) = entries.iter().find(|e| e.document.id != document.id) {
            if first.embedding.len() != embedding.len() {
                return Err(StoreError::Dimensions {
                    expected: first.embedding.len(),
                    got: embedding.len(),
                });
            }
        }
        let entry = Entry {
            document,
            embedding,
        };
        match entries
            .iter_mut()
            .find(|e| e.document.id == entry.document.id)
        {
            Some(slot) => *slot = entry,
            None => entries.push(entry),
        }
        Ok(())
    }

    /// Embeds the texts of `documents` with `embedder` and adds them.
    pub async fn add_documents(
        &self,
        embedder: &dyn Embedder,
        documents: Vec<Document>,
    ) -> Result<(), StoreError> {
        let texts: Vec<String> = documents.iter().map(|d| d.text.clone()).collect();
        let vectors = embedder.embed(&texts).await?;
        if vectors.len() != documents.len() {
            return Err(EmbedError::InvalidResponse(format!(
                "{} embeddings for {} texts",
                vectors.len(),
                documents.len()
            ))
            .into());
        }
        for (d, v) in documents.into_iter().zip(vectors) {
            self.insert(d, v)?;
        }
        Ok(())
    }

    /// Removes a document; whether it was there.
    pub fn remove(&self, id: &str) -> bool {
        let mut entries = self.write();
        let before = entries.len();
        entries.retain(|e| e.document.id != id);
        entries.len() != before
    }

    /// The `k` documents most similar to `query` (best first; ties by id), with scores of at
    /// least `min_score` when given.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        min_score: Option<f32>,
    ) -> Result<Vec<Hit>, StoreError> {
        let entries = self.read();
        if let Some(first) = entries.first() {
            if first.embedding.len() != query.len() {
                return Err(StoreError::Dimensions {
                    expected: first.embedding.len(),
                    got: query.len(),
                });
            }
        }
        let mut scored: Vec<(f32, &Entry)> = entries
            .iter()
            .map(|e| (cosine(query, &e.embedding), e))
            .filter(|(s, _)| min_score.is_none_or(|m| *s >= m))
            .collect();
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.document.id.cmp(&b.1.document.id))
        });
        Ok(scored
            .into_iter()
            .take(k)
            .map(|(score, e)| Hit {
                score,
                document: e.document.clone(),
            })
            .collect())
    }

    /// Writes the store to `path` as JSON (through a temporary file, then a rename).
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<(), StoreError> {
        let path = path.as_ref();
        let file = StoreFile {
            version: 1,
            entries: self.read().clone(),
        };
        let text = serde_json::to_vec(&file).map_err(|e| StoreError::Io(e.to_string()))?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| StoreError::Io(format!("cannot write {}: {e}", path.display())))
    }

    /// Reads a store written by [`save_json`](Self::save_json).
    pub fn load_json(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let text = std::fs::read(path)
            .map_err(|e| StoreError::Io(format!("cannot read {}: {e}", path.display())))?;
        let file: StoreFile = serde_json::from_slice(&text).map_err(|e| {
            StoreError::Io(format!(
                "{} is not a vector store file: {e}",
                path.display()
            ))
        })?;
        if file.version != 1 {
            return Err(StoreError::Io(format!(
                "{} has version {}, expected 1",
                path.display(),
                file.version
            )));
        }
        let store = VectorStore::new();
        for e in file.entries {
            store.insert(e.document, e.embedding)?;
        }
        Ok(store)
    }
}

/// Cosine similarity (0 when either vector is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}
