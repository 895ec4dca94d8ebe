//! `submit_discovery_results`: ends the discovery phase of the multi-agent builder.
//!
//! The discovery agent submits the node types the workflow needs, each with its version, why it
//! was chosen, and the parameters that change its inputs/outputs (e.g. a vector store's `mode`).
//! The tool validates the list, writes it to the discovery channel (default
//! `discovery_context`) for the builder and configurator, and appends a completion entry to the
//! coordination log (default channel `coordination_log`, meant for an `append` reducer), from
//! which the parent graph routes deterministically to the next phase.
//!
//! The discovery context written:
//!
//! ```json
//! {"nodesFound": [{"nodeName": "@n8n/n8n-nodes-langchain.agent", "version": 2.2,
//!                  "reasoning": "…", "connectionChangingParameters": [
//!                    {"name": "hasOutputParser", "possibleValues": [true, false]}]}],
//!  "techniques": ["chatbot"], "bestPractices": "<best_practices …>…", "summary": "…"}
//! ```
//!
//! The coordination-log entry:
//!
//! ```json
//! {"phase": "discovery", "status": "completed", "timestamp": 1764000000000,
//!  "summary": "…", "output": {"nodeTypes": ["…"], "techniques": ["…"]},
//!  "metadata": {"nodesFound": 3}}
//! ```

use super::best_practices;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;
use std::sync::Arc;

/// Default channel the discovery context is written to.
pub const DEFAULT_DISCOVERY_CHANNEL: &str = "discovery_context";
/// Default channel the coordination-log entry is appended to.
pub const DEFAULT_COORDINATION_LOG_CHANNEL: &str = "coordination_log";
/// Most nodes accepted in one submission.
pub const MAX_NODES: usize = 100;

/// Decides whether a full node type (`n8n-nodes-base.httpRequest`) exists, e.g. in a
/// catalogue.
pub type NodeTypeChecker = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A parameter whose value changes a node's inputs or outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionChangingParameter {
    /// Parameter name (`mode`, `hasOutputParser`, `numberInputs`, …).
    pub name: String,
    /// The values it can take.
    #[serde(default)]
    pub possible_values: Vec<Value>,
}

/// One node type found by discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredNode {
    /// Full node type, `package.name` (`@n8n/n8n-nodes-langchain.agent`).
    pub node_name: String,
    /// Type version to use (written as an integer when it is whole: `2`, `2.1`).
    #[serde(serialize_with = "serialize_version")]
    pub version: f64,
    /// Why the workflow needs it.
    pub reasoning: String,
    /// Parameters that change its ports.
    #[serde(default)]
    pub connection_changing_parameters: Vec<ConnectionChangingParameter>,
}

/// A validated submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryResults {
    /// The nodes, in submission order.
    pub nodes_found: Vec<DiscoveredNode>,
    /// Technique ids the workflow follows.
    #[serde(default)]
    pub techniques: Vec<String>,
    /// One-line summary (generated when none was given).
    pub summary: String,
}

impl DiscoveryResults {
    /// The value written to the discovery channel; `bestPractices` holds the documents of the
    /// techniques (omitted when there are none).
    pub fn context_value(&self) -> Value {
        let mut v = json!({
            "nodesFound": self.nodes_found,
            "techniques": self.techniques,
            "summary": self.summary,
        });
        if !self.techniques.is_empty() {
            if let (Ok(text), Some(obj)) = (
                best_practices::render_all(&self.techniques),
                v.as_object_mut(),
            ) {
                obj.insert("bestPractices".into(), Value::String(text));
            }
        }
        v
    }

    /// The coordination-log entry for this submission, stamped `timestamp` (ms since epoch).
    pub fn log_entry(&self, timestamp: u64) -> Value {
        json!({
            "phase": "discovery",
            "status": "completed",
            "timestamp": timestamp,
            "summary": self.summary,
            "output": {
                "nodeTypes": self.nodes_found.iter().map(|n| n.node_name.as_str()).collect::<Vec<_>>(),
                "techniques": self.techniques,
            },
            "metadata": {"nodesFound": self.nodes_found.len()},
        })
    }

    /// The confirmation returned to the agent.
    pub fn confirmation(&self) -> String {
        let mut s = format!(
            "Discovery results submitted: {} node type{}.\n",
            self.nodes_found.len(),
            if self.nodes_found.len() == 1 { "" } else { "s" }
        );
        for n in &self.nodes_found {
            s.push_str(&format!("- {} (v{})", n.node_name, n.version));
            if !n.connection_changing_parameters.is_empty() {
                let names: Vec<&str> = n
                    .connection_changing_parameters
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect();
                s.push_str(&format!(
                    " — connection-changing parameters: {}",
                    names.join(", ")
                ));
            }
            s.push('\n');
        }
        if !self.techniques.is_empty() {
            s.push_str(&format!(
                "Best practices attached: {}.\n",
                self.techniques.join(", ")
            ));
        }
        s.push_str("Discovery is complete; the builder will create and connect these nodes next.");
        s
    }
}

