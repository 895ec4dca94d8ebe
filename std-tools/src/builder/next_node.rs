//! The node a build's last search found and the workflow still lacks, for a graph's nudge
//! after the model repeated that search (`searched_node` in the DSL).
//!
//! A small model searched "email", got `n8n-nodes-base.emailSend` first, and sent the same
//! search again; told to take the next step, and made to call `add_nodes`, it added the node of
//! its *first* search once more (`NODE_EXISTS`), then searched "email" again, until the repeat
//! guard ended the turn. Naming the node from the results turns "take the next step" into a
//! step it can copy. Only a result whose type or label holds a word of the query is named (a
//! search for "order" listed Sort and Edit Image: naming those would mislead).

use crate::workflow::Workflow;
use serde_json::Value;

/// One result line of `search_nodes`: `- <type> (<label>, version …): … Inputs [...], …`.
struct Hit<'a> {
    node_type: &'a str,
    label: &'a str,
    trigger: bool,
}

fn parse(line: &str) -> Option<Hit<'_>> {
    let rest = line.strip_prefix("- ")?;
    let (node_type, rest) = rest.split_once(" (")?;
    let label = rest.split_once(", version").map_or(rest, |(l, _)| l).trim();
    if node_type.contains(' ') || !node_type.contains('.') {
        return None;
    }
    Some(Hit {
        node_type,
        label,
        trigger: line.contains("Inputs []") || node_type.ends_with("Trigger"),
    })
}

/// The text of the newest `search_nodes` result that did not fail, in `messages`.
fn last_search(messages: &[Value]) -> Option<&str> {
    messages.iter().rev().find_map(|m| {
        let is_search = m.get("type").and_then(Value::as_str) == Some("tool")
            && m.get("name").and_then(Value::as_str) == Some("search_nodes")
            && m.get("status").and_then(Value::as_str) != Some("error");
        is_search
            .then(|| m.get("content").and_then(Value::as_str))
            .flatten()
    })
}

/// The query of a result block's heading (`Found 3 nodes matching "email":`), lowercased.
fn heading_query(line: &str) -> Option<String> {
    let rest = line.strip_prefix("Found ")?;
    let (_, quoted) = rest.split_once("matching \"")?;
    let (query, _) = quoted.split_once('"')?;
    Some(query.to_lowercase())
}

/// Whether a hit names the query in its type or label: a search for "order" listed Sort and
/// Edit Image ("…adding border…"), and naming those would send the model the wrong way.
fn names_query(hit: &Hit<'_>, query: &str) -> bool {
    let haystack = format!("{} {}", hit.node_type, hit.label).to_lowercase();
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .any(|w| haystack.contains(w))
}

