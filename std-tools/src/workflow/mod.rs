//! The n8n workflow JSON model.
//!
//! n8n's shape: `{name, nodes: [{id, name, type, typeVersion, position: [x, y], parameters,
//! credentials?}], connections: {sourceNodeName: {connectionType: [[{node, type, index}]]}}}`.
//! Connections key on node **names**. Every field this model does not name (top-level `settings`,
//! `pinData`, `meta`, `id`, `active`, `tags`, …; node-level `webhookId`, `notes`, `disabled`, …) is
//! kept verbatim in an `extra` map, so that loading and saving a published workflow gives back
//! the same JSON value. Numbers (`typeVersion`, positions) are kept as the JSON numbers they were
//! (an integer stays an integer, `1.0` stays a float).

pub mod name;
pub mod outline;
pub mod trim;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The connection type of ordinary data flow.
pub const MAIN: &str = "main";

/// One connection target: `{node, type, index}` (target node name, its input type and index).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Connection {
    /// The target node's name.
    pub node: String,
    /// The target input's connection type (`main`, `ai_tool`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The target input's index.
    pub index: u32,
}

impl Connection {
    /// A target `{node, type, index}`.
    pub fn new(node: impl Into<String>, kind: impl Into<String>, index: u32) -> Self {
        Connection {
            node: node.into(),
            kind: kind.into(),
            index,
        }
    }
}

/// The outputs of one connection type of one source node: output index → targets. A slot may be
/// `null` in exported files (kept as `None`) or an empty list.
pub type Outputs = Vec<Option<Vec<Connection>>>;

/// The connections of one source node: connection type → outputs.
pub type NodeConnections = BTreeMap<String, Outputs>;

/// All connections of a workflow: source node name → connection type → outputs.
pub type Connections = BTreeMap<String, NodeConnections>;

/// One resolved connection between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    /// The source node's name.
    pub source: String,
    /// The connection type under which the source lists it.
    pub kind: String,
    /// The source output index.
    pub source_output: usize,
    /// The target (node name, input type, input index).
    pub target: Connection,
}

/// A node of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowNode {
    /// The node id (a UUID in current exports; absent in some old exports, and kept absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The node name, unique in the workflow; connections refer to it.
    pub name: String,
    /// The node type, e.g. `n8n-nodes-base.httpRequest`.
    #[serde(rename = "type")]
    pub node_type: String,
    /// The node type version, kept exactly as the JSON number (`1`, `4.2`).
    #[serde(rename = "typeVersion")]
    pub type_version: Number,
    /// The canvas position `[x, y]`, each kept exactly as the JSON number.
    pub position: [Number; 2],
    /// The node parameters.
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// Credentials by credential type, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Map<String, Value>>,
    /// Every other field, kept verbatim (`webhookId`, `notes`, `disabled`, `onError`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A JSON number for `v`: an integer when `v` has no fractional part, else a float (0 for a
/// non-finite `v`).
pub fn number(v: f64) -> Number {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Number::from(v as i64)
    } else {
        Number::from_f64(v).unwrap_or_else(|| Number::from(0))
    }
}

impl WorkflowNode {
    /// A node with the given id, name, type, version and position, and no parameters.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        node_type: impl Into<String>,
        type_version: f64,
        position: [f64; 2],
    ) -> Self {
        WorkflowNode {
            id: Some(id.into()),
            name: name.into(),
            node_type: node_type.into(),
            type_version: number(type_version),
            position: [number(position[0]), number(position[1])],
            parameters: Map::new(),
            credentials: None,
            extra: Map::new(),
        }
    }

    /// Sets the parameters (builder style).
    pub fn with_parameters(mut self, parameters: Map<String, Value>) -> Self {
        self.parameters = parameters;
        self
    }

    /// The type version as a float.
    pub fn version(&self) -> f64 {
        self.type_version.as_f64().unwrap_or(0.0)
    }

    /// The position as floats `(x, y)`.
    pub fn xy(&self) -> (f64, f64) {
        (
            self.position[0].as_f64().unwrap_or(0.0),
            self.position[1].as_f64().unwrap_or(0.0),
        )
    }

    /// Sets the position.
    pub fn set_xy(&mut self, x: f64, y: f64) {
        self.position = [number(x), number(y)];
    }

    /// Whether this is a sticky note (`n8n-nodes-base.stickyNote`).
    pub fn is_sticky_note(&self) -> bool {
        self.node_type == "n8n-nodes-base.stickyNote"
    }

    /// Whether the node is disabled (`"disabled": true`).
    pub fn is_disabled(&self) -> bool {
        self.extra.get("disabled").and_then(Value::as_bool) == Some(true)
    }
}

