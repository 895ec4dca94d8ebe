//! What can go wrong talking to n8n, each case saying what to fix.

use serde_json::Value;

/// An error from the n8n client. The message of each variant tells the user what to change:
/// the key on 401, the id on 404, the node n8n names on 400.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client is not configured (no URL or key, or a malformed URL).
    #[error("{0}")]
    Config(String),
    /// Nothing answered at the instance's address.
    #[error(
        "cannot reach n8n at {url}: {reason} (is n8n running there? set N8N_API_URL or --n8n-url)"
    )]
    Unreachable {
        /// The address tried.
        url: String,
        /// The transport's reason.
        reason: String,
    },
    /// n8n did not answer in time.
    #[error("n8n at {url} did not answer within {secs} s")]
    Timeout {
        /// The request's address.
        url: String,
        /// The timeout.
        secs: u64,
    },
    /// The API key was refused.
    #[error("n8n refused the API key (401 on {url}): check N8N_API_KEY (create one in n8n under Settings > n8n API)")]
    Unauthorized {
        /// The request's address.
        url: String,
    },
    /// The key is valid but may not do this (a missing scope, or a licensed feature).
    #[error("n8n forbids {url} (403): {message}")]
    Forbidden {
        /// The request's address.
        url: String,
        /// n8n's message.
        message: String,
    },
    /// The workflow, execution or tag does not exist.
    #[error("n8n has no {what} {id} (404): check the id")]
    NotFound {
        /// `workflow`, `execution`, `tag`, `credential type`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// n8n refused the request's content (400): its message, and the node it names if any.
    #[error("n8n rejected the {what}: {message}{}", node.as_ref().map(|n| format!(" (node \"{n}\")")).unwrap_or_default())]
    Rejected {
        /// What was sent: `workflow`, `activation`, …
        what: &'static str,
        /// n8n's message.
        message: String,
        /// The node the message concerns, when it names one.
        node: Option<String>,
    },
    /// n8n failed (5xx) or kept answering 429 after the retries.
    #[error("n8n failed ({status} on {url}) after {attempts} attempt(s): {message}")]
    Server {
        /// The last status.
        status: u16,
        /// The request's address.
        url: String,
        /// n8n's message.
        message: String,
        /// How many requests were made.
        attempts: u32,
    },
    /// Any other status.
    #[error("n8n answered {status} on {url}: {message}")]
    Status {
        /// The status.
        status: u16,
        /// The request's address.
        url: String,
        /// n8n's message.
        message: String,
    },
    /// The answer was not the JSON expected.
    #[error("unexpected answer from n8n on {url}: {reason}")]
    Decode {
        /// The request's address.
        url: String,
        /// What was wrong.
        reason: String,
    },
}

impl ClientError {
    /// The node n8n's rejection names, if any.
    pub fn node(&self) -> Option<&str> {
        match self {
            ClientError::Rejected { node, .. } => node.as_deref(),
            _ => None,
        }
    }

    /// Whether n8n judged the content (400): the workflow should be fixed, not the setup.
    pub fn is_rejection(&self) -> bool {
        matches!(self, ClientError::Rejected { .. })
    }
}

/// n8n's message from an error body (`{"message": …}`, sometimes with a `description`), or
/// the raw text.
pub(crate) fn message_of(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            let message = v["message"].as_str().unwrap_or_default();
            let description = v["description"].as_str().unwrap_or_default();
            match (message.is_empty(), description.is_empty()) {
                (false, false) => format!("{message}: {description}"),
                (false, true) => message.to_string(),
                (true, false) => description.to_string(),
                (true, true) => body.trim().chars().take(500).collect(),
            }
        }
        Err(_) => body.trim().chars().take(500).collect(),
    }
}

/// The node of `workflow` that n8n's `message` concerns: a JSON path such as
/// `request/body/nodes/3/parameters` (the fourth node), or a node name in quotes.
pub fn node_named_in(message: &str, workflow: Option<&Value>) -> Option<String> {
    let nodes = workflow.and_then(|w| w["nodes"].as_array())?;
    if let Some(rest) = message.split("nodes/").nth(1) {
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(i) = digits.parse::<usize>() {
            if let Some(name) = nodes.get(i).and_then(|n| n["name"].as_str()) {
                return Some(name.to_string());
            }
        }
    }
    // The longest quoted name wins ("Set" is inside "Set Fields").
    nodes
        .iter()
        .filter_map(|n| n["name"].as_str())
        .filter(|name| {
            ["\"", "'", "`"]
                .iter()
                .any(|q| message.contains(&format!("{q}{name}{q}")))
        })
        .max_by_key(|name| name.len())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_path_or_a_quoted_name_names_the_node() {
        let wf = json!({"nodes": [{"name": "Start"}, {"name": "Set"}, {"name": "Set Fields"}]});
        assert_eq!(
            node_named_in("request/body/nodes/1/parameters must be object", Some(&wf)),
            Some("Set".into())
        );
        assert_eq!(
            node_named_in("Node \"Set Fields\" has issues", Some(&wf)),
            Some("Set Fields".into())
        );
        assert_eq!(node_named_in("something else", Some(&wf)), None);
        assert_eq!(node_named_in("request/body/nodes/9/x", Some(&wf)), None);
    }

    #[test]
    fn messages_come_from_the_body() {
        assert_eq!(message_of(r#"{"message":"bad"}"#), "bad");
        assert_eq!(
            message_of(r#"{"message":"bad","description":"why"}"#),
            "bad: why"
        );
        assert_eq!(message_of("plain"), "plain");
    }
}