/// Whether `t` has the shape of a full node type: `package.name`, where the package may be
/// scoped (`@n8n/n8n-nodes-langchain`) and the name is an identifier.
pub fn looks_like_full_type(t: &str) -> bool {
    let Some((package, name)) = t.rsplit_once('.') else {
        return false;
    };
    let package_ok = !package.is_empty()
        && package
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | '/'))
        && !package.starts_with('.')
        && !package.ends_with('/');
    let name_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    package_ok && name_ok
}

fn serialize_version<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

fn err(code: &str, message: String) -> ToolError {
    ToolError::new(code, message)
}

/// Validates `submit_discovery_results` arguments. `checker`, when given, must accept every
/// node type. Errors: `INVALID_INPUT`, `NO_NODES`, `TOO_MANY_NODES`, `INVALID_NODE_TYPE`,
/// `UNKNOWN_NODE_TYPE`, `DUPLICATE_NODE`, `INVALID_VERSION`, `MISSING_REASONING`,
/// `INVALID_PARAMETER`, `UNKNOWN_TECHNIQUE`.
pub fn validate(
    args: &Value,
    checker: Option<&NodeTypeChecker>,
) -> Result<DiscoveryResults, ToolError> {
    let Some(obj) = args.as_object() else {
        return Err(err(
            "INVALID_INPUT",
            "arguments must be an object: {\"nodes\": [{\"nodeName\", \"version\", \
             \"reasoning\", \"connectionChangingParameters\"}], \"techniques\"?, \"summary\"?}"
                .into(),
        ));
    };
    let nodes = match obj.get("nodes") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => {
            return Err(err(
                "NO_NODES",
                "`nodes` is missing: submit every node type the workflow needs, each as \
                 {nodeName, version, reasoning, connectionChangingParameters}"
                    .into(),
            ))
        }
        Some(other) => {
            return Err(err(
                "INVALID_INPUT",
                format!("`nodes` must be a list of node objects, got {other}"),
            ))
        }
    };
    if nodes.is_empty() {
        return Err(err(
            "NO_NODES",
            "`nodes` is empty: search for the nodes the workflow needs (search_nodes), then \
             submit at least one, including a trigger"
                .into(),
        ));
    }
    if nodes.len() > MAX_NODES {
        return Err(err(
            "TOO_MANY_NODES",
            format!(
                "{} nodes submitted, at most {MAX_NODES} are accepted: submit each node type \
                 once, not once per instance",
                nodes.len()
            ),
        ));
    }

    let mut found: Vec<DiscoveredNode> = Vec::with_capacity(nodes.len());
    for (i, raw) in nodes.iter().enumerate() {
        let node = parse_node(i, raw)?;
        if !looks_like_full_type(&node.node_name) {
            let hint = if node.node_name.contains('.') || node.node_name.is_empty() {
                String::new()
            } else {
                format!(
                    " (e.g. `n8n-nodes-base.{}` or `@n8n/n8n-nodes-langchain.{}`)",
                    node.node_name, node.node_name
                )
            };
            return Err(err(
                "INVALID_NODE_TYPE",
                format!(
                    "nodes[{i}].nodeName `{}` is not a full node type: use the `package.name` \
                     form that search_nodes returns{hint}",
                    node.node_name
                ),
            ));
        }
        if let Some(check) = checker {
            if !check(&node.node_name) {
                return Err(err(
                    "UNKNOWN_NODE_TYPE",
                    format!(
                        "nodes[{i}].nodeName `{}` is not a known node type: find the exact \
                         type with search_nodes and check it with get_node_details",
                        node.node_name
                    ),
                ));
            }
        }
        if let Some(j) = found.iter().position(|f| f.node_name == node.node_name) {
            return Err(err(
                "DUPLICATE_NODE",
                format!(
                    "`{}` is listed twice (nodes[{j}] and nodes[{i}]): list each node type \
                     once; the builder adds as many instances as the workflow needs",
                    node.node_name
                ),
            ));
        }
        if !node.version.is_finite() || node.version <= 0.0 {
            return Err(err(
                "INVALID_VERSION",
                format!(
                    "nodes[{i}].version {} for `{}` must be a positive number: use the version \
                     that get_node_details reports (e.g. 1, 2.1)",
                    node.version, node.node_name
                ),
            ));
        }
        if node.reasoning.trim().is_empty() {
            return Err(err(
                "MISSING_REASONING",
                format!(
                    "nodes[{i}].reasoning for `{}` is empty: say in one sentence what the node \
                     does in this workflow",
                    node.node_name
                ),
            ));
        }
        for (k, p) in node.connection_changing_parameters.iter().enumerate() {
            if p.name.trim().is_empty() {
                return Err(err(
                    "INVALID_PARAMETER",
                    format!(
                        "nodes[{i}].connectionChangingParameters[{k}] of `{}` has no name: give \
                         the parameter name (e.g. `mode`)",
                        node.node_name
                    ),
                ));
            }
            if p.possible_values.is_empty() {
                return Err(err(
                    "INVALID_PARAMETER",
                    format!(
                        "connection-changing parameter `{}` of `{}` lists no possibleValues: \
                         list the values that change the ports (e.g. [\"insert\", \
                         \"retrieve-as-tool\"]), or leave the parameter out",
                        p.name, node.node_name
                    ),
                ));
            }
            if node.connection_changing_parameters[..k]
                .iter()
                .any(|q| q.name == p.name)
            {
                return Err(err(
                    "INVALID_PARAMETER",
                    format!(
                        "connection-changing parameter `{}` of `{}` is listed twice: merge its \
                         possibleValues into one entry",
                        p.name, node.node_name
                    ),
                ));
            }
        }
        found.push(node);
    }

    let techniques = match obj.get("techniques") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut ids = Vec::with_capacity(items.len());
            for item in items {
                let Some(s) = item.as_str() else {
                    return Err(err(
                        "INVALID_INPUT",
                        format!("`techniques` must hold technique ids (strings), got {item}"),
                    ));
                };
                ids.push(s.trim().to_string());
            }
            best_practices::resolve(&ids)?
                .into_iter()
                .map(|t| t.id.to_string())
                .collect()
        }
        Some(other) => {
            return Err(err(
                "INVALID_INPUT",
                format!("`techniques` must be a list of technique ids, got {other}"),
            ))
        }
    };

    let summary = match obj.get("summary") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        None | Some(Value::Null) | Some(Value::String(_)) => default_summary(&found),
        Some(other) => {
            return Err(err(
                "INVALID_INPUT",
                format!("`summary` must be a string, got {other}"),
            ))
        }
    };

    Ok(DiscoveryResults {
        nodes_found: found,
        techniques,
        summary,
    })
}

