//! Serde types over n8n's node-type description shape (`nodes.json`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `version` of a description: one number or a list of numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum VersionSpec {
    /// A single version (`"version": 1`).
    Single(f64),
    /// Several versions covered by one description (`"version": [2, 2.1]`).
    Many(Vec<f64>),
}

impl Default for VersionSpec {
    fn default() -> Self {
        VersionSpec::Single(1.0)
    }
}

impl VersionSpec {
    /// All versions this description covers.
    pub fn versions(&self) -> Vec<f64> {
        match self {
            VersionSpec::Single(v) => vec![*v],
            VersionSpec::Many(v) => v.clone(),
        }
    }

    /// Whether `version` is one of the covered versions.
    pub fn contains(&self, version: f64) -> bool {
        match self {
            VersionSpec::Single(v) => same_version(*v, version),
            VersionSpec::Many(vs) => vs.iter().any(|v| same_version(*v, version)),
        }
    }

    /// The highest covered version.
    pub fn max(&self) -> f64 {
        match self {
            VersionSpec::Single(v) => *v,
            VersionSpec::Many(vs) => vs.iter().copied().fold(f64::MIN, f64::max),
        }
    }
}

pub(crate) fn same_version(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// `inputs` / `outputs` of a description: a list (strings such as `"main"` or objects
/// `{type, displayName, required, maxConnections, …}`) or an `=` expression string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PortsSpec {
    /// `={{ … }}` JavaScript evaluated against `$parameter` and `$nodeVersion`.
    Expression(String),
    /// Static list; each entry a string or an object.
    List(Vec<Value>),
}

impl Default for PortsSpec {
    fn default() -> Self {
        PortsSpec::List(Vec::new())
    }
}

impl PortsSpec {
    /// Whether this is an expression.
    pub fn is_expression(&self) -> bool {
        matches!(self, PortsSpec::Expression(_))
    }
}

/// Codex metadata (categories, subcategories, aliases); other fields kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Codex {
    /// Top-level categories (`"AI"`, `"Core Nodes"`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
    /// Subcategories keyed by category (an object; a few real nodes give a list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subcategories: Option<Value>,
    /// Search aliases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<Vec<String>>,
    /// Everything else (resources, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One parameter (property) of a node type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeProperty {
    /// Parameter name.
    pub name: String,
    /// Label.
    #[serde(rename = "displayName", default)]
    pub display_name: String,
    /// Parameter type (`string`, `options`, `collection`, `callout`, …).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Default value (`Some(Value::Null)` for an explicit `"default": null`).
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<Value>,
    /// Whether the parameter is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Options (`options`/`multiOptions`: `{name, value}`; collections: nested properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Value>>,
    /// Visibility rules (`show`/`hide`).
    #[serde(
        rename = "displayOptions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub display_options: Option<Value>,
    /// Type options (`rows`, `multipleValues`, …).
    #[serde(
        rename = "typeOptions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub type_options: Option<Value>,
    /// Everything else, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Keeps an explicit `null` as `Some(Value::Null)` (a missing key stays `None`).
fn present_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl NodeProperty {
    /// Whether `required: true`.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(false)
    }
}

/// One node-type description as n8n ships it (`nodes.json` entry); unknown fields kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeTypeDescription {
    /// Type name. In a [`super::Catalogue`] always the full form
    /// (`n8n-nodes-base.httpRequest`).
    pub name: String,
    /// Label.
    #[serde(rename = "displayName", default)]
    pub display_name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Version(s) covered.
    #[serde(default)]
    pub version: VersionSpec,
    /// Default version of the node type.
    #[serde(
        rename = "defaultVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_version: Option<f64>,
    /// Groups (`trigger`, `transform`, `input`, `output`, …).
    #[serde(default)]
    pub group: Vec<String>,
    /// Input ports.
    #[serde(default)]
    pub inputs: PortsSpec,
    /// Output ports.
    #[serde(default)]
    pub outputs: PortsSpec,
    /// Parameters.
    #[serde(default)]
    pub properties: Vec<NodeProperty>,
    /// Codex metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex: Option<Codex>,
    /// `true`, or an object with `replacements` for the generated tool variant.
    #[serde(
        rename = "usableAsTool",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub usable_as_tool: Option<Value>,
    /// Hidden from the node panel (and from search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// Maximum number of nodes of this type in one workflow.
    #[serde(rename = "maxNodes", default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<u32>,
    /// Webhook descriptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<Value>,
    /// Credential descriptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Value>,
    /// Node defaults (`name`, `color`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Value>,
    /// Everything else, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The property list is abridged (the built-in compact catalogue): checks that need every
    /// property n8n defines, such as unknown parameter keys, skip this description.
    #[serde(skip)]
    pub abridged: bool,
}

impl NodeTypeDescription {
    /// Whether `group` contains `trigger`.
    pub fn is_trigger(&self) -> bool {
        self.group.iter().any(|g| g == "trigger")
    }

    /// Whether `hidden: true`.
    pub fn is_hidden(&self) -> bool {
        self.hidden.unwrap_or(false)
    }

    /// Whether `usableAsTool` is set (true or an object).
    pub fn is_usable_as_tool(&self) -> bool {
        match &self.usable_as_tool {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(_) => true,
        }
    }

    /// The properties named `name` (several may exist with different displayOptions).
    pub fn properties_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a NodeProperty> {
        self.properties.iter().filter(move |p| p.name == name)
    }

    /// The type name without its package prefix (`httpRequest`).
    pub fn short_name(&self) -> &str {
        short_name(&self.name)
    }
}

/// `n8n-nodes-base.httpRequest` → `httpRequest`; `@n8n/n8n-nodes-langchain.agent` → `agent`.
pub fn short_name(full: &str) -> &str {
    match full.rfind('.') {
        Some(i) => &full[i + 1..],
        None => full,
    }
}
