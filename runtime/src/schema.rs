//! State schema: the channels of a graph, their types, reducers and defaults.

use crate::ids::fnv1a64;
use crate::reducer::{Reducer, Replace, Storage};
use crate::value_type::ValueType;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// One state key: its type, reducer, default and visibility.
#[derive(Clone)]
pub struct ChannelSpec {
    /// The key in the state object.
    pub name: String,
    /// The type every write is checked against.
    pub ty: ValueType,
    /// How writes fold into the value.
    pub reducer: Arc<dyn Reducer>,
    /// The value before anything writes the channel (`None`: absent from the state).
    pub default: Option<Value>,
    /// Private channels are not part of the default input/output schema.
    pub private: bool,
    /// Ephemeral channels are cleared after the step following their write.
    pub ephemeral: bool,
}

impl ChannelSpec {
    /// A `replace` channel of type `ty` with no default.
    pub fn new(name: impl Into<String>, ty: ValueType) -> Self {
        ChannelSpec {
            name: name.into(),
            ty,
            reducer: Arc::new(Replace),
            default: None,
            private: false,
            ephemeral: false,
        }
    }

    /// Sets the reducer.
    pub fn reducer(mut self, reducer: Arc<dyn Reducer>) -> Self {
        self.reducer = reducer;
        self
    }

    /// Sets the default value.
    pub fn default_value(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }

    /// Hides the channel from the default input and output schemas.
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// Clears the channel after the step that follows each write.
    pub fn ephemeral(mut self) -> Self {
        self.ephemeral = true;
        self
    }

    pub(crate) fn storage(&self) -> Storage {
        if self.ephemeral {
            Storage::Value
        } else {
            self.reducer.storage()
        }
    }
}

/// The channels of a graph, indexed by name, with the input and output key sets.
pub struct Schema {
    pub(crate) channels: Vec<ChannelSpec>,
    pub(crate) index: HashMap<String, usize>,
    pub(crate) input: Vec<usize>,
    pub(crate) output: Vec<usize>,
    pub(crate) version: String,
}

impl Schema {
    /// A schema without channels.
    pub(crate) fn empty() -> Self {
        Schema {
            channels: Vec::new(),
            index: HashMap::new(),
            input: Vec::new(),
            output: Vec::new(),
            version: String::new(),
        }
    }

    pub(crate) fn new(
        channels: Vec<ChannelSpec>,
        input: Option<&[String]>,
        output: Option<&[String]>,
    ) -> Result<Self, String> {
        let mut index = HashMap::new();
        for (i, c) in channels.iter().enumerate() {
            if index.insert(c.name.clone(), i).is_some() {
                return Err(format!("channel `{}` is declared twice", c.name));
            }
        }
        let resolve = |keys: Option<&[String]>, what: &str| -> Result<Vec<usize>, String> {
            match keys {
                None => Ok((0..channels.len())
                    .filter(|&i| !channels[i].private)
                    .collect()),
                Some(keys) => keys
                    .iter()
                    .map(|k| {
                        index
                            .get(k)
                            .copied()
                            .ok_or_else(|| format!("{what} schema names unknown channel `{k}`"))
                    })
                    .collect(),
            }
        };
        let input = resolve(input, "input")?;
        let output = resolve(output, "output")?;
        let mut desc: Vec<String> = channels
            .iter()
            .map(|c| format!("{}:{}:{}", c.name, c.ty, c.reducer.name()))
            .collect();
        desc.sort();
        let version = format!("{:016x}", fnv1a64(desc.join(";").as_bytes()));
        Ok(Schema {
            channels,
            index,
            input,
            output,
            version,
        })
    }

    /// The channels in declaration order.
    pub fn channels(&self) -> &[ChannelSpec] {
        &self.channels
    }

    /// A channel by name.
    pub fn channel(&self, name: &str) -> Option<&ChannelSpec> {
        self.index.get(name).map(|&i| &self.channels[i])
    }

    /// The index of a channel by name.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// A hash of every channel's name, type and reducer, recorded in each checkpoint.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Names of the channels a run accepts as input.
    pub fn input_keys(&self) -> Vec<&str> {
        self.input
            .iter()
            .map(|&i| self.channels[i].name.as_str())
            .collect()
    }

    /// Names of the channels a run returns.
    pub fn output_keys(&self) -> Vec<&str> {
        self.output
            .iter()
            .map(|&i| self.channels[i].name.as_str())
            .collect()
    }

    /// Renders the output keys of `values` as an object.
    pub(crate) fn output_object(&self, values: &[Option<Arc<Value>>]) -> Value {
        let mut out = Map::new();
        for &i in &self.output {
            if let Some(v) = &values[i] {
                out.insert(self.channels[i].name.clone(), (**v).clone());
            }
        }
        Value::Object(out)
    }
}
