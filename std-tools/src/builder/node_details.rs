//! `get_node_details`: a node type's description, its (summarised) parameters and its
//! connections, in the reference's `<node_details>` shape.
//!
//! Arguments: `{"nodeName": "n8n-nodes-base.httpRequest", "withParameters"?: false,
//! "withConnections"?: true}`. Output:
//!
//! ```text
//! <node_details>
//!   <name>n8n-nodes-base.httpRequest</name>
//!   <display_name>HTTP Request</display_name>
//!   <description>…</description>
//!   <version>4.2</version>
//!   <subtitle>…</subtitle>
//!   <properties>[{"name": "method", "type": "options", …}]</properties>
//!   <connections>
//!     <input>main</input>
//!     <output>main</output>
//!   </connections>
//! </node_details>
//! ```

use super::search_nodes::format_version;
use super::state::{codes, did_you_mean, req_str};
use crate::catalogue::{Catalogue, NodeProperty, NodeTypeDescription, PortsSpec};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// Most characters of the `<properties>` block; longer lists are cut with a note.
pub const MAX_PROPERTIES_CHARS: usize = 20_000;
const MAX_DESCRIPTION_CHARS: usize = 200;
const MAX_EXPRESSION_CHARS: usize = 600;

/// The `get_node_details` tool.
#[derive(Debug, Clone)]
pub struct GetNodeDetails {
    catalogue: Arc<Catalogue>,
}

impl GetNodeDetails {
    /// The tool over `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        GetNodeDetails { catalogue }
    }

    /// Renders the details of the type named in `args`.
    pub fn run(&self, args: &Value) -> Result<String, ToolError> {
        let asked = req_str(args, "nodeName")?;
        // A type misspelled without ambiguity (no `@n8n/` scope, another case, the short
        // name alone) is read as the type it names.
        let name = self.catalogue.recover_type(asked).unwrap_or(asked);
        let with_parameters = args
            .get("withParameters")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let with_connections = args
            .get("withConnections")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let desc = self.catalogue.get(name, None).ok_or_else(|| {
            ToolError::new(
                codes::NODE_TYPE_NOT_FOUND,
                format!(
                    "node type `{name}` is not in the catalogue. {}",
                    did_you_mean(&self.catalogue, name)
                ),
            )
        })?;
        let version = self
            .catalogue
            .default_version(name)
            .unwrap_or_else(|| desc.version.max());
        let mut out = String::from("<node_details>\n");
        let _ = writeln!(out, "  <name>{}</name>", desc.name);
        let _ = writeln!(out, "  <display_name>{}</display_name>", desc.display_name);
        let _ = writeln!(
            out,
            "  <description>{}</description>",
            desc.description.trim()
        );
        let _ = writeln!(out, "  <version>{}</version>", format_version(version));
        if let Some(Value::String(s)) = desc.extra.get("subtitle") {
            let _ = writeln!(out, "  <subtitle>{s}</subtitle>");
        }
        if with_parameters {
            let _ = writeln!(
                out,
                "  <properties>\n{}\n  </properties>",
                summarise_properties(desc, version)
            );
        }
        if with_connections {
            out.push_str(&self.connections_block(desc, version));
        }
        out.push_str("</node_details>");
        Ok(out)
    }

    fn connections_block(&self, desc: &NodeTypeDescription, version: f64) -> String {
        let mut out = String::from("  <connections>\n");
        match self
            .catalogue
            .ports(&desc.name, Some(version), &Value::Object(Map::new()))
        {
            Some(Ok(p)) => {
                let p = super::search_nodes::with_known_labels(&desc.name, p);
                for port in &p.inputs {
                    let _ = writeln!(out, "    <input>{}</input>", port_text(port));
                }
                for port in &p.outputs {
                    let _ = writeln!(out, "    <output>{}</output>", port_text(port));
                }
            }
            Some(Err(e)) => {
                let _ = writeln!(out, "    <error>{e}</error>");
            }
            None => {}
        }
        for (side, spec) in [("inputs", &desc.inputs), ("outputs", &desc.outputs)] {
            if let PortsSpec::Expression(expr) = spec {
                let _ = writeln!(
                    out,
                    "    <note>The {side} above are for default parameters; they depend on the \
                     parameters (set them with add_nodes connectionParameters): {}</note>",
                    truncate(expr, MAX_EXPRESSION_CHARS)
                );
            }
        }
        out.push_str("  </connections>\n");
        out
    }
}

