//! Deploying a builder thread's workflow to a running n8n, shared by `agentgraph chat --n8n`
//! and the server's `/threads/{id}/n8n` routes.
//!
//! A thread deploys to one n8n workflow: the first deploy creates it, later ones update it.
//! Its id is kept in the thread's state, in the [`ID_CHANNEL`] channel both builder graphs
//! declare, written with the runtime's `update_state` (as `END`, so nothing is planned), so any
//! process that opens the thread deploys to the same workflow. A workflow n8n no longer has
//! (deleted in n8n) is created again and the new id recorded.

use crate::client::{workflow_for_n8n, ClientError, N8nClient};
use crate::workflow_of;
use agentgraph_runtime::{CompiledGraph, RunError};
use serde_json::{json, Value};

/// The state channel holding the id of the n8n workflow a thread deploys to.
pub const ID_CHANNEL: &str = "n8n_workflow_id";

/// Why a thread could not be deployed.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// n8n refused the request or could not be reached ([`ClientError::is_rejection`] says
    /// whether the workflow itself should change).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The thread has no checkpoint.
    #[error("thread {0} has no state")]
    NoThread(String),
    /// The thread's last turn has not finished (it waits at an interrupt or was cut short).
    #[error("thread {thread} is in the middle of a turn (next: {next}); finish it first")]
    Unfinished {
        /// The thread.
        thread: String,
        /// The nodes it would run next.
        next: String,
    },
    /// The graph declares no [`ID_CHANNEL`] channel, so the id could not be kept.
    #[error("graph {0} has no {ID_CHANNEL} channel to keep the n8n workflow id in")]
    NoChannel(String),
    /// Nothing was deployed yet and the workflow has no node.
    #[error("the workflow has no nodes yet: nothing to deploy")]
    Empty,
    /// The state could not be read, or the id not written to it.
    #[error("thread {thread}: {source}")]
    State {
        /// The thread.
        thread: String,
        /// The runtime's error.
        source: RunError,
    },
}

/// A workflow as deployed.
#[derive(Debug, Clone, PartialEq)]
pub struct Deployment {
    /// n8n's workflow id.
    pub id: String,
    /// Where a person opens it in n8n's editor.
    pub url: String,
    /// Whether this deploy created the workflow (else it updated it).
    pub created: bool,
    /// The body sent (the workflow as n8n takes it), to tell whether a later one differs.
    pub sent: Value,
}

/// The n8n workflow id recorded in a thread's state values, if any.
pub fn deployed_id(values: &Value) -> Option<&str> {
    values[ID_CHANNEL]
        .as_str()
        .filter(|id| !id.trim().is_empty())
}

/// Whether a workflow has at least one node.
pub fn has_nodes(workflow: &Value) -> bool {
    workflow["nodes"].as_array().is_some_and(|n| !n.is_empty())
}

