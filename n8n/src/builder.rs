//! The shipped builder graphs and how a built workflow is shown to people.

use serde_json::Value;
use std::path::PathBuf;

/// The names of the shipped builder graphs.
pub const BUILDER_GRAPHS: [&str; 2] = ["single", "multi"];

/// The graph file a builder name designates: `single` and `multi` are
/// `graphs/workflow-builder/{single,multi}-agent.ag` under the current directory; anything
/// else is a path. Errors say what is missing.
pub fn builder_graph(arg: &str) -> Result<PathBuf, String> {
    let shipped = BUILDER_GRAPHS.contains(&arg);
    let path = if shipped {
        PathBuf::from(format!("graphs/workflow-builder/{arg}-agent.ag"))
    } else {
        PathBuf::from(arg)
    };
    if path.exists() {
        Ok(path)
    } else if shipped {
        Err(format!(
            "{} not found: run chat from the repository root, or pass --graph PATH",
            path.display()
        ))
    } else {
        Err(format!("graph file {} not found", path.display()))
    }
}

/// The workflow for people: its name, its nodes with their types, its connections.
pub fn workflow_summary(wf: &Value) -> String {
    let mut s = String::new();
    let name = wf["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("(unnamed)");
    let nodes = wf["nodes"].as_array().cloned().unwrap_or_default();
    s.push_str(&format!("workflow: {name} ({} nodes)\n", nodes.len()));
    for n in &nodes {
        s.push_str(&format!(
            "  {} [{}]\n",
            n["name"].as_str().unwrap_or("?"),
            n["type"].as_str().unwrap_or("?")
        ));
    }
    if let Some(conns) = wf["connections"].as_object() {
        for (source, kinds) in conns {
            let Some(kinds) = kinds.as_object() else {
                continue;
            };
            for (kind, outputs) in kinds {
                for output in outputs.as_array().into_iter().flatten() {
                    for target in output.as_array().into_iter().flatten() {
                        s.push_str(&format!(
                            "  {source} → {} ({kind})\n",
                            target["node"].as_str().unwrap_or("?")
                        ));
                    }
                }
            }
        }
    }
    s
}

/// The workflow channel of a builder graph's state.
pub fn workflow_of(values: &Value) -> &Value {
    &values["workflow"]
}
