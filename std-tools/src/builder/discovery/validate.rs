//! Validating `submit_discovery_results` arguments into [`DiscoveryResults`]: node types (shape,
//! catalogue, duplicates), versions, reasoning, connection-changing parameters, techniques and
//! the summary.

use super::results::{ConnectionChangingParameter, DiscoveredNode, DiscoveryResults};
use super::{NodeTypeChecker, SubNodeChecker, MAX_NODES};
use crate::builder::best_practices;
use agentgraph_agents::tools::ToolError;
use serde_json::Value;

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

fn err(code: &str, message: String) -> ToolError {
    ToolError::new(code, message)
}

/// Validates `submit_discovery_results` arguments. `checker`, when given, must accept every
/// node type. A type listed again at the same version is kept once. Errors: `INVALID_INPUT`, `NO_NODES`, `TOO_MANY_NODES`, `INVALID_NODE_TYPE`,
/// `UNKNOWN_NODE_TYPE`, `DUPLICATE_NODE`, `INVALID_VERSION`, `MISSING_REASONING`,
/// `INVALID_PARAMETER`, `UNKNOWN_TECHNIQUE` (and, with a catalogue, `NO_MAIN_NODES` from
/// [`require_main_node`]).
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
    // Types listed again at the same version, kept once.
    let mut repeated: Vec<String> = Vec::new();
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
            // The same type at the same version again is the same finding: kept once (a small
            // model repeated its items until the output limit cut the call).
            if found[j].version == node.version {
                if !repeated.contains(&node.node_name) {
                    repeated.push(node.node_name.clone());
                }
                continue;
            }
            return Err(err(
                "DUPLICATE_NODE",
                format!(
                    "`{}` is listed twice with two versions (nodes[{j}] and nodes[{i}]): list \
                     each node type once, at the version get_node_details reports; the builder \
                     adds as many instances as the workflow needs",
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
        repeated,
    })
}

/// Refuses a submission whose every node is an AI sub-node (`NO_MAIN_NODES`): sub-nodes plug
/// into another node and make no workflow alone (a small model submitted the Default Data
/// Loader alone for a webhook that sorts orders). `sub_node` names a type's outputs when the
/// type, at the submitted version, is a sub-node; a node listing connection-changing
/// parameters counts as a possible main node (a vector store's `mode` gives it a main output).
pub fn require_main_node(
    results: &DiscoveryResults,
    sub_node: &SubNodeChecker,
) -> Result<(), ToolError> {
    let mut subs = Vec::new();
    for n in &results.nodes_found {
        if !n.connection_changing_parameters.is_empty() {
            return Ok(());
        }
        match sub_node(&n.node_name, n.version) {
            Some(outputs) => subs.push(format!("`{}` (outputs {outputs})", n.node_name)),
            None => return Ok(()),
        }
    }
    Err(err(
        "NO_MAIN_NODES",
        format!(
            "every node listed is an AI sub-node: {}. A sub-node only plugs into another node \
             (an AI Agent, a chain, a vector store) and cannot make a workflow alone. Search \
             for the trigger and the nodes that do the work the user asked for (search_nodes), \
             then submit them together with the sub-nodes they need.",
            subs.join(", ")
        ),
    ))
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
