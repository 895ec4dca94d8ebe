//! `search_nodes`: name and sub-node search over the catalogue, several queries per call.
//!
//! Arguments: `{"queries": [{"queryType": "name"|"subNodeSearch", "query"?, "connectionType"?}]}`.
//! Output, one block per query (blocks separated by a blank line):
//!
//! ```text
//! Found 2 nodes matching "http":
//! <node>
//!   <node_name>n8n-nodes-base.httpRequest</node_name>
//!   <node_display_name>HTTP Request</node_display_name>
//!   <node_version>4.2</node_version>
//!   <node_description>Makes an HTTP request and returns the response data</node_description>
//!   <node_inputs>["main"]</node_inputs>
//!   <node_outputs>["main"]</node_outputs>
//! </node>
//! ```

use super::state::{codes, req_str};
use crate::catalogue::{Catalogue, Port, Ports, SearchHit};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// Results per query.
pub const SEARCH_LIMIT: usize = 5;
/// Most queries in one call.
pub const MAX_QUERIES: usize = 10;

/// The `search_nodes` tool.
#[derive(Debug, Clone)]
pub struct SearchNodes {
    catalogue: Arc<Catalogue>,
}

impl SearchNodes {
    /// The tool over `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> Self {
        SearchNodes { catalogue }
    }

    /// Runs the queries of `args` and renders the reference's text.
    pub fn run(&self, args: &Value) -> Result<String, ToolError> {
        let queries =
            match args.get("queries").and_then(Value::as_array) {
                Some(q) if !q.is_empty() => q,
                _ => return Err(ToolError::new(
                    codes::INVALID_INPUT,
                    "`queries` must be a non-empty list of {queryType, query?, connectionType?}",
                )),
            };
        if queries.len() > MAX_QUERIES {
            return Err(ToolError::new(
                codes::INVALID_INPUT,
                format!("at most {MAX_QUERIES} queries per call; split the search"),
            ));
        }
        let mut blocks = Vec::with_capacity(queries.len());
        for (i, q) in queries.iter().enumerate() {
            blocks.push(
                self.one(q)
                    .map_err(|e| ToolError::new(e.code, format!("query {i}: {}", e.message)))?,
            );
        }
        Ok(blocks.join("\n\n"))
    }

    fn one(&self, q: &Value) -> Result<String, ToolError> {
        let query_type = q.get("queryType").and_then(Value::as_str).unwrap_or("name");
        let text = q
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        match query_type {
            "name" => {
                let query = req_str(q, "query").map_err(|_| {
                    ToolError::new(
                        codes::INVALID_INPUT,
                        "a `name` query needs a non-empty `query` (e.g. \"http\", \"gmail\")",
                    )
                })?;
                let hits = self.catalogue.search(query, SEARCH_LIMIT);
                let head = if hits.is_empty() {
                    format!(
                        "No nodes found matching \"{query}\". Try a shorter or different \
                         keyword (service name, action, or a synonym)."
                    )
                } else {
                    format!("Found {} nodes matching \"{query}\":", hits.len())
                };
                Ok(self.render(head, &hits, None))
            }
            "subNodeSearch" => {
                let kind = req_str(q, "connectionType").map_err(|_| {
                    ToolError::new(
                        codes::INVALID_INPUT,
                        "a `subNodeSearch` query needs `connectionType` (e.g. \
                         \"ai_languageModel\", \"ai_tool\", \"ai_memory\", \"ai_embedding\")",
                    )
                })?;
                let hits = self.catalogue.search_sub_nodes(kind, text, SEARCH_LIMIT);
                let filter = if text.is_empty() {
                    String::new()
                } else {
                    format!(" matching \"{text}\"")
                };
                let head = if hits.is_empty() {
                    format!("No sub-nodes found with output type {kind}{filter}.")
                } else {
                    format!(
                        "Found {} sub-nodes with output type {kind}{filter}:",
                        hits.len()
                    )
                };
                Ok(self.render(head, &hits, Some(kind)))
            }
            other => Err(ToolError::new(
                codes::INVALID_INPUT,
                format!("unknown queryType \"{other}\"; use \"name\" or \"subNodeSearch\""),
            )),
        }
    }

    /// Renders the hits; for a sub-node search (`kind`), a node that outputs `kind` only for
    /// some parameter value is shown with the ports for that value and the
    /// `<connection_parameters>` to give add_nodes.
    fn render(&self, head: String, hits: &[SearchHit], kind: Option<&str>) -> String {
        let mut out = head;
        for h in hits {
            let params =
                kind.and_then(|k| self.catalogue.parameters_providing_output(&h.node_type, k));
            let (inputs, outputs) = match self.catalogue.ports(
                &h.node_type,
                Some(h.version),
                &Value::Object(params.clone().unwrap_or_default()),
            ) {
                Some(Ok(p)) => {
                    let p = with_known_labels(&h.node_type, p);
                    (ports_json(&p.inputs), ports_json(&p.outputs))
                }
                _ => ("[]".to_string(), "[]".to_string()),
            };
            let _ = write!(
                out,
                "\n<node>\n  <node_name>{}</node_name>\n  <node_display_name>{}</node_display_name>\n  \
                 <node_version>{}</node_version>\n  <node_description>{}</node_description>\n  \
                 <node_inputs>{inputs}</node_inputs>\n  <node_outputs>{outputs}</node_outputs>",
                h.node_type,
                h.display_name,
                format_version(h.version),
                h.description.trim()
            );
            if let (Some(p), Some(k)) = (&params, kind) {
                let _ = write!(
                    out,
                    "\n  <connection_parameters>{}</connection_parameters>\n  <note>Outputs {k} \
                     only with these parameters: give them as add_nodes connectionParameters.</note>",
                    Value::Object(p.clone())
                );
            }
            out.push_str("\n</node>");
        }
        out
    }
}

