//! The validated submission ([`DiscoveryResults`]) and what is made of it: the discovery
//! context, the coordination-log entry and the confirmation for the agent.

use crate::builder::best_practices;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
    /// Types that were listed more than once at the same version (each kept once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeated: Vec<String>,
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
        if !self.repeated.is_empty() {
            s.push_str(&format!(
                "Listed more than once, kept once: {}.\n",
                self.repeated.join(", ")
            ));
        }
        s.push_str("Discovery is complete; the builder will create and connect these nodes next.");
        s
    }
}

fn serialize_version<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}