/// The first node type of the newest successful search that names the query in its type or
/// label and that `workflow` does not hold (a trigger only while the workflow has none), as
/// "`type` (Label)"; `None` when there is none.
pub fn searched_node(messages: &[Value], workflow: &Workflow) -> Option<String> {
    let text = last_search(messages)?;
    let has_trigger = workflow
        .nodes
        .iter()
        .any(|n| n.node_type.ends_with("Trigger") || n.node_type.ends_with(".webhook"));
    let mut query: Option<String> = None;
    for line in text.lines() {
        if let Some(q) = heading_query(line) {
            query = Some(q);
            continue;
        }
        if !line.starts_with("- ") {
            // Another kind of block (suggestions, a sub-node search): no query to match.
            query = None;
            continue;
        }
        let (Some(hit), Some(q)) = (parse(line), query.as_deref()) else {
            continue;
        };
        let fits = names_query(&hit, q)
            && !(hit.trigger && has_trigger)
            && !workflow.nodes.iter().any(|n| n.node_type == hit.node_type);
        if fits {
            return Some(format!("`{}` ({})", hit.node_type, hit.label));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The search result of a recorded run (case `daily-weather-report`), verbatim.
    const EMAIL: &str = "Found 4 nodes matching \"email\":\n\
        - n8n-nodes-base.emailSend (Send Email, version 2.1): Sends an email using SMTP protocol. Inputs [\"main\"], outputs [\"main\"].\n\
        - n8n-nodes-base.emailReadImap (Email Trigger (IMAP), version 2.2): Triggers the workflow when a new email is received. Inputs [], outputs [\"main\"].\n\
        - n8n-nodes-base.gmail (Gmail, version 2.2): Consume the Gmail API. Inputs [\"main\"], outputs [\"main\"].";

    fn workflow(types: &[&str]) -> Workflow {
        let nodes: Vec<Value> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({"id": format!("n{i}"), "name": format!("N{i}"), "type": t,
                       "typeVersion": 1, "position": [0, 0], "parameters": {}})
            })
            .collect();
        Workflow::from_value_ref(&json!({"name": "w", "nodes": nodes, "connections": {}}))
            .expect("workflow")
    }

    fn search(content: &str, status: Option<&str>) -> Value {
        let mut m = json!({"type": "tool", "name": "search_nodes", "content": content});
        if let Some(s) = status {
            m["status"] = json!(s);
        }
        m
    }

    #[test]
    fn the_first_result_the_workflow_lacks_is_named() {
        let wf = workflow(&[
            "n8n-nodes-base.manualTrigger",
            "n8n-nodes-base.openWeatherMap",
        ]);
        let messages = vec![
            search(EMAIL, None),
            json!({"type": "tool", "name": "search_nodes", "status": "error",
                   "content": "{\"error\":{\"code\":\"REPEATED_CALL\"}}"}),
        ];
        assert_eq!(
            searched_node(&messages, &wf).as_deref(),
            Some("`n8n-nodes-base.emailSend` (Send Email)")
        );
        // Once Send Email is there, nothing: the IMAP trigger is a second trigger, and Gmail
        // does not name "email".
        let wf = workflow(&["n8n-nodes-base.manualTrigger", "n8n-nodes-base.emailSend"]);
        assert_eq!(searched_node(&messages, &wf), None);
        // Without a trigger, the IMAP trigger is named.
        let wf = workflow(&["n8n-nodes-base.emailSend"]);
        assert_eq!(
            searched_node(&messages, &wf).as_deref(),
            Some("`n8n-nodes-base.emailReadImap` (Email Trigger (IMAP))")
        );
    }

    #[test]
    fn a_trigger_is_named_only_for_a_workflow_without_one() {
        let only_trigger = "Found 1 nodes matching \"imap\":\n\
            - n8n-nodes-base.emailReadImap (Email Trigger (IMAP), version 2.2): Triggers. Inputs [], outputs [\"main\"].";
        let messages = vec![search(only_trigger, None)];
        assert_eq!(
            searched_node(&messages, &workflow(&[])).as_deref(),
            Some("`n8n-nodes-base.emailReadImap` (Email Trigger (IMAP))")
        );
        let wf = workflow(&["n8n-nodes-base.webhook"]);
        assert_eq!(searched_node(&messages, &wf), None);
    }

    #[test]
    fn a_result_that_does_not_name_the_query_is_not_named() {
        // Recorded (case `order-priority-webhook`): a search for "order".
        let order = "Found 3 nodes matching \"order\":\n\
            - n8n-nodes-base.sort (Sort, version 1): Change items order. Inputs [\"main\"], outputs [\"main\"].\n\
            - n8n-nodes-base.editImage (Edit Image, version 1.1): Edits an image like blur, resize or adding border and text. Inputs [\"main\"], outputs [\"main\"].";
        let wf = workflow(&["n8n-nodes-base.webhook"]);
        assert_eq!(searched_node(&[search(order, None)], &wf), None);
    }

    #[test]
    fn no_search_or_no_hits_name_nothing() {
        let wf = workflow(&[]);
        assert_eq!(searched_node(&[], &wf), None);
        let none = "No nodes found matching \"priority\". Logic that no service provides is \
                    built from core nodes: n8n-nodes-base.if (a condition, two outputs).";
        assert_eq!(searched_node(&[search(none, None)], &wf), None);
    }
}
