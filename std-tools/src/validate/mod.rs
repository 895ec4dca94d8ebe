//! Deterministic workflow validators: every rule a named check with a stable code, a severity
//! and a message naming the node (and, where useful, the parameter path).
//!
//! Two groups, as the multi-agent builder's tools split them:
//!
//! * [`RuleGroup::Structure`] ([`validate_structure`], tool `validate_structure`): triggers, node
//!   types, port resolution, required inputs, connection types and indexes, merge inputs,
//!   sub-nodes, reachability, expressions referencing missing nodes.
//! * [`RuleGroup::Configuration`] ([`validate_configuration`], tool `validate_configuration`):
//!   agent prompts, tool parameters, `$fromAI` placement, hard-coded credentials, webhook
//!   response mode, required parameters, options values (with n8n's displayOptions rules),
//!   parameter keys the node type does not define.
//!
//! [`validate`] runs both. The rules never panic on real workflows: unknown types, malformed
//! parameters and `null` outputs are skipped or reported, never unwrapped. Every rule is listed
//! in [`RULES`].

mod configuration;
mod credentials;
mod expressions;
mod parameters;
mod report;
mod structure;
pub mod tools;
mod unknown;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalogue::{Catalogue, NodeTypeDescription, Port, PortError, Ports};
use crate::workflow::{Edge, Workflow, WorkflowNode};

pub use report::Report;
pub use tools::{ValidateConfiguration, ValidateStructure, DEFAULT_WORKFLOW_CHANNEL};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The workflow will not work as built.
    Error,
    /// Likely a mistake, or a risk (e.g. a leaked secret).
    Warning,
    /// Worth knowing.
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which subset a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleGroup {
    /// Nodes, ports and connections (`validate_structure`).
    Structure,
    /// Parameters (`validate_configuration`).
    Configuration,
}

impl RuleGroup {
    /// `structure` or `configuration`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleGroup::Structure => "structure",
            RuleGroup::Configuration => "configuration",
        }
    }
}

/// One rule: its stable code, severity, group and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Stable code (`NO_TRIGGER`, …).
    pub code: &'static str,
    /// Severity of its findings.
    pub severity: Severity,
    /// Its group.
    pub group: RuleGroup,
    /// What it checks.
    pub summary: &'static str,
}

macro_rules! rules {
    ($($konst:ident = $code:literal, $sev:ident, $group:ident, $summary:literal;)*) => {
        /// Stable rule codes.
        pub mod codes {
            $(
                #[doc = $summary]
                pub const $konst: &str = $code;
            )*
        }
        /// Every rule, structure rules first.
        pub const RULES: &[Rule] = &[
            $(Rule { code: $code, severity: Severity::$sev, group: RuleGroup::$group, summary: $summary },)*
        ];
    };
}

