//! Keeping a node's connected ports when its parameters are replaced.
//!
//! Some parameters shape a node's inputs and outputs (an agent's `hasOutputParser`, a vector
//! store's `mode`, a Switch node's `rules`). The parameter updater returns the COMPLETE new
//! parameters, and a model that leaves such a key out (or changes it without being asked)
//! would silently remove ports that have connections. [`preserve_connections`] resolves the
//! ports for the new parameters; when a connected port disappears it restores the old values
//! of the connection-shaping keys that the requested changes did not mention, and when that
//! does not bring the ports back it refuses the update with `WOULD_BREAK_CONNECTIONS`.

use crate::builder::state::codes;
use crate::catalogue::{Catalogue, NodeTypeDescription, PortsSpec};
use crate::workflow::{Workflow, WorkflowNode};
use agentgraph_agents::tools::ToolError;
use serde_json::{Map, Value};

/// One connected port of the node.
#[derive(Debug, Clone, PartialEq)]
struct UsedPort {
    /// `true` for an input of the node, `false` for an output.
    input: bool,
    kind: String,
    index: usize,
    /// `"A" → "B" (kind)` for messages.
    label: String,
}

/// What [`preserve_connections`] decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preserved {
    /// The parameters to write.
    pub parameters: Map<String, Value>,
    /// Keys whose old value was kept (sorted).
    pub restored: Vec<String>,
    /// The connections the restored keys keep working.
    pub kept_connections: Vec<String>,
}

fn connected_ports(workflow: &Workflow, node: &WorkflowNode) -> Vec<UsedPort> {
    let mut out = Vec::new();
    for e in workflow.outgoing(&node.name, None) {
        out.push(UsedPort {
            input: false,
            kind: e.kind.clone(),
            index: e.source_output,
            label: format!("\"{}\" → \"{}\" ({})", e.source, e.target.node, e.kind),
        });
    }
    for e in workflow.incoming(&node.name, None) {
        out.push(UsedPort {
            input: true,
            kind: e.target.kind.clone(),
            index: e.target.index as usize,
            label: format!(
                "\"{}\" → \"{}\" ({})",
                e.source, e.target.node, e.target.kind
            ),
        });
    }
    out
}

/// The used ports that the ports resolved for `params` lack; `None` when the ports cannot be
/// resolved.
fn missing<'a>(
    catalogue: &Catalogue,
    node: &WorkflowNode,
    params: &Map<String, Value>,
    used: &'a [UsedPort],
) -> Option<Vec<&'a UsedPort>> {
    let ports = catalogue
        .ports(
            &node.node_type,
            Some(node.version()),
            &Value::Object(params.clone()),
        )?
        .ok()?;
    Some(
        used.iter()
            .filter(|u| {
                let side = if u.input {
                    &ports.inputs
                } else {
                    &ports.outputs
                };
                side.iter().filter(|p| p.kind == u.kind).count() <= u.index
            })
            .collect(),
    )
}

