//! Search by meaning: an [`Embedder`] turns texts into vectors; a store given one
//! ([`IndexConfig`]) embeds the configured fields of each item it puts and ranks searches by
//! cosine similarity.

use super::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Turns texts into vectors of one dimension.
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// One vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, StoreError>;
}

/// What a store embeds: the embedder and the top-level fields of a value whose text is
/// embedded (`"$"`: the whole value as JSON). A value with none of the fields gets no vector
/// and is not found by searches with a query.
#[derive(Clone)]
pub struct IndexConfig {
    /// The embedder.
    pub embedder: Arc<dyn Embedder>,
    /// Top-level keys of the value, or `"$"`.
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// Embeds the whole value.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        IndexConfig {
            embedder,
            fields: vec!["$".into()],
        }
    }

    /// Embeds these fields instead (their texts joined by new lines).
    pub fn fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }

    /// The text embedded for `value`, `None` when it has none of the fields.
    pub fn text_of(&self, value: &Value) -> Option<String> {
        let parts: Vec<String> = self
            .fields
            .iter()
            .filter_map(|f| {
                let v = if f == "$" { Some(value) } else { value.get(f) };
                match v? {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                }
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// Cosine similarity of two vectors (0 when either is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
    }

    struct Never;
    #[async_trait]
    impl Embedder for Never {
        async fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, StoreError> {
            Err(StoreError::Embed("never".into()))
        }
    }

    #[test]
    fn text_of_picks_the_fields() {
        let cfg = IndexConfig::new(Arc::new(Never)).fields(["title", "n"]);
        assert_eq!(
            cfg.text_of(&json!({"title": "a", "n": 2, "x": "no"})),
            Some("a\n2".to_string())
        );
        assert_eq!(cfg.text_of(&json!({"x": "no"})), None);
    }
}
