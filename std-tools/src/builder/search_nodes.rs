//! `search_nodes`: name and sub-node search over the catalogue, several queries per call.
//!
//! Arguments: `{"queries": [{"queryType": "name"|"subNodeSearch", "query"?, "connectionType"?}]}`.
//! A name query without hits is tried with its words apart, then answered with the closest
//! types; a sub-node query whose `query` is a connection type searches that type.
//! Output, one block per query (blocks separated by a blank line):
//!
//! ```text
//! Found 2 nodes matching "http":
//! - n8n-nodes-base.httpRequest (HTTP Request, version 4.2): Makes an HTTP request and returns the response data. Inputs ["main"], outputs ["main"].
//! ```
//!
//! One line per node, not n8n's XML block of seven tags: the same facts in less than half the
//! tokens (a search of four queries cost a 1.5B model on 2 cores about 100 s to read as XML).

use super::state::{codes, is_connection_kind, req_str};
use super::suggest::{suggest_types, words};
use crate::catalogue::{Catalogue, Port, Ports, SearchHit};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// Results per query.
pub const SEARCH_LIMIT: usize = 5;
/// The core nodes named when a search finds nothing: a small model searched its request's
/// own words ("priority") again and again, where an If node was all it needed.
const CORE_NODES: [(&str, &str); 7] = [
    ("n8n-nodes-base.if", "a condition, two outputs"),
    ("n8n-nodes-base.switch", "routes by value"),
    ("n8n-nodes-base.set", "sets fields"),
    ("n8n-nodes-base.filter", "keeps matching items"),
    ("n8n-nodes-base.code", "JavaScript"),
    ("n8n-nodes-base.merge", "joins branches"),
    ("n8n-nodes-base.httpRequest", "any HTTP API"),
];
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
                // A connection type searched by name (`ai_languageModel`, `ai_tool`: a small
                // model's way of looking for a sub-node) is the sub-node search for that type;
                // as words it found tools of services named "AI". (`ai_agent` is no
                // connection type: no sub-node outputs it, and it is searched by name.)
                if is_connection_kind(query) {
                    let hits = self.catalogue.search_sub_nodes(query, "", SEARCH_LIMIT);
                    if !hits.is_empty() {
                        return Ok(self.render_sub_nodes(query, "", &hits));
                    }
                }
                let (hits, head) = self.name_hits(query);
                Ok(self.render(head, &hits, None))
            }
            "subNodeSearch" => {
                // The connection type written as the query (`{"query": "ai_languageModel"}`,
                // a small model's habit) is taken as the connection type.
                let (kind, text) = match req_str(q, "connectionType") {
                    Ok(kind) => (kind, text),
                    Err(_) if is_connection_kind(text) => (text, ""),
                    Err(_) => {
                        return Err(ToolError::new(
                            codes::INVALID_INPUT,
                            "a `subNodeSearch` query needs `connectionType` (e.g. \
                             \"ai_languageModel\", \"ai_tool\", \"ai_memory\", \"ai_embedding\")",
                        ))
                    }
                };
                let hits = self.catalogue.search_sub_nodes(kind, text, SEARCH_LIMIT);
                Ok(self.render_sub_nodes(kind, text, &hits))
            }
            other => Err(ToolError::new(
                codes::INVALID_INPUT,
                format!("unknown queryType \"{other}\"; use \"name\" or \"subNodeSearch\""),
            )),
        }
    }

    /// The result block of a sub-node search for `kind` (filtered by `text`, if any).
    fn render_sub_nodes(&self, kind: &str, text: &str, hits: &[SearchHit]) -> String {
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
        self.render(head, hits, Some(kind))
    }

    /// The hits of a name query and their heading: the query as written; else its words
    /// apart (`ai_agent`, `aiAgent` → `ai agent`: small models write identifiers); else the
    /// closest types by name and description ([`suggest_types`]), headed as suggestions.
    fn name_hits(&self, query: &str) -> (Vec<SearchHit>, String) {
        let hits = without_tool_variants(self.catalogue.search(query, SEARCH_LIMIT));
        if !hits.is_empty() {
            let head = format!("Found {} nodes matching \"{query}\":", hits.len());
            return (hits, head);
        }
        let spaced = words(query).join(" ");
        if !spaced.is_empty() && spaced != query.trim().to_lowercase() {
            let hits = without_tool_variants(self.catalogue.search(&spaced, SEARCH_LIMIT));
            if !hits.is_empty() {
                let head = format!(
                    "Found {} nodes matching \"{spaced}\" (the words of \"{query}\"):",
                    hits.len()
                );
                return (hits, head);
            }
        }
        let close: Vec<SearchHit> = suggest_types(&self.catalogue, query, SEARCH_LIMIT)
            .into_iter()
            .map(|d| SearchHit {
                node_type: d.name.clone(),
                display_name: d.display_name.clone(),
                description: d.description.clone(),
                version: self
                    .catalogue
                    .default_version(&d.name)
                    .unwrap_or_else(|| d.version.max()),
                score: 0,
            })
            .collect();
        let close = without_tool_variants(close);
        let head = if close.is_empty() {
            let core: Vec<String> = CORE_NODES
                .iter()
                .filter(|(t, _)| self.catalogue.get(t, None).is_some())
                .map(|(t, what)| format!("{t} ({what})"))
                .collect();
            let mut head = format!(
                "No nodes found matching \"{query}\". Try a shorter or different keyword \
                 (service name, action, or a synonym)."
            );
            if !core.is_empty() {
                head.push_str(&format!(
                    " Logic that no service provides is built from core nodes: {}.",
                    core.join(", ")
                ));
            }
            head
        } else {
            format!(
                "No node matches \"{query}\" as a whole. The {} closest node types by the \
                 words of their name and description (check that one does what you need):",
                close.len()
            )
        };
        (close, head)
    }

    /// Renders the hits, one line each: type, label, version, description, ports. For a
    /// sub-node search (`kind`), a node that outputs `kind` only for some parameter value is
    /// shown with the ports for that value and the connection parameters to give add_nodes.
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
            let description = h.description.trim().trim_end_matches('.');
            let _ = write!(
                out,
                "\n- {} ({}, version {}): {description}. Inputs {inputs}, outputs {outputs}.",
                h.node_type,
                h.display_name,
                format_version(h.version),
            );
            if let (Some(p), Some(k)) = (&params, kind) {
                let _ = write!(
                    out,
                    " Outputs {k} only with connectionParameters {}: give them to add_nodes.",
                    Value::Object(p.clone())
                );
            }
        }
        out
    }
}