/// Sends `workflow` to n8n: updates workflow `id`, or creates one when there is no id or n8n
/// no longer has it.
pub async fn push(
    client: &N8nClient,
    id: Option<&str>,
    workflow: &Value,
) -> Result<Deployment, ClientError> {
    let sent = workflow_for_n8n(workflow);
    if let Some(id) = id {
        match client.update_workflow(id, workflow).await {
            Ok(_) => {
                return Ok(Deployment {
                    id: id.to_string(),
                    url: client.editor_url(id),
                    created: false,
                    sent,
                })
            }
            Err(ClientError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let created = client.create_workflow(workflow).await?;
    let id = match &created["id"] {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(ClientError::Decode {
                url: client.base_url().to_string(),
                reason: "the created workflow has no id".into(),
            })
        }
    };
    Ok(Deployment {
        url: client.editor_url(&id),
        id,
        created: true,
        sent,
    })
}

/// Records `id` as the n8n workflow of `thread` (a new checkpoint, source `update`).
pub async fn record_id(graph: &CompiledGraph, thread: &str, id: &str) -> Result<(), DeployError> {
    graph
        .update_state(thread, None, json!({ ID_CHANNEL: id }), Some("END"))
        .await
        .map(|_| ())
        .map_err(|source| DeployError::State {
            thread: thread.to_string(),
            source,
        })
}

/// Deploys the workflow of `values` (the thread's state): pushes it to the thread's n8n
/// workflow and records the id when it is new. A workflow without nodes is only sent to a
/// workflow deployed before; a graph without [`ID_CHANNEL`] is refused before anything is sent.
pub async fn deploy_values(
    client: &N8nClient,
    graph: &CompiledGraph,
    thread: &str,
    values: &Value,
) -> Result<Deployment, DeployError> {
    if graph.schema().channel(ID_CHANNEL).is_none() {
        return Err(DeployError::NoChannel(graph.name().to_string()));
    }
    let id = deployed_id(values);
    let workflow = workflow_of(values);
    if id.is_none() && !has_nodes(workflow) {
        return Err(DeployError::Empty);
    }
    let deployment = push(client, id, workflow).await?;
    if id != Some(deployment.id.as_str()) {
        record_id(graph, thread, &deployment.id).await?;
    }
    Ok(deployment)
}

/// The latest state values of a thread whose turn has finished.
pub async fn finished_values(graph: &CompiledGraph, thread: &str) -> Result<Value, DeployError> {
    let state = graph
        .get_state(thread, None)
        .await
        .map_err(|source| DeployError::State {
            thread: thread.to_string(),
            source,
        })?
        .ok_or_else(|| DeployError::NoThread(thread.to_string()))?;
    if !state.next.is_empty() {
        return Err(DeployError::Unfinished {
            thread: thread.to_string(),
            next: state.next.join(", "),
        });
    }
    Ok(state.values)
}

/// Deploys `thread`'s current workflow (see [`deploy_values`]).
pub async fn deploy_thread(
    client: &N8nClient,
    graph: &CompiledGraph,
    thread: &str,
) -> Result<Deployment, DeployError> {
    let values = finished_values(graph, thread).await?;
    deploy_values(client, graph, thread, &values).await
}

/// Deploys `thread`'s current workflow, then activates it in n8n (its triggers start).
pub async fn activate_thread(
    client: &N8nClient,
    graph: &CompiledGraph,
    thread: &str,
) -> Result<Deployment, DeployError> {
    let deployment = deploy_thread(client, graph, thread).await?;
    client.activate_workflow(&deployment.id).await?;
    Ok(deployment)
}

/// A rejection as a validation finding the builder's next turn can act on, e.g. `n8n rejected
/// the workflow: node "Set": request/body/nodes/1/parameters must be object`; `None` for
/// errors that are not about the workflow (unreachable, key, 5xx).
pub fn finding(e: &ClientError) -> Option<String> {
    let ClientError::Rejected {
        what,
        message,
        node,
    } = e
    else {
        return None;
    };
    let verb = if *what == "activation" {
        "n8n refused to activate the workflow"
    } else {
        "n8n rejected the workflow"
    };
    Some(match node {
        Some(node) => format!("{verb}: node \"{node}\": {message}"),
        None => format!("{verb}: {message}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_read_from_the_state() {
        assert_eq!(deployed_id(&json!({"n8n_workflow_id": "abc"})), Some("abc"));
        assert_eq!(deployed_id(&json!({"n8n_workflow_id": " "})), None);
        assert_eq!(deployed_id(&json!({"n8n_workflow_id": null})), None);
        assert_eq!(deployed_id(&json!({})), None);
    }

    #[test]
    fn rejections_become_findings_and_other_errors_do_not() {
        let rejected = ClientError::Rejected {
            what: "workflow",
            message: "request/body/nodes/0/parameters must be object".into(),
            node: Some("Start".into()),
        };
        assert_eq!(
            finding(&rejected).as_deref(),
            Some(
                "n8n rejected the workflow: node \"Start\": \
                 request/body/nodes/0/parameters must be object"
            )
        );
        let activation = ClientError::Rejected {
            what: "activation",
            message: "no trigger".into(),
            node: None,
        };
        assert_eq!(
            finding(&activation).as_deref(),
            Some("n8n refused to activate the workflow: no trigger")
        );
        let unauthorized = ClientError::Unauthorized { url: "u".into() };
        assert_eq!(finding(&unauthorized), None);
    }

    #[test]
    fn only_workflows_with_nodes_count_as_built() {
        assert!(has_nodes(&json!({"nodes": [{"name": "A"}]})));
        assert!(!has_nodes(&json!({"nodes": []})));
        assert!(!has_nodes(&json!({})));
    }
}
