//! Search scoring over precomputed lowercase fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ports::resolve_ports;
use super::types::PortsSpec;
use super::Catalogue;

const NAME_EXACT: u32 = 20;
const DISPLAY_NAME_EXACT: u32 = 15;
const NAME_CONTAINS: u32 = 10;
const DISPLAY_NAME_CONTAINS: u32 = 8;
const ALIAS_CONTAINS: u32 = 8;
const DESCRIPTION_CONTAINS: u32 = 5;
const CONNECTION_EXACT: u32 = 100;
const CONNECTION_IN_EXPRESSION: u32 = 50;

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Full type name (`n8n-nodes-base.httpRequest`).
    pub node_type: String,
    /// Label.
    pub display_name: String,
    /// Description.
    pub description: String,
    /// Default version.
    pub version: f64,
    /// Score (higher is better).
    pub score: u32,
}

struct Entry {
    node_type: String,
    display_name: String,
    description: String,
    version: f64,
    name_lc: String,
    short_lc: String,
    display_lc: String,
    description_lc: String,
    aliases_lc: Vec<String>,
    /// Output kinds: the static list, or the expression resolved for default parameters.
    output_kinds: Vec<String>,
    /// The output expression text, when outputs are an expression.
    output_expression: Option<String>,
}

pub(super) struct SearchIndex {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl SearchIndex {
    pub(super) fn build(catalogue: &Catalogue) -> SearchIndex {
        let mut entries = Vec::new();
        for name in catalogue.types() {
            let Some(desc) = catalogue.get(name, None) else {
                continue;
            };
            if desc.is_hidden() {
                continue;
            }
            let version = catalogue
                .default_version(name)
                .unwrap_or_else(|| desc.version.max());
            let v = if desc.version.contains(version) {
                version
            } else {
                desc.version.max()
            };
            let output_kinds = resolve_ports(desc, &Value::Object(Default::default()), v)
                .map(|p| p.output_kinds().into_iter().map(str::to_string).collect())
                .unwrap_or_default();
            let output_expression = match &desc.outputs {
                PortsSpec::Expression(e) => Some(e.clone()),
                PortsSpec::List(_) => None,
            };
            let aliases_lc = desc
                .codex
                .as_ref()
                .and_then(|c| c.alias.as_ref())
                .map(|a| a.iter().map(|s| s.to_lowercase()).collect())
                .unwrap_or_default();
            entries.push(Entry {
                node_type: name.to_string(),
                display_name: desc.display_name.clone(),
                description: desc.description.clone(),
                version,
                name_lc: name.to_lowercase(),
                short_lc: desc.short_name().to_lowercase(),
                display_lc: desc.display_name.to_lowercase(),
                description_lc: desc.description.to_lowercase(),
                aliases_lc,
                output_kinds,
                output_expression,
            });
        }
        SearchIndex { entries }
    }

    fn name_score(e: &Entry, q: &str) -> u32 {
        let mut score = 0;
        if e.name_lc == q || e.short_lc == q {
            score += NAME_EXACT;
        }
        if e.display_lc == q {
            score += DISPLAY_NAME_EXACT;
        }
        if e.name_lc.contains(q) {
            score += NAME_CONTAINS;
        }
        if e.display_lc.contains(q) {
            score += DISPLAY_NAME_CONTAINS;
        }
        if e.aliases_lc.iter().any(|a| a.contains(q)) {
            score += ALIAS_CONTAINS;
        }
        if e.description_lc.contains(q) {
            score += DESCRIPTION_CONTAINS;
        }
        score
    }