/// The port expressions' text (empty when both sides are static lists).
fn port_expressions(desc: &NodeTypeDescription) -> String {
    [&desc.inputs, &desc.outputs]
        .into_iter()
        .filter_map(|s| match s {
            PortsSpec::Expression(e) => Some(e.as_str()),
            PortsSpec::List(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the requested changes mention parameter `key` (its name, its display name, or its
/// camelCase words without a leading `has`/`use`/`enable`/`needs`: `hasOutputParser` →
/// "output parser").
pub fn mentioned(key: &str, desc: &NodeTypeDescription, changes: &[String]) -> bool {
    let text = changes.join("\n").to_lowercase();
    if text.contains(&key.to_lowercase()) {
        return true;
    }
    if let Some(p) = desc.properties.iter().find(|p| p.name == key) {
        let d = p.display_name.trim().to_lowercase();
        if !d.is_empty() && text.contains(&d) {
            return true;
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in key.chars() {
        if c.is_uppercase() && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    if words.len() > 1 && matches!(words[0].as_str(), "has" | "use" | "enable" | "needs") {
        words.remove(0);
    }
    words.len() > 1 && text.contains(&words.join(" "))
}

fn restore(params: &mut Map<String, Value>, old: &Map<String, Value>, key: &str) {
    match old.get(key) {
        Some(v) => {
            params.insert(key.to_string(), v.clone());
        }
        None => {
            params.remove(key);
        }
    }
}

/// Checks `new` against the node's connections (see the module docs). Returns the parameters
/// to write (with restored keys) or `WOULD_BREAK_CONNECTIONS`.
pub fn preserve_connections(
    catalogue: &Catalogue,
    desc: &NodeTypeDescription,
    workflow: &Workflow,
    node: &WorkflowNode,
    new: Map<String, Value>,
    changes: &[String],
) -> Result<Preserved, ToolError> {
    let old = &node.parameters;
    let all_used = connected_ports(workflow, node);
    // Only ports that exist now count: a connection that is already dangling is not this
    // update's doing.
    let used: Vec<UsedPort> = match missing(catalogue, node, old, &all_used) {
        Some(dangling) => all_used
            .iter()
            .filter(|u| !dangling.contains(u))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    let done = |parameters: Map<String, Value>| Preserved {
        parameters,
        ..Preserved::default()
    };
    if used.is_empty() {
        return Ok(done(new));
    }
    let broken: Vec<&UsedPort> = match missing(catalogue, node, &new, &used) {
        Some(b) if !b.is_empty() => b,
        _ => return Ok(done(new)),
    };
    let expressions = port_expressions(desc);
    let mut changed: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .filter(|k| expressions.contains(k.as_str()))
        .cloned()
        .collect();
    changed.sort();
    changed.dedup();
    let candidates: Vec<String> = changed
        .iter()
        .filter(|k| !mentioned(k, desc, changes))
        .cloned()
        .collect();
    if !candidates.is_empty() {
        let mut params = new.clone();
        for k in &candidates {
            restore(&mut params, old, k);
        }
        if missing(catalogue, node, &params, &used).is_some_and(|b| b.is_empty()) {
            // Keep only the keys that are needed.
            let mut restored = Vec::new();
            for k in &candidates {
                let mut without = params.clone();
                match new.get(k) {
                    Some(v) => {
                        without.insert(k.clone(), v.clone());
                    }
                    None => {
                        without.remove(k);
                    }
                }
                if missing(catalogue, node, &without, &used).is_some_and(|b| b.is_empty()) {
                    params = without;
                } else {
                    restored.push(k.clone());
                }
            }
            return Ok(Preserved {
                parameters: params,
                restored,
                kept_connections: broken.iter().map(|u| u.label.clone()).collect(),
            });
        }
    }
    let responsible = if changed.is_empty() {
        "the new parameters".to_string()
    } else {
        format!(
            "the change to {}",
            changed
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(ToolError::new(
        codes::WOULD_BREAK_CONNECTIONS,
        format!(
            "updating node \"{}\" would break {} connection(s): {responsible} removes the \
             port(s) they use: {}. Nothing was changed. Remove those connections first \
             (remove_connection where available, otherwise remove_node on the connected node), \
             then update the parameters again; or keep the parameters that shape the node's \
             connections as they are.",
            node.name,
            broken.len(),
            broken
                .iter()
                .map(|u| u.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions() {
        let desc: NodeTypeDescription = serde_json::from_value(serde_json::json!({
            "name": "x.agent", "displayName": "Agent", "description": "", "version": 1,
            "defaults": {}, "inputs": ["main"], "outputs": ["main"],
            "properties": [{"name": "hasOutputParser", "displayName": "Require Specific Output Format",
                            "type": "boolean", "default": false}]
        }))
        .expect("description");
        let ch = |s: &str| vec![s.to_string()];
        assert!(mentioned(
            "hasOutputParser",
            &desc,
            &ch("Remove the output parser")
        ));
        assert!(mentioned(
            "hasOutputParser",
            &desc,
            &ch("set hasOutputParser to false")
        ));
        assert!(mentioned(
            "hasOutputParser",
            &desc,
            &ch("Turn off require specific output format")
        ));
        assert!(!mentioned(
            "hasOutputParser",
            &desc,
            &ch("Set the system message")
        ));
        assert!(mentioned("mode", &desc, &ch("Set mode to insert")));
    }
}
