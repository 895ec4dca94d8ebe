//! Read-only views of graph state handed to nodes and routes.

use crate::schema::Schema;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The state as of the start of a step. Cheap to clone: values are shared, never copied.
#[derive(Clone)]
pub struct StateView {
    pub(crate) schema: Arc<Schema>,
    pub(crate) values: Arc<Vec<Option<Arc<Value>>>>,
}

impl StateView {
    pub(crate) fn new(schema: Arc<Schema>, values: Vec<Option<Arc<Value>>>) -> Self {
        StateView {
            schema,
            values: Arc::new(values),
        }
    }

    /// A view over plain values, one `json` channel per key: for calling nodes and tools
    /// outside a graph (tests, direct tool calls).
    ///
    /// ```
    /// use agentgraph_runtime::StateView;
    /// let s = StateView::from_object(serde_json::json!({"n": 3}));
    /// assert_eq!(s.i64("n"), 3);
    /// assert_eq!(s.get("missing"), None);
    /// ```
    pub fn from_object(values: Value) -> Self {
        let map = match values {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut channels = Vec::with_capacity(map.len());
        let mut vals = Vec::with_capacity(map.len());
        for (k, v) in map {
            channels.push(crate::schema::ChannelSpec::new(k, crate::ValueType::Json));
            vals.push(Some(Arc::new(v)));
        }
        // Keys of a JSON object are unique, so building the schema cannot fail.
        let schema = Schema::new(channels, None, None).unwrap_or_else(|_| Schema::empty());
        StateView::new(Arc::new(schema), vals)
    }

    /// The value of a channel, or `None` when it is empty or unknown.
    pub fn get(&self, channel: &str) -> Option<&Value> {
        let i = self.schema.index_of(channel)?;
        self.values[i].as_deref()
    }

    /// An integer channel (0 when empty or not an integer).
    pub fn i64(&self, channel: &str) -> i64 {
        self.get(channel).and_then(Value::as_i64).unwrap_or(0)
    }

    /// A string channel (`""` when empty or not a string).
    pub fn str(&self, channel: &str) -> &str {
        self.get(channel).and_then(Value::as_str).unwrap_or("")
    }

    /// A list channel (empty when empty or not a list).
    pub fn list(&self, channel: &str) -> &[Value] {
        self.get(channel)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The whole state (every channel, private ones included) as a JSON object.
    pub fn to_object(&self) -> Value {
        let mut out = Map::new();
        for (c, v) in self.schema.channels().iter().zip(self.values.iter()) {
            if let Some(v) = v {
                out.insert(c.name.clone(), (**v).clone());
            }
        }
        Value::Object(out)
    }

    /// The schema the state follows.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
}
