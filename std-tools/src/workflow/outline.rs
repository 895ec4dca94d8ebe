//! A workflow as a few lines of text for the user: each node with its type and where its
//! output goes, in the order data flows.
//!
//! A builder graph answers with it when the model's own final answer cannot be used (a small
//! model copied the graph's note "The workflow is not finished…" as its answer after it had
//! fixed the workflow): the answer then says what was built, from the workflow itself.

use super::{Workflow, MAIN};
use std::collections::{BTreeSet, VecDeque};

/// The short form of a node type: `n8n-nodes-base.httpRequest` → `httpRequest`.
fn short_type(node_type: &str) -> &str {
    node_type.rsplit('.').next().unwrap_or(node_type)
}

/// Whether the node only feeds other nodes' `ai_*` inputs (a model, a tool, a memory).
fn is_sub_node(wf: &Workflow, name: &str) -> bool {
    let out = wf.outgoing(name, None);
    !out.is_empty() && out.iter().all(|e| e.kind != MAIN)
}

/// The node names in flow order: nodes without a main input (triggers) in file order, each
/// followed breadth-first by what its main outputs reach; then anything left (sub-nodes last).
fn flow_order(wf: &Workflow) -> Vec<String> {
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    let starts = wf.nodes.iter().filter(|n| {
        !n.is_sticky_note()
            && wf.incoming(&n.name, Some(MAIN)).is_empty()
            && !is_sub_node(wf, &n.name)
    });
    let rest = wf.nodes.iter().filter(|n| !n.is_sticky_note());
    for start in starts.chain(rest) {
        let mut queue = VecDeque::from([start.name.clone()]);
        while let Some(name) = queue.pop_front() {
            if !seen.insert(name.clone()) {
                continue;
            }
            for edge in wf.outgoing(&name, Some(MAIN)) {
                queue.push_back(edge.target.node);
            }
            order.push(name);
        }
    }
    order
}

/// One line per node (`- **Name** (type) → Next, Other`; a sub-node says which node uses it
/// and how: `→ AI Agent (ai_languageModel)`), in flow order. Empty for an empty workflow.
pub fn outline(wf: &Workflow) -> String {
    let mut lines = Vec::new();
    for name in flow_order(wf) {
        let Some(node) = wf.node_by_name(&name) else {
            continue;
        };
        let mut line = format!("- **{}** ({})", node.name, short_type(&node.node_type));
        let targets: Vec<String> = wf
            .outgoing(&name, None)
            .into_iter()
            .map(|e| {
                if e.kind == MAIN {
                    e.target.node
                } else {
                    format!("{} ({})", e.target.node, e.kind)
                }
            })
            .collect();
        if !targets.is_empty() {
            line.push_str(" → ");
            line.push_str(&targets.join(", "));
        }
        lines.push(line);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::outline;
    use crate::workflow::Workflow;
    use serde_json::json;

    fn node(name: &str, kind: &str) -> serde_json::Value {
        json!({"name": name, "type": kind, "typeVersion": 1, "position": [0, 0], "parameters": {}})
    }

    #[test]
    fn nodes_follow_the_flow_and_sub_nodes_name_their_use() {
        let wf = Workflow::from_value(json!({
            "nodes": [
                node("Set Review", "n8n-nodes-base.set"),
                node("Model", "@n8n/n8n-nodes-langchain.lmChatOpenAi"),
                node("Check Amount", "n8n-nodes-base.if"),
                node("Order Webhook", "n8n-nodes-base.webhook"),
                node("Note", "n8n-nodes-base.stickyNote"),
            ],
            "connections": {
                "Order Webhook": {"main": [[{"node": "Check Amount", "type": "main", "index": 0}]]},
                "Check Amount": {"main": [[{"node": "Set Review", "type": "main", "index": 0}], []]},
                "Model": {"ai_languageModel": [[{"node": "Check Amount", "type": "ai_languageModel", "index": 0}]]}
            }
        }))
        .expect("workflow");
        assert_eq!(
            outline(&wf),
            "- **Order Webhook** (webhook) → Check Amount\n\
             - **Check Amount** (if) → Set Review\n\
             - **Set Review** (set)\n\
             - **Model** (lmChatOpenAi) → Check Amount (ai_languageModel)"
        );
        assert_eq!(outline(&Workflow::default()), "");
    }
}
