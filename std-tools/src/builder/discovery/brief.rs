//! The discovery results as the later phases read them: plain text for the opening message of
//! the builder and configurator phases (`discovery_brief(discovery_context)` in the graphs).
//!
//! The phases used to see the discovery context as JSON in the context sent after the
//! conversation on every call. That part never changes within a phase, and with the best
//! practices it was most of each request (a local model's builder call read 11 822 prompt
//! tokens, all of them again on the next call). In the phase's first message it is read once
//! and the server's prompt cache keeps it; as text it is also shorter than escaped JSON.

use super::results::DiscoveryResults;
use serde_json::Value;

/// `discovery_context` (as the `submit_discovery_results` tool writes it) as text for a
/// phase's opening message, starting with a blank line; `""` when it holds no results.
pub fn discovery_brief(context: &Value) -> String {
    let Ok(results) = serde_json::from_value::<DiscoveryResults>(context.clone()) else {
        return String::new();
    };
    if results.nodes_found.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n\nThe node types discovery chose for this request (use these full type names and \
         versions):\n",
    );
    for n in &results.nodes_found {
        s.push_str(&format!(
            "- {} (version {})",
            n.node_name,
            version(n.version)
        ));
        let reasoning = n.reasoning.trim();
        if !reasoning.is_empty() {
            s.push_str(": ");
            s.push_str(reasoning);
        }
        for p in &n.connection_changing_parameters {
            let values: Vec<String> = p.possible_values.iter().map(value_text).collect();
            s.push_str(&format!(
                "\n  its connections depend on `{}`: {}",
                p.name,
                values.join(" | ")
            ));
        }
        s.push('\n');
    }
    let summary = results.summary.trim();
    if !summary.is_empty() {
        s.push_str(&format!("Discovery's summary: {summary}\n"));
    }
    if let Some(practices) = context["bestPractices"].as_str() {
        if !practices.trim().is_empty() {
            s.push_str(&format!(
                "\nBest practices for this kind of workflow ({}):\n{}\n",
                results.techniques.join(", "),
                practices.trim()
            ));
        }
    }
    s
}

/// A version as n8n writes it: `2`, `2.1`.
fn version(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_results_is_no_text() {
        assert_eq!(discovery_brief(&json!({})), "");
        assert_eq!(discovery_brief(&json!(null)), "");
        assert_eq!(
            discovery_brief(&json!({"nodesFound": [], "summary": ""})),
            ""
        );
    }

    #[test]
    fn each_node_on_its_line_with_the_parameters_that_change_its_connections() {
        let context = json!({
            "nodesFound": [
                {"nodeName": "n8n-nodes-base.webhook", "version": 2, "reasoning": "Receives the order.",
                 "connectionChangingParameters": []},
                {"nodeName": "@n8n/n8n-nodes-langchain.agent", "version": 2.2, "reasoning": "Classifies it.",
                 "connectionChangingParameters": [{"name": "hasOutputParser", "possibleValues": [true, false]}]}
            ],
            "techniques": ["triage"],
            "summary": "A webhook and an agent.",
            "bestPractices": "# Triage\nRoute by class."
        });
        let text = discovery_brief(&context);
        assert!(
            text.starts_with("\n\nThe node types discovery chose"),
            "{text}"
        );
        assert!(
            text.contains("- n8n-nodes-base.webhook (version 2): Receives the order.\n"),
            "{text}"
        );
        assert!(text.contains(
            "- @n8n/n8n-nodes-langchain.agent (version 2.2): Classifies it.\n  its connections depend on `hasOutputParser`: true | false\n"
        ), "{text}");
        assert!(
            text.contains("Discovery's summary: A webhook and an agent.\n"),
            "{text}"
        );
        assert!(
            text.ends_with("(triage):\n# Triage\nRoute by class.\n"),
            "{text}"
        );
    }
}