rules! {
    EMPTY_WORKFLOW = "EMPTY_WORKFLOW", Error, Structure,
        "The workflow has no nodes (sticky notes aside), so there is nothing to run.";
    NO_TRIGGER = "NO_TRIGGER", Error, Structure,
        "The workflow has no (enabled) trigger node, so it can never start.";
    NODE_TYPE_NOT_FOUND = "NODE_TYPE_NOT_FOUND", Error, Structure,
        "A node's type is not in the catalogue.";
    NODE_VERSION_NOT_FOUND = "NODE_VERSION_NOT_FOUND", Error, Structure,
        "A node's typeVersion is not a version the catalogue knows for its type (n8n cannot load such a node: activating the workflow fails).";
    PORTS_UNRESOLVABLE = "PORTS_UNRESOLVABLE", Error, Structure,
        "A node's inputs/outputs could not be resolved for its parameters.";
    CONNECTION_NODE_MISSING = "CONNECTION_NODE_MISSING", Error, Structure,
        "A connection starts or ends at a node name that is not in the workflow.";
    MISSING_REQUIRED_INPUT = "MISSING_REQUIRED_INPUT", Error, Structure,
        "A required input (e.g. an agent's ai_languageModel) has no connection.";
    UNSUPPORTED_CONNECTION_TYPE = "UNSUPPORTED_CONNECTION_TYPE", Error, Structure,
        "A connection's type is not an output of its source or not an input of its target.";
    INPUT_INDEX_OUT_OF_RANGE = "INPUT_INDEX_OUT_OF_RANGE", Error, Structure,
        "A connection targets an input index the target node does not have.";
    OUTPUT_INDEX_OUT_OF_RANGE = "OUTPUT_INDEX_OUT_OF_RANGE", Error, Structure,
        "A connection leaves an output index the source node does not have.";
    MERGE_INPUT_OUT_OF_RANGE = "MERGE_INPUT_OUT_OF_RANGE", Error, Structure,
        "A connection targets a Merge input beyond its numberInputs.";
    SUB_NODE_NOT_CONNECTED = "SUB_NODE_NOT_CONNECTED", Error, Structure,
        "A sub-node (outputs only ai_* types) is not connected to any parent node.";
    TRIGGER_NOT_CONNECTED = "TRIGGER_NOT_CONNECTED", Warning, Structure,
        "A trigger starts nothing: it has no outgoing connection while the workflow has other nodes.";
    UNREACHABLE_NODE = "UNREACHABLE_NODE", Warning, Structure,
        "A node cannot be reached from any trigger through main connections.";
    EXPRESSION_MISSING_NODE = "EXPRESSION_MISSING_NODE", Error, Structure,
        "An expression references a node ($('Name'), $node[\"Name\"], $node.Name) that does not exist.";
    AGENT_NO_PROMPT = "AGENT_NO_PROMPT", Error, Configuration,
        "An agent defines its prompt itself (promptType define) but the prompt is empty.";
    AGENT_STATIC_PROMPT = "AGENT_STATIC_PROMPT", Warning, Configuration,
        "An agent's defined prompt has no expression, so it ignores its input.";
    AGENT_NO_SYSTEM_PROMPT = "AGENT_NO_SYSTEM_PROMPT", Warning, Configuration,
        "An agent has no system message (options.systemMessage).";
    TOOL_NO_PARAMETERS = "TOOL_NO_PARAMETERS", Warning, Configuration,
        "A tool node that needs configuration has no parameters set.";
    FROM_AI_OUTSIDE_TOOL = "FROM_AI_OUTSIDE_TOOL", Error, Configuration,
        "$fromAI() is used in a node that is not a tool (only tool nodes get AI-filled values).";
    HARDCODED_CREDENTIAL = "HARDCODED_CREDENTIAL", Warning, Configuration,
        "An API key, bearer token or password is written into HTTP headers/query or Set fields instead of credentials.";
    WEBHOOK_RESPOND_NODE_MISSING = "WEBHOOK_RESPOND_NODE_MISSING", Error, Configuration,
        "A trigger responds 'using Respond to Webhook node' but the workflow has no such node.";
    RESPOND_NODE_WITHOUT_RESPONSE_MODE = "RESPOND_NODE_WITHOUT_RESPONSE_MODE", Error, Configuration,
        "A Respond to Webhook node exists but no trigger is set to respond with it (responseMode responseNode).";
    MISSING_REQUIRED_PARAMETER = "MISSING_REQUIRED_PARAMETER", Error, Configuration,
        "A required, visible parameter is missing or empty.";
    INVALID_OPTION_VALUE = "INVALID_OPTION_VALUE", Error, Configuration,
        "An options parameter has a value that is not one of its options.";
    UNKNOWN_PARAMETER = "UNKNOWN_PARAMETER", Warning, Configuration,
        "A parameter key (or a key inside a collection) that the node type does not define for its version, so n8n ignores it.";
}

/// The rule with this code.
pub fn rule(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code == code)
}

/// One problem found in a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's stable code.
    pub code: &'static str,
    /// The rule's severity.
    pub severity: Severity,
    /// The rule's group.
    pub rule_group: RuleGroup,
    /// The node concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Where in the node's parameters (`options.systemMessage`, `headerParameters.parameters[0]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Finding {
    /// A finding of rule `code` (severity and group from [`RULES`]).
    pub fn new(code: &'static str, node: Option<&str>, message: impl Into<String>) -> Self {
        let (severity, rule_group) = rule(code)
            .map(|r| (r.severity, r.group))
            .unwrap_or((Severity::Error, RuleGroup::Structure));
        Finding {
            code,
            severity,
            rule_group,
            node: node.map(str::to_string),
            path: None,
            message: message.into(),
        }
    }

    /// Sets the parameter path.
    pub fn at(mut self, path: impl Into<String>) -> Self {
        let p = path.into();
        self.path = if p.is_empty() { None } else { Some(p) };
        self
    }
}