fn parse_node(i: usize, raw: &Value) -> Result<DiscoveredNode, ToolError> {
    let Some(obj) = raw.as_object() else {
        return Err(err(
            "INVALID_INPUT",
            format!(
                "nodes[{i}] must be an object {{nodeName, version, reasoning, \
                 connectionChangingParameters}}, got {raw}"
            ),
        ));
    };
    let node_name = match obj.get("nodeName") {
        Some(Value::String(s)) => s.trim().to_string(),
        _ => {
            return Err(err(
                "INVALID_NODE_TYPE",
                format!(
                    "nodes[{i}].nodeName is missing or not a string: give the full node type, \
                     e.g. `n8n-nodes-base.httpRequest`"
                ),
            ))
        }
    };
    let version = match obj.get("version") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        _ => {
            return Err(err(
                "INVALID_VERSION",
                format!(
                    "nodes[{i}].version of `{node_name}` is missing or not a number: use the \
                     version that get_node_details reports (e.g. 1, 2.1)"
                ),
            ))
        }
    };
    let reasoning = match obj.get("reasoning") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(err(
                "INVALID_INPUT",
                format!("nodes[{i}].reasoning must be a string, got {other}"),
            ))
        }
    };
    let params = match obj.get("connectionChangingParameters") {
        None | Some(Value::Null) => Vec::new(),
        Some(v @ Value::Array(_)) => {
            serde_json::from_value::<Vec<ConnectionChangingParameter>>(v.clone()).map_err(|e| {
                err(
                    "INVALID_PARAMETER",
                    format!(
                        "nodes[{i}].connectionChangingParameters of `{node_name}` must be a \
                         list of {{name, possibleValues: [...]}}: {e}"
                    ),
                )
            })?
        }
        Some(other) => {
            return Err(err(
                "INVALID_PARAMETER",
                format!(
                    "nodes[{i}].connectionChangingParameters of `{node_name}` must be a list \
                     of {{name, possibleValues: [...]}}, got {other}"
                ),
            ))
        }
    };
    Ok(DiscoveredNode {
        node_name,
        version,
        reasoning,
        connection_changing_parameters: params,
    })
}