/// `main`, or `main "true"` when the port has a label.
fn port_text(port: &crate::catalogue::Port) -> String {
    match port.display_name.as_deref().map(str::trim) {
        Some(label) if !label.is_empty() => format!("{} \"{label}\"", port.kind),
        _ => port.kind.clone(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

fn summarise_property(p: &NodeProperty, with_description: bool) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(p.name));
    m.insert("displayName".into(), json!(p.display_name));
    m.insert("type".into(), json!(p.kind));
    if let Some(d) = &p.default {
        m.insert("default".into(), d.clone());
    }
    if p.is_required() {
        m.insert("required".into(), json!(true));
    }
    if with_description {
        if let Some(d) = p.description.as_deref().filter(|d| !d.is_empty()) {
            m.insert(
                "description".into(),
                json!(truncate(d, MAX_DESCRIPTION_CHARS)),
            );
        }
    }
    if let Some(options) = &p.options {
        let summary: Vec<Value> = options
            .iter()
            .map(|o| {
                if o.get("value").is_some() {
                    json!({"name": o.get("name"), "value": o.get("value")})
                } else {
                    // collection / fixedCollection entries: name and their own fields' names.
                    let fields: Vec<&Value> = o
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|vs| vs.iter().filter_map(|v| v.get("name")).collect())
                        .unwrap_or_default();
                    if fields.is_empty() {
                        json!({"name": o.get("name"), "type": o.get("type")})
                    } else {
                        json!({"name": o.get("name"), "values": fields})
                    }
                }
            })
            .collect();
        m.insert("options".into(), Value::Array(summary));
    }
    if let Some(d) = &p.display_options {
        m.insert("displayOptions".into(), d.clone());
    }
    Value::Object(m)
}

/// The properties of `desc` valid at `version`, summarised (name, type, default, required,
/// options, displayOptions; descriptions shortened), as JSON capped at
/// [`MAX_PROPERTIES_CHARS`].
pub fn summarise_properties(desc: &NodeTypeDescription, version: f64) -> String {
    let props: Vec<&NodeProperty> = desc
        .properties
        .iter()
        .filter(|p| !matches!(p.kind.as_str(), "notice" | "callout") && version_allows(p, version))
        .collect();
    for with_description in [true, false] {
        let list: Vec<Value> = props
            .iter()
            .map(|p| summarise_property(p, with_description))
            .collect();
        let text = serde_json::to_string_pretty(&list).unwrap_or_default();
        if text.len() <= MAX_PROPERTIES_CHARS {
            return text;
        }
    }
    // Still too long: keep as many whole properties as fit.
    let mut kept = Vec::new();
    let mut size = 0;
    for p in &props {
        let v = summarise_property(p, false);
        let len = v.to_string().len() + 2;
        if size + len > MAX_PROPERTIES_CHARS {
            break;
        }
        size += len;
        kept.push(v);
    }
    format!(
        "{}\n(output cut: {} of {} properties shown)",
        serde_json::to_string(&kept).unwrap_or_default(),
        kept.len(),
        props.len()
    )
}

/// Whether a property's `displayOptions.show/hide["@version"]` admits `version` (other
/// conditions are left to the model).
fn version_allows(p: &NodeProperty, version: f64) -> bool {
    let Some(opts) = &p.display_options else {
        return true;
    };
    let matches = |cond: &Value| -> bool {
        cond.as_array().is_some_and(|vals| {
            vals.iter().any(|v| match v {
                Value::Number(n) => n.as_f64().is_some_and(|n| (n - version).abs() < 1e-9),
                Value::Object(o) => {
                    if let Some(c) = o.get("_cnd").and_then(Value::as_object) {
                        c.iter().all(|(op, val)| {
                            let x = val.as_f64().unwrap_or(f64::NAN);
                            match op.as_str() {
                                "gte" => version >= x,
                                "gt" => version > x,
                                "lte" => version <= x,
                                "lt" => version < x,
                                "eq" => (version - x).abs() < 1e-9,
                                _ => true,
                            }
                        })
                    } else {
                        true
                    }
                }
                _ => false,
            })
        })
    };
    if let Some(show) = opts.pointer("/show/@version") {
        if !matches(show) {
            return false;
        }
    }
    if let Some(hide) = opts.pointer("/hide/@version") {
        if matches(hide) {
            return false;
        }
    }
    true
}

#[async_trait]
impl Tool for GetNodeDetails {
    fn name(&self) -> &str {
        "get_node_details"
    }

    fn description(&self) -> &str {
        "Get the details of a node type by its full name from search_nodes (e.g. \
         `n8n-nodes-base.httpRequest`): display name, description, default version, inputs and \
         outputs (withConnections, default true) and, with withParameters (default false), its \
         parameters summarised (name, type, default, options, when they are shown)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodeName": {"type": "string", "description": "Full node type, e.g. n8n-nodes-base.httpRequest."},
                "withParameters": {"type": "boolean", "description": "Include the parameters (default false)."},
                "withConnections": {"type": "boolean", "description": "Include inputs/outputs (default true)."}
            },
            "required": ["nodeName"]
        })
    }

    /// The catalogue alone answers: a repeated call is answered from the conversation.
    fn pure(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.run(&args)?))
    }
}