/// Runs every rule.
pub fn validate(workflow: &Workflow, catalogue: &Catalogue) -> Report {
    run(workflow, catalogue, true, true)
}

/// Runs the structure rules.
pub fn validate_structure(workflow: &Workflow, catalogue: &Catalogue) -> Report {
    run(workflow, catalogue, true, false)
}

/// What the structure check finds that leaves a workflow unfinished: its errors, a trigger or a
/// node that is not connected (warnings otherwise), and a workflow of triggers only
/// ([`ONLY_TRIGGER`]), each as `"CODE: node \"Name\":
/// message"` (without the node part for the workflow as a whole). Empty for
/// a workflow a build could end on.
pub fn unfinished(workflow: &Workflow, catalogue: &Catalogue) -> Vec<String> {
    let mut problems: Vec<String> = validate_structure(workflow, catalogue)
        .findings
        .iter()
        .filter(|f| {
            f.severity == Severity::Error
                || matches!(
                    f.code,
                    codes::TRIGGER_NOT_CONNECTED | codes::UNREACHABLE_NODE
                )
        })
        .map(|f| match &f.node {
            Some(node) => format!("{}: node \"{node}\": {}", f.code, f.message),
            None => format!("{}: {}", f.code, f.message),
        })
        .collect();
    if only_triggers(workflow, catalogue) {
        problems.push(format!(
            "{ONLY_TRIGGER}: the workflow has only its trigger, so it does nothing yet; find the \
             nodes that do the work with search_nodes, add them with add_nodes and connect the \
             trigger to the first"
        ));
    }
    problems
}

/// Whether the workflow holds nodes (sticky notes aside) and every one is a trigger: it starts
/// but does nothing.
pub fn only_triggers(workflow: &Workflow, catalogue: &Catalogue) -> bool {
    let mut nodes = workflow
        .nodes
        .iter()
        .filter(|n| !n.is_sticky_note())
        .peekable();
    nodes.peek().is_some()
        && nodes.all(|n| {
            catalogue
                .get(&n.node_type, Some(n.version()))
                .is_some_and(|d| d.is_trigger())
        })
}

/// The [`unfinished`] finding for a workflow that holds triggers and nothing else (a build
/// step, not a structure rule: such a workflow is valid, but it does nothing).
pub const ONLY_TRIGGER: &str = "ONLY_TRIGGER";

/// Runs the configuration rules.
pub fn validate_configuration(workflow: &Workflow, catalogue: &Catalogue) -> Report {
    run(workflow, catalogue, false, true)
}

fn run(workflow: &Workflow, catalogue: &Catalogue, structure: bool, config: bool) -> Report {
    let ctx = Ctx::new(workflow, catalogue);
    let mut out = Vec::new();
    if structure {
        structure::check(&ctx, &mut out);
        expressions::check_references(&ctx, &mut out);
    }
    if config {
        configuration::check(&ctx, &mut out);
        expressions::check_from_ai(&ctx, &mut out);
        credentials::check(&ctx, &mut out);
        parameters::check(&ctx, &mut out);
    }
    Report::new(out)
}

/// What the rules know about one node.
pub(crate) struct NodeInfo<'a> {
    pub node: &'a WorkflowNode,
    pub desc: Option<&'a NodeTypeDescription>,
    pub version: f64,
    /// `None` when the type is unknown.
    pub ports: Option<Result<Ports, PortError>>,
    /// Parameters with the description's defaults (raw parameters when the type is unknown).
    pub params: Map<String, Value>,
}