/// `4.2` → `4.2`, `2.0` → `2`.
pub fn format_version(v: f64) -> String {
    json!(v).to_string().trim_end_matches(".0").to_string()
}

/// `ports` with the labels n8n shows but the catalogue does not carry: an IF node's outputs
/// `true` and `false`.
pub fn with_known_labels(node_type: &str, mut ports: Ports) -> Ports {
    if crate::catalogue::short_name(node_type) == "if" && ports.outputs.len() == 2 {
        for (p, label) in ports.outputs.iter_mut().zip(["true", "false"]) {
            if p.display_name.is_none() {
                p.display_name = Some(label.to_string());
            }
        }
    }
    ports
}

/// A JSON list with one entry per port, in order: the kind alone when it occurs once on
/// that side (`["main", "ai_tool"]`), else numbered among the ports of that kind with its
/// label when the catalogue gives one (`["main[0] (true)", "main[1] (false)"]` for an IF).
pub fn ports_json(ports: &[Port]) -> String {
    let entries: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let same = ports.iter().filter(|q| q.kind == p.kind).count();
            if same < 2 {
                return p.kind.clone();
            }
            let n = ports[..i].iter().filter(|q| q.kind == p.kind).count();
            match p.display_name.as_deref().map(str::trim) {
                Some(label) if !label.is_empty() && label != n.to_string() => {
                    format!("{}[{n}] ({label})", p.kind)
                }
                _ => format!("{}[{n}]", p.kind),
            }
        })
        .collect();
    serde_json::to_string(&entries).unwrap_or_else(|_| "[]".into())
}

/// A JSON list of kinds: `["main","ai_tool"]`.
pub fn kinds_json(kinds: &[&str]) -> String {
    serde_json::to_string(kinds).unwrap_or_else(|_| "[]".into())
}

#[async_trait]
impl Tool for SearchNodes {
    fn name(&self) -> &str {
        "search_nodes"
    }

    fn description(&self) -> &str {
        "Search the available n8n node types. Several queries per call: `name` queries match \
         type names, display names, aliases and descriptions (e.g. \"http\", \"gmail\", \
         \"schedule\"); `subNodeSearch` queries find AI sub-nodes that output a connection type \
         (ai_languageModel, ai_tool, ai_memory, ai_embedding, ai_document, ai_textSplitter, \
         ai_vectorStore, ai_outputParser …), filtered by `query` (`\"\"` for all). Returns up to 5 \
         nodes per query with their full type name, version, description, inputs and outputs."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                // `maxItems` and a required `query` also bound what a server's schema grammar
                // lets a small model write: it was seen sending queries without words, and one
                // call with queries until its output limit.
                "queries": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUERIES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "queryType": {"type": "string", "enum": ["name", "subNodeSearch"]},
                            "query": {"type": "string", "description": "Search words (for `subNodeSearch` may be \"\")."},
                            "connectionType": {"type": "string", "description": "For `subNodeSearch`: the connection type the sub-node outputs, e.g. ai_languageModel."}
                        },
                        "required": ["queryType", "query"]
                    }
                }
            },
            "required": ["queries"]
        })
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.run(&args)?))
    }
}
