//! Embedders for the knowledge base: the [`Embedder`] trait, [`OpenAiEmbedder`] (an
//! OpenAI-compatible `POST {base_url}/embeddings`) and [`HashEmbedder`] (a deterministic hashed
//! bag of words for tests and offline use).

use agentgraph_agents::tools::ToolError;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// The endpoint used when `OPENAI_BASE_URL` is unset.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The embedding model used when none is given.
pub const DEFAULT_EMBEDDING_MODEL: &str = "text-embedding-3-small";
/// Texts sent in one embeddings request.
const EMBED_BATCH: usize = 256;
/// Longest excerpt of an error body kept in an error message.
const MAX_ERROR_BODY: usize = 500;

/// A failed embedding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// Missing or wrong configuration (no key for the official endpoint, bad URL).
    #[error("embedding configuration: {0}")]
    Config(String),
    /// The endpoint refused the credentials (HTTP 401/403).
    #[error("embedding endpoint refused the credentials: {0}")]
    Auth(String),
    /// Another HTTP error status.
    #[error("embedding endpoint answered HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The provider's message or a body excerpt.
        message: String,
    },
    /// The request did not complete (connection, timeout).
    #[error("embedding request failed: {0}")]
    Request(String),
    /// The answer was not in the expected shape.
    #[error("unexpected embeddings response: {0}")]
    InvalidResponse(String),
}

impl From<EmbedError> for ToolError {
    fn from(e: EmbedError) -> Self {
        let code = match &e {
            EmbedError::Config(_) => "EMBEDDING_CONFIG",
            EmbedError::Auth(_) => "EMBEDDING_AUTH_FAILED",
            _ => "EMBEDDING_FAILED",
        };
        let hint = match &e {
            EmbedError::Config(_) | EmbedError::Auth(_) => {
                "; the operator must fix OPENAI_API_KEY / OPENAI_BASE_URL — retrying will not help"
            }
            _ => "; retry later",
        };
        ToolError::new(code, format!("{e}{hint}"))
    }
}

/// Turns texts into vectors (one per text, in order, all of the same length).
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// Embeds `texts`.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// A deterministic embedder: a hashed bag of lowercase words (FNV-1a into `dims` buckets with
/// a hashed sign), L2-normalised. Texts sharing words get similar vectors; no semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashEmbedder {
    dims: usize,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        HashEmbedder { dims: 256 }
    }
}

impl HashEmbedder {
    /// An embedder with `dims` dimensions (at least 1).
    pub fn new(dims: usize) -> Self {
        HashEmbedder { dims: dims.max(1) }
    }

    /// The vector of one text.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = fnv1a(word.as_bytes());
            let i = (h % self.dims as u64) as usize;
            let sign = if (h >> 63) & 1 == 0 { 1.0 } else { -1.0 };
            v[i] += sign;
        }
        normalize(&mut v);
        v
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

/// Embeddings from the OpenAI API or a compatible server (`POST {base_url}/embeddings`,
/// `{"model", "input": [..], "encoding_format": "float"}`).
#[derive(Clone)]
pub struct OpenAiEmbedder {
    model: String,
    api_key: Option<String>,
    base_url: String,
    dimensions: Option<u32>,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("has_api_key", &self.api_key.is_some())
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// An embedder for `model` with an optional key (`None` sends no `Authorization` header,
    /// as local servers expect) and the official endpoint.
    pub fn new(model: impl Into<String>, api_key: Option<String>) -> Result<Self, EmbedError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(OpenAiEmbedder {
            model: model.into(),
            api_key,
            base_url: DEFAULT_OPENAI_BASE_URL.to_string(),
            dimensions: None,
            client,
        })
    }

    /// Configured like the official SDKs: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`) and `OPENAI_API_KEY` (required only for the official
    /// endpoint); `model` defaults to `text-embedding-3-small`.
    pub fn from_env(model: Option<&str>) -> Result<Self, EmbedError> {
        Self::from_lookup(model, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(
        model: Option<&str>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, EmbedError> {
        let base = lookup("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.into());
        let key = lookup("OPENAI_API_KEY");
        if key.is_none() && base.contains("api.openai.com") {
            return Err(EmbedError::Config(
                "OPENAI_API_KEY is not set: export it, or point OPENAI_BASE_URL at a local \
                 OpenAI-compatible server"
                    .into(),
            ));
        }
        Ok(Self::new(model.unwrap_or(DEFAULT_EMBEDDING_MODEL), key)?.with_base_url(base))
    }

    /// Uses another endpoint, including its version path (e.g. `http://localhost:11434/v1`).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_string();
        self
    }

    /// Asks for vectors of `dims` dimensions (text-embedding-3 models).
    pub fn with_dimensions(mut self, dims: u32) -> Self {
        self.dimensions = Some(dims);
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(d) = self.dimensions {
            body["dimensions"] = json!(d);
        }
        let mut req = self
            .client
            .post(format!("{}/embeddings", self.base_url))
            .json(&body);
        if let Some(k) = &self.api_key {
            req = req.bearer_auth(k);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| EmbedError::Request(format!("{} ({})", e, self.base_url)))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| EmbedError::Request(e.to_string()))?;
        if !status.is_success() {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| text.chars().take(MAX_ERROR_BODY).collect());
            return Err(if matches!(status.as_u16(), 401 | 403) {
                EmbedError::Auth(format!("HTTP {}: {message}", status.as_u16()))
            } else {
                EmbedError::Http {
                    status: status.as_u16(),
                    message,
                }
            });
        }
        #[derive(Deserialize)]
        struct Item {
            index: usize,
            embedding: Vec<f32>,
        }
        #[derive(Deserialize)]
        struct Resp {
            data: Vec<Item>,
        }
        let parsed: Resp =
            serde_json::from_str(&text).map_err(|e| EmbedError::InvalidResponse(format!("{e}")))?;
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in parsed.data {
            let slot = out.get_mut(item.index).ok_or_else(|| {
                EmbedError::InvalidResponse(format!("embedding index {} out of range", item.index))
            })?;
            *slot = Some(item.embedding);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| EmbedError::InvalidResponse(format!("no embedding for input {i}")))
            })
            .collect()
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(EMBED_BATCH) {
            out.extend(self.embed_batch(batch).await?);
        }
        Ok(out)
    }
}