impl NodeInfo<'_> {
    pub fn name(&self) -> &str {
        &self.node.name
    }

    /// The resolved inputs, unless unknown (unknown type, resolution failed, or an expression
    /// that gave nothing — it may have thrown for these parameters).
    pub fn inputs(&self) -> Option<&[Port]> {
        let ports = self.ports.as_ref()?.as_ref().ok()?;
        let expr = self.desc.is_some_and(|d| d.inputs.is_expression());
        if expr && ports.inputs.is_empty() {
            return None;
        }
        Some(&ports.inputs)
    }

    /// The resolved outputs, unless unknown (see [`NodeInfo::inputs`]).
    pub fn outputs(&self) -> Option<&[Port]> {
        let ports = self.ports.as_ref()?.as_ref().ok()?;
        let expr = self.desc.is_some_and(|d| d.outputs.is_expression());
        if expr && ports.outputs.is_empty() {
            return None;
        }
        Some(&ports.outputs)
    }

    pub fn short_type(&self) -> &str {
        crate::catalogue::short_name(&self.node.node_type)
    }

    pub fn is_trigger(&self) -> bool {
        if self.node.node_type == "n8n-nodes-base.start" {
            return true;
        }
        match self.desc {
            Some(d) => d.is_trigger(),
            None => {
                let s = self.short_type();
                s.ends_with("Trigger") || s.ends_with("trigger")
            }
        }
    }

    /// Whether this is a tool node (its outputs are only `ai_tool`, or its type is a tool).
    pub fn is_tool(&self) -> bool {
        if crate::catalogue::Catalogue::is_tool_type(&self.node.node_type) {
            return true;
        }
        self.outputs()
            .is_some_and(|o| !o.is_empty() && o.iter().all(|p| p.kind == "ai_tool"))
    }
}

/// Shared, precomputed view of a workflow for the rules.
pub(crate) struct Ctx<'a> {
    pub workflow: &'a Workflow,
    /// Non-sticky nodes.
    pub nodes: Vec<NodeInfo<'a>>,
    pub by_name: HashMap<&'a str, usize>,
    pub edges: Vec<Edge>,
}

impl<'a> Ctx<'a> {
    fn new(workflow: &'a Workflow, catalogue: &'a Catalogue) -> Self {
        let mut nodes = Vec::with_capacity(workflow.nodes.len());
        for node in &workflow.nodes {
            if node.is_sticky_note() {
                continue;
            }
            let v = node.version();
            let desc = catalogue.get(&node.node_type, Some(v));
            let (version, params, ports) = match desc {
                Some(d) => {
                    let version = if d.version.contains(v) {
                        v
                    } else {
                        d.default_version
                            .filter(|dv| d.version.contains(*dv))
                            .unwrap_or_else(|| d.version.max())
                    };
                    let raw = Value::Object(node.parameters.clone());
                    let params = crate::catalogue::parameters_with_defaults(d, &raw, version);
                    // Static ports need no parameters; expression ports get the merged ones
                    // (merging again inside is then a no-op).
                    let ports = if d.inputs.is_expression() || d.outputs.is_expression() {
                        crate::catalogue::resolve_ports(d, &Value::Object(params.clone()), version)
                    } else {
                        crate::catalogue::resolve_ports(d, &Value::Null, version)
                    };
                    (version, params, Some(ports))
                }
                None => (v, node.parameters.clone(), None),
            };
            nodes.push(NodeInfo {
                node,
                desc,
                version,
                ports,
                params,
            });
        }
        let by_name = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node.name.as_str(), i))
            .collect();
        Ctx {
            workflow,
            nodes,
            by_name,
            edges: workflow.edges(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&NodeInfo<'a>> {
        self.by_name.get(name).map(|&i| &self.nodes[i])
    }

    /// Whether a node of that name exists (sticky notes included).
    pub fn has_node(&self, name: &str) -> bool {
        self.by_name.contains_key(name) || self.workflow.nodes.iter().any(|n| n.name == name)
    }
}

/// Calls `f(path, text)` for every string inside `value`, with a `a.b[0].c` path.
pub(crate) fn walk_strings(value: &Value, path: &mut String, f: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(s) => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk_strings(item, path, f);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                walk_strings(v, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Calls `f(path, text)` for every string in a node's parameters.
pub(crate) fn walk_parameters(params: &Map<String, Value>, f: &mut dyn FnMut(&str, &str)) {
    let mut path = String::new();
    for (k, v) in params {
        path.clear();
        path.push_str(k);
        walk_strings(v, &mut path, f);
    }
}
