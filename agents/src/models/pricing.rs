//! Token prices, to turn [`Usage`] into a cost.

use super::Usage;
use serde::{Deserialize, Serialize};

/// Prices in US dollars per million tokens. Providers change prices; agentgraph ships no
/// table, so give the prices of your model (e.g. in the graph's model block:
/// `pricing: {input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pricing {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
}

impl Pricing {
    /// The cost of `usage` in US dollars.
    ///
    /// ```
    /// use agentgraph_agents::models::{Pricing, Usage};
    /// let p = Pricing { input: 3.0, output: 15.0, ..Default::default() };
    /// let u = Usage { input_tokens: 1_000_000, output_tokens: 100_000, ..Default::default() };
    /// assert!((p.cost(&u) - 4.5).abs() < 1e-9);
    /// ```
    pub fn cost(&self, usage: &Usage) -> f64 {
        let m = 1_000_000.0;
        usage.input_tokens as f64 * self.input / m
            + usage.output_tokens as f64 * self.output / m
            + usage.cache_read_tokens as f64 * self.cache_read / m
            + usage.cache_creation_tokens as f64 * self.cache_write / m
    }
}