/// The hits of a name search without the `…Tool` variants whose main node is also a hit: a
/// small model took the Gmail Tool, listed beside Gmail, to read mail in the main flow, and
/// when the variant was named on its main node's line it took that name instead. Tool variants
/// are found by a sub-node search for `ai_tool`.
fn without_tool_variants(hits: Vec<SearchHit>) -> Vec<SearchHit> {
    let types: Vec<String> = hits.iter().map(|h| h.node_type.clone()).collect();
    hits.into_iter()
        .filter(|h| {
            !h.node_type
                .strip_suffix("Tool")
                .is_some_and(|base| types.iter().any(|t| t == base))
        })
        .collect()
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
        // No list of kinds or connection types here: a small model copied such lists, item by
        // item, into `name` queries (`ai_agent`, `ai_tool`, … from a list of connection types;
        // `chat_model`, `memory`, `tool` from "chat models, memories, tools"; `service` from "a
        // service or a task"), each recorded. Real node names as examples were not copied.
        "Search the available n8n node types. Several queries per call: `name` queries match \
         type names, display names, aliases and descriptions (e.g. \"http\", \"gmail\", \
         \"schedule\"); `subNodeSearch` queries find the sub-nodes that plug into an AI node, \
         by the connection type they output (`connectionType`), filtered by `query` (`\"\"` \
         for all). Returns up to 5 nodes per query with their full type name, version, \
         description, inputs and outputs."
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

    /// The catalogue alone answers: a repeated call is answered from the conversation.
    fn pure(&self) -> bool {
        true
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.run(&args)?))
    }
}