/// An n8n workflow.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Workflow {
    /// The workflow name (absent in many exported templates, and kept absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The nodes, in file order. Shared (`Arc`) so that copying a workflow to apply operations
    /// copies only the nodes that change; mutate through [`Workflow::node_mut`] or
    /// [`Arc::make_mut`].
    pub nodes: Vec<Arc<WorkflowNode>>,
    /// The connections, keyed by source node name.
    pub connections: Connections,
    /// Every other top-level field, kept verbatim (`settings`, `pinData`, `meta`, `id`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a workflow could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    /// The text is not valid JSON (or has extra data after the top-level value).
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What serde_json reported, without the position.
        message: String,
    },
    /// The JSON is valid but is not an n8n workflow (missing `nodes`, a node without `name`, …).
    #[error("not an n8n workflow (line {line}, column {column}): {message}")]
    Shape {
        /// 1-based line of the problem (0 when loaded from a value).
        line: usize,
        /// 1-based column of the problem (0 when loaded from a value).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A value (not text) that is not an n8n workflow; there is no position to report.
    #[error("not an n8n workflow: {message}")]
    Invalid {
        /// What is wrong.
        message: String,
    },
}

/// serde_json's message without its " at line L column C" suffix.
fn strip_position(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = match full.strip_suffix(&suffix) {
        Some(s) => s.to_string(),
        None => full,
    };
    if message == "trailing characters" {
        "trailing characters: extra data after the end of the top-level JSON value".to_string()
    } else {
        message
    }
}

impl WorkflowError {
    fn from_text(e: serde_json::Error) -> Self {
        let message = strip_position(&e);
        let (line, column) = (e.line(), e.column());
        match e.classify() {
            serde_json::error::Category::Data => WorkflowError::Shape {
                line,
                column,
                message,
            },
            _ => WorkflowError::Syntax {
                line,
                column,
                message,
            },
        }
    }
}

impl Workflow {
    /// An empty workflow with a name.
    pub fn named(name: impl Into<String>) -> Self {
        Workflow {
            name: Some(name.into()),
            ..Workflow::default()
        }
    }

    /// Parses workflow JSON text. Errors name the line and column.
    pub fn from_json_str(text: &str) -> Result<Self, WorkflowError> {
        serde_json::from_str(text).map_err(WorkflowError::from_text)
    }

    /// Reads a workflow from a JSON value.
    pub fn from_value(value: Value) -> Result<Self, WorkflowError> {
        if !value.is_object() {
            return Err(WorkflowError::Invalid {
                message: format!(
                    "expected a JSON object with `nodes` and `connections`, got {}",
                    kind_of(&value)
                ),
            });
        }
        serde_json::from_value(value).map_err(|e| WorkflowError::Invalid {
            message: strip_position(&e),
        })
    }

    /// Reads a workflow from a borrowed JSON value (clones it).
    pub fn from_value_ref(value: &Value) -> Result<Self, WorkflowError> {
        Workflow::from_value(value.clone())
    }

    /// The workflow as a JSON value (unknown fields included).
    pub fn to_value(&self) -> Value {
        // Cannot fail: every map key is a string and no type has a fallible serializer.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The workflow as pretty-printed JSON text.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The workflow as compact JSON text.
    pub fn to_json_compact(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The node named `name`.
    pub fn node_by_name(&self, name: &str) -> Option<&WorkflowNode> {
        self.nodes.iter().find(|n| n.name == name).map(|n| &**n)
    }

    /// The node named `name`, mutable.
    pub fn node_by_name_mut(&mut self, name: &str) -> Option<&mut WorkflowNode> {
        self.nodes
            .iter_mut()
            .find(|n| n.name == name)
            .map(Arc::make_mut)
    }

    /// The node whose id is `id`.
    pub fn node_by_id(&self, id: &str) -> Option<&WorkflowNode> {
        self.nodes
            .iter()
            .find(|n| n.id.as_deref() == Some(id))
            .map(|n| &**n)
    }

    /// The node whose id is `id`, mutable.
    pub fn node_by_id_mut(&mut self, id: &str) -> Option<&mut WorkflowNode> {
        self.nodes
            .iter_mut()
            .find(|n| n.id.as_deref() == Some(id))
            .map(Arc::make_mut)
    }

    /// The position in `nodes` of the node `key` refers to: the node whose id is `key`, else the
    /// node whose name is `key` (for old exports without ids).
    pub fn position_of(&self, key: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.id.as_deref() == Some(key))
            .or_else(|| self.nodes.iter().position(|n| n.name == key))
    }

    /// The node `key` refers to, by id or else by name.
    pub fn node(&self, key: &str) -> Option<&WorkflowNode> {
        self.position_of(key).map(|i| &*self.nodes[i])
    }

    /// The node `key` refers to (by id, else by name), mutable (copied first if shared).
    pub fn node_mut(&mut self, key: &str) -> Option<&mut WorkflowNode> {
        let i = self.position_of(key)?;
        Some(Arc::make_mut(&mut self.nodes[i]))
    }

    /// Appends a node (no checks; use the `addNodes` operation for an upsert by id).
    pub fn add_node(&mut self, node: WorkflowNode) {
        self.nodes.push(Arc::new(node));
    }

    /// The node names in file order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.name.as_str())
    }