    fn finish(&self, mut scored: Vec<(u32, usize)>, limit: usize) -> Vec<SearchHit> {
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| {
                    self.entries[a.1]
                        .short_lc
                        .len()
                        .cmp(&self.entries[b.1].short_lc.len())
                })
                .then_with(|| {
                    self.entries[a.1]
                        .node_type
                        .cmp(&self.entries[b.1].node_type)
                })
        });
        scored
            .into_iter()
            .take(limit)
            .map(|(score, i)| {
                let e = &self.entries[i];
                SearchHit {
                    node_type: e.node_type.clone(),
                    display_name: e.display_name.clone(),
                    description: e.description.clone(),
                    version: e.version,
                    score,
                }
            })
            .collect()
    }

    pub(super) fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let q = query.trim().to_lowercase();
        if q.is_empty() || limit == 0 {
            return Vec::new();
        }
        let scored = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let s = Self::name_score(e, &q);
                (s > 0).then_some((s, i))
            })
            .collect();
        self.finish(scored, limit)
    }

    pub(super) fn search_sub_nodes(
        &self,
        connection_type: &str,
        query: &str,
        limit: usize,
    ) -> Vec<SearchHit> {
        if limit == 0 {
            return Vec::new();
        }
        let q = query.trim().to_lowercase();
        let scored = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let mut s = if e.output_kinds.iter().any(|k| k == connection_type) {
                    CONNECTION_EXACT
                } else if e
                    .output_expression
                    .as_ref()
                    .is_some_and(|x| x.contains(connection_type))
                {
                    CONNECTION_IN_EXPRESSION
                } else {
                    0
                };
                if s > 0 && !q.is_empty() {
                    // With a query, only nodes matching it: the connection type alone
                    // would list every tool for any query.
                    let n = Self::name_score(e, &q);
                    s = if n == 0 { 0 } else { s + n };
                }
                (s > 0).then_some((s, i))
            })
            .collect();
        self.finish(scored, limit)
    }
}

impl Catalogue {
    /// Whether nodes of this type run as AI tools and may therefore use `$fromAI` in their
    /// parameters: the `…Tool` variants (`n8n-nodes-base.gmailTool`, `…langchain.mcpClientTool`)
    /// and the LangChain `tool…` nodes (`@n8n/n8n-nodes-langchain.toolWorkflow`, `toolCode`,
    /// `toolHttpRequest`, …). Shared by the builder (`update_node_parameters`) and the
    /// validator so that both agree.
    pub fn is_tool_type(node_type: &str) -> bool {
        let short = super::short_name(node_type);
        short.ends_with("Tool")
            || (node_type.starts_with(super::LANGCHAIN_PACKAGE)
                && short.starts_with("tool")
                && short.len() > "tool".len())
    }

    /// Parameters that make a node of this type output `kind` when its default parameters do
    /// not: one top-level `options` or `boolean` property named in the outputs expression, set
    /// to the first value whose resolved outputs include `kind` (a vector store's
    /// `{"mode": "retrieve-as-tool"}` for `ai_tool`). `None` when the outputs are static, the
    /// defaults already give `kind`, or no single parameter value does.
    pub fn parameters_providing_output(
        &self,
        node_type: &str,
        kind: &str,
    ) -> Option<serde_json::Map<String, Value>> {
        let desc = self.get(node_type, None)?;
        let PortsSpec::Expression(expr) = &desc.outputs else {
            return None;
        };
        let version = self
            .default_version(node_type)
            .filter(|v| desc.version.contains(*v))
            .unwrap_or_else(|| desc.version.max());
        let gives = |params: &serde_json::Map<String, Value>| {
            resolve_ports(desc, &Value::Object(params.clone()), version)
                .is_ok_and(|p| p.has_output(kind))
        };
        if gives(&serde_json::Map::new()) {
            return None;
        }
        for prop in &desc.properties {
            if !expr.contains(prop.name.as_str()) {
                continue;
            }
            let values: Vec<Value> = match prop.kind.as_str() {
                "boolean" => vec![Value::Bool(true), Value::Bool(false)],
                "options" => prop
                    .options
                    .iter()
                    .flatten()
                    .filter_map(|o| o.get("value").cloned())
                    .collect(),
                _ => continue,
            };
            for v in values {
                let mut params = serde_json::Map::new();
                params.insert(prop.name.clone(), v);
                if gives(&params) {
                    return Some(params);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tool_type_tests {
    use super::Catalogue;

    #[test]
    fn tool_types() {
        for t in [
            "n8n-nodes-base.gmailTool",
            "@n8n/n8n-nodes-langchain.toolWorkflow",
            "@n8n/n8n-nodes-langchain.toolCode",
            "@n8n/n8n-nodes-langchain.toolHttpRequest",
            "@n8n/n8n-nodes-langchain.mcpClientTool",
        ] {
            assert!(Catalogue::is_tool_type(t), "{t}");
        }
        for t in [
            "n8n-nodes-base.gmail",
            "n8n-nodes-base.toolSomething",
            "@n8n/n8n-nodes-langchain.agent",
            "@n8n/n8n-nodes-langchain.tool",
        ] {
            assert!(!Catalogue::is_tool_type(t), "{t}");
        }
    }
}