fn default_summary(nodes: &[DiscoveredNode]) -> String {
    let names: Vec<&str> = nodes.iter().map(|n| n.node_name.as_str()).collect();
    format!(
        "Discovered {} node type{}: {}",
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The `submit_discovery_results` tool.
///
/// Arguments: `{"nodes": [{"nodeName", "version", "reasoning", "connectionChangingParameters":
/// [{"name", "possibleValues"}]}], "techniques"?: [...], "summary"?: "..."}`. Writes the
/// discovery context (see the module docs) and a coordination-log entry. Channels: the
/// constructor's, overridden by the tool settings `channel` and `log_channel`.
#[derive(Clone)]
pub struct SubmitDiscoveryResults {
    channel: String,
    log_channel: String,
    checker: Option<NodeTypeChecker>,
}

impl fmt::Debug for SubmitDiscoveryResults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitDiscoveryResults")
            .field("channel", &self.channel)
            .field("log_channel", &self.log_channel)
            .field("checker", &self.checker.is_some())
            .finish()
    }
}

impl Default for SubmitDiscoveryResults {
    fn default() -> Self {
        Self::new()
    }
}

impl SubmitDiscoveryResults {
    /// The tool, writing to `discovery_context` and `coordination_log`, checking no catalogue.
    pub fn new() -> Self {
        SubmitDiscoveryResults {
            channel: DEFAULT_DISCOVERY_CHANNEL.into(),
            log_channel: DEFAULT_COORDINATION_LOG_CHANNEL.into(),
            checker: None,
        }
    }

    /// Writes the discovery context to `channel` instead.
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// Appends the coordination-log entry to `channel` instead.
    pub fn with_log_channel(mut self, channel: impl Into<String>) -> Self {
        self.log_channel = channel.into();
        self
    }

    /// Rejects node types that `checker` does not accept (`UNKNOWN_NODE_TYPE`), e.g. types
    /// missing from a catalogue.
    pub fn with_type_checker(
        mut self,
        checker: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.checker = Some(Arc::new(checker));
        self
    }

    fn setting<'a>(ctx: &'a ToolContext, key: &str, default: &'a str) -> &'a str {
        match ctx.settings().get(key).and_then(Value::as_str) {
            Some(c) if !c.is_empty() => c,
            _ => default,
        }
    }
}

#[async_trait]
impl Tool for SubmitDiscoveryResults {
    fn name(&self) -> &str {
        "submit_discovery_results"
    }

    fn description(&self) -> &str {
        "Submit the result of node discovery and finish the discovery phase. List every node \
         type the workflow needs exactly once (including the trigger and AI sub-nodes such as \
         chat models, memories, tools, embeddings), each with its full type name as \
         search_nodes returns it (e.g. `n8n-nodes-base.httpRequest`), the type version from \
         get_node_details, one sentence of reasoning, and the parameters that change its \
         inputs/outputs with their possible values (e.g. vector store `mode`, agent \
         `hasOutputParser`, merge `numberInputs`). Optionally name the techniques whose best \
         practices apply and a one-line summary."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "nodes": {
                    "type": "array",
                    "description": "Every node type the workflow needs, once each.",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "nodeName": {
                                "type": "string",
                                "description": "Full node type, e.g. `n8n-nodes-base.scheduleTrigger` or `@n8n/n8n-nodes-langchain.agent`."
                            },
                            "version": {
                                "type": "number",
                                "description": "Type version to use (from get_node_details)."
                            },
                            "reasoning": {
                                "type": "string",
                                "description": "Why the workflow needs this node."
                            },
                            "connectionChangingParameters": {
                                "type": "array",
                                "description": "Parameters whose values change the node's inputs/outputs; empty when none.",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string"},
                                        "possibleValues": {"type": "array"}
                                    },
                                    "required": ["name", "possibleValues"]
                                }
                            }
                        },
                        "required": ["nodeName", "version", "reasoning", "connectionChangingParameters"]
                    }
                },
                "techniques": {
                    "type": "array",
                    "description": "Techniques whose best practices apply (as for get_best_practices).",
                    "items": {"type": "string", "enum": best_practices::technique_ids()}
                },
                "summary": {
                    "type": "string",
                    "description": "One line on what was discovered."
                }
            },
            "required": ["nodes"]
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let results = validate(&args, self.checker.as_ref())?;
        let channel = Self::setting(ctx, "channel", &self.channel);
        let log_channel = Self::setting(ctx, "log_channel", &self.log_channel);
        Ok(ToolOutput::text(results.confirmation())
            .write(channel, results.context_value())
            .write(log_channel, results.log_entry(now_ms())))
    }
}