    /// Every connection, in source-name, type and output order.
    pub fn edges(&self) -> Vec<Edge> {
        let mut out = Vec::new();
        for (source, by_type) in &self.connections {
            for (kind, outputs) in by_type {
                for (i, slot) in outputs.iter().enumerate() {
                    for target in slot.iter().flatten() {
                        out.push(Edge {
                            source: source.clone(),
                            kind: kind.clone(),
                            source_output: i,
                            target: target.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    /// The connections leaving `name`, of type `kind` (all types when `None`).
    pub fn outgoing(&self, name: &str, kind: Option<&str>) -> Vec<Edge> {
        let mut out = Vec::new();
        let Some(by_type) = self.connections.get(name) else {
            return out;
        };
        for (k, outputs) in by_type {
            if kind.is_some_and(|want| want != k) {
                continue;
            }
            for (i, slot) in outputs.iter().enumerate() {
                for target in slot.iter().flatten() {
                    out.push(Edge {
                        source: name.to_string(),
                        kind: k.clone(),
                        source_output: i,
                        target: target.clone(),
                    });
                }
            }
        }
        out
    }

    /// The connections arriving at `name`, of type `kind` (all types when `None`).
    pub fn incoming(&self, name: &str, kind: Option<&str>) -> Vec<Edge> {
        self.edges()
            .into_iter()
            .filter(|e| e.target.node == name && kind.is_none_or(|k| e.kind == k))
            .collect()
    }

    /// The names of the nodes connected to `name` in either direction (any type).
    pub fn connected_nodes(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for e in self.edges() {
            if e.source == name {
                out.insert(e.target.node.clone());
            }
            if e.target.node == name {
                out.insert(e.source.clone());
            }
        }
        out
    }

    /// Whether `name` has any connection in or out.
    pub fn is_connected(&self, name: &str) -> bool {
        if !self.outgoing(name, None).is_empty() {
            return true;
        }
        self.connections.values().any(|by_type| {
            by_type
                .values()
                .flatten()
                .flatten()
                .flatten()
                .any(|c| c.node == name)
        })
    }

    /// Whether some connection (as source key or target) mentions `name`.
    pub fn references_name(&self, name: &str) -> bool {
        self.connections.contains_key(name)
            || self.connections.values().any(|by_type| {
                by_type
                    .values()
                    .flatten()
                    .flatten()
                    .flatten()
                    .any(|c| c.node == name)
            })
    }

    /// A node name not used yet, n8n style: `base` if free, else `base1`, `base2`, … (a base
    /// ending in digits continues from them: `Set2` → `Set3`).
    pub fn unique_name(&self, base: &str) -> String {
        let taken: BTreeSet<&str> = self.node_names().collect();
        if !taken.contains(base) {
            return base.to_string();
        }
        let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
        let (stem, mut i) = if stem.is_empty() || stem.len() == base.len() {
            (base, 1u64)
        } else {
            let n = base[stem.len()..].parse::<u64>().unwrap_or(0);
            (stem, n.saturating_add(1))
        };
        loop {
            let candidate = format!("{stem}{i}");
            if !taken.contains(candidate.as_str()) {
                return candidate;
            }
            i = i.saturating_add(1);
        }
    }

    /// Adds the connection `source[kind][output] → target` unless it is already there. Returns
    /// whether it was added. Missing output slots are filled with empty lists.
    pub fn add_connection(
        &mut self,
        source: &str,
        kind: &str,
        output: usize,
        target: Connection,
    ) -> bool {
        let outputs = self
            .connections
            .entry(source.to_string())
            .or_default()
            .entry(kind.to_string())
            .or_default();
        if outputs.len() <= output {
            outputs.resize_with(output + 1, || Some(Vec::new()));
        }
        let slot = outputs[output].get_or_insert_with(Vec::new);
        if slot.contains(&target) {
            return false;
        }
        slot.push(target);
        true
    }

    /// Removes the connection `source[kind][output] → target` if present (its output slot is kept,
    /// possibly empty). Returns whether it was there.
    pub fn remove_connection(
        &mut self,
        source: &str,
        kind: &str,
        output: usize,
        target: &Connection,
    ) -> bool {
        let Some(slot) = self
            .connections
            .get_mut(source)
            .and_then(|t| t.get_mut(kind))
            .and_then(|o| o.get_mut(output))
            .and_then(Option::as_mut)
        else {
            return false;
        };
        let before = slot.len();
        slot.retain(|c| c != target);
        slot.len() != before
    }
}

/// "an array", "a string", … for error messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl std::str::FromStr for Workflow {
    type Err = WorkflowError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Workflow::from_json_str(s)
    }
}
