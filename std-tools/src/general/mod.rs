//! General agent tools (seed 003), one file per tool:
//!
//! * [`Calculator`] (`calculator`): arithmetic with a safe recursive-descent parser.
//! * [`HttpRequest`] (`http_request`): HTTP calls with SSRF protection ([`HttpPolicy`]).
//! * [`KnowledgeBaseSearch`] (`knowledge_base_search`): semantic search over a
//!   [`VectorStore`] filled through an [`Embedder`] ([`OpenAiEmbedder`], [`HashEmbedder`]), or
//!   over documents named in its settings ([`KnowledgeBaseSearch::from_settings`]).

pub mod calculator;
pub mod embeddings;
pub mod http_request;
pub mod knowledge_base;
mod knowledge_base_files;
pub mod vector_store;

pub use calculator::{evaluate, CalcError, Calculator};
pub use embeddings::{EmbedError, Embedder, HashEmbedder, OpenAiEmbedder};
pub use http_request::{blocked_reason, HttpPolicy, HttpRequest};
pub use knowledge_base::KnowledgeBaseSearch;
pub use vector_store::{cosine, Document, Hit, StoreError, VectorStore};
