//! `chat --n8n`: the thread's workflow deployed to a running n8n after each turn that changes
//! it, and the `/deploy`, `/activate`, `/open` commands.
//!
//! The thread's n8n workflow id is kept in its state ([`deploy::ID_CHANNEL`]) and in the
//! session (a graph without the channel keeps it for the session only). A rejection (400) is
//! shown and handed to the next turn's input as a finding; any other failure leaves the turn's
//! result alone and the next turn deploys again.

use super::Session;
use agentgraph_n8n::client::{workflow_for_n8n, ClientError, N8nClient};
use agentgraph_n8n::deploy::{self, DeployError, Deployment};
use agentgraph_n8n::workflow_of;
use serde_json::{json, Value};

/// The session's link to one n8n instance.
pub(super) struct Link {
    client: N8nClient,
    /// The thread's n8n workflow.
    pub(super) id: Option<String>,
    /// The body last sent, so a turn that left the workflow alone sends nothing.
    sent: Option<Value>,
    /// A rejection the next turn's input carries to the agent.
    finding: Option<String>,
}

impl Link {
    /// The link `--n8n` / `--n8n-url` ask for (`N8N_API_URL`, `N8N_API_KEY`).
    pub(super) fn from_env(url: Option<&str>) -> Result<Link, ClientError> {
        Ok(Link {
            client: N8nClient::from_env_or(url, None)?,
            id: None,
            sent: None,
            finding: None,
        })
    }

    /// A hint when the builder's catalogue is not this instance's own node types: a node or
    /// version from another n8n release may not exist in it (n8n then cannot run the node).
    pub(super) fn catalogue_hint(&self, origin: &agentgraph_n8n::Origin) -> Option<String> {
        let url = self.client.base_url();
        if let agentgraph_n8n::Origin::Instance { source, .. } = origin {
            if agentgraph_n8n::client::normalize_base(&source.url)
                .ok()
                .as_deref()
                == Some(url)
            {
                return None;
            }
        }
        Some(format!(
            "hint: the builder's node types are not those of the n8n at {url}; types or \
             versions it lacks will not run there. `agentgraph catalogue from-n8n {url}` \
             saves that instance's own node types (then used when no other catalogue is set)"
        ))
    }

    /// Forgets the deployed workflow (the session moved to a new thread).
    pub(super) fn reset(&mut self) {
        self.id = None;
        self.sent = None;
        self.finding = None;
    }

    /// `line` with a pending rejection appended, for the agent to fix in this turn.
    pub(super) fn carry_finding(&mut self, line: &str) -> String {
        match self.finding.take() {
            Some(f) => format!("{line}\n\n{f}\nFix the workflow so that n8n accepts it."),
            None => line.to_string(),
        }
    }
}

/// When a deploy happens.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum When {
    /// After a turn or an undo: only when the workflow changed.
    Changed,
    /// `/deploy` and `/activate`: now (the same workflow is sent again).
    Now,
}

impl Session<'_> {
    /// The thread's recorded n8n workflow, read when the session opens a thread.
    pub(super) fn adopt_id(&mut self, values: &Value) {
        let Some(link) = self.n8n.as_mut() else {
            return;
        };
        link.id = deploy::deployed_id(values).map(str::to_string);
        if let Some(id) = link.id.clone() {
            let url = link.client.editor_url(&id);
            self.say(
                json!({"event": "n8n", "action": "linked", "workflow_id": id, "url": url}),
                || format!("n8n: this thread deploys to workflow {id}: {url}"),
            );
        }
    }

    /// Deploys the thread's current workflow; `true` when n8n holds it afterwards.
    pub(super) async fn deploy(&mut self, when: When) -> bool {
        if self.n8n.is_none() {
            if when == When::Now {
                eprintln!("n8n is off: start chat with --n8n (N8N_API_URL, N8N_API_KEY)");
            }
            return false;
        }
        let values = match self.state_values().await {
            Ok(v) => v,
            Err(DeployError::NoThread(_)) => {
                if when == When::Now {
                    eprintln!("nothing to deploy: the thread has no turn yet");
                }
                return false;
            }
            Err(e) => {
                eprintln!("error: cannot deploy: {e}");
                return false;
            }
        };
        let workflow = workflow_of(&values);
        let Some(link) = self.n8n.as_mut() else {
            return false;
        };
        if link.id.is_none() && !deploy::has_nodes(workflow) {
            if when == When::Now {
                eprintln!("nothing to deploy: the workflow has no nodes yet");
            }
            return false;
        }
        if when == When::Changed && link.sent.as_ref() == Some(&workflow_for_n8n(workflow)) {
            return true;
        }
        match deploy::push(&link.client, link.id.as_deref(), workflow).await {
            Ok(d) => {
                link.sent = Some(d.sent.clone());
                link.id = Some(d.id.clone());
                link.finding = None;
                // After an undo that could not branch, the next turn writes it.
                if deploy::deployed_id(&values) != Some(d.id.as_str()) && self.fork_at.is_none() {
                    self.record(&d).await;
                }
                let action = if d.created { "created" } else { "updated" };
                self.say(
                    json!({"event": "n8n", "action": action, "workflow_id": d.id, "url": d.url}),
                    || format!("n8n: {action} workflow {}: {}", d.id, d.url),
                );
                true
            }
            Err(e) => {
                self.failed(&e, "the next turn deploys again");
                false
            }
        }
    }

    /// The state the next turn starts from: the latest, or where `/undo` left it.
    async fn state_values(&self) -> Result<Value, DeployError> {
        let Some(at) = self.fork_at else {
            return deploy::finished_values(&self.graph, &self.thread).await;
        };
        match self.graph.get_state(&self.thread, Some(at)).await {
            Ok(Some(state)) => Ok(state.values),
            Ok(None) => Err(DeployError::NoThread(self.thread.clone())),
            Err(source) => Err(DeployError::State {
                thread: self.thread.clone(),
                source,
            }),
        }
    }

    /// Keeps a new id in the thread's state (a graph without the channel: says so once).
    async fn record(&self, d: &Deployment) {
        if self.graph.schema().channel(deploy::ID_CHANNEL).is_none() {
            if !d.created {
                return;
            }
            eprintln!(
                "warning: the graph has no {} channel: the n8n workflow id is kept for this \
                 session only",
                deploy::ID_CHANNEL
            );
            return;
        }
        if let Err(e) = deploy::record_id(&self.graph, &self.thread, &d.id).await {
            eprintln!("warning: cannot keep the n8n workflow id in the thread: {e}");
        }
    }

    /// `/activate`: deploys what changed, then activates the workflow in n8n.
    pub(super) async fn activate(&mut self) {
        if !self.deploy(When::Changed).await {
            if self.n8n.as_ref().is_some_and(|l| l.id.is_none()) {
                eprintln!("nothing activated: the workflow is not in n8n");
            }
            return;
        }
        let Some((client, id)) = self
            .n8n
            .as_ref()
            .and_then(|l| l.id.clone().map(|id| (l.client.clone(), id)))
        else {
            return;
        };
        match client.activate_workflow(&id).await {
            Ok(_) => {
                let url = client.editor_url(&id);
                self.say(
                    json!({"event": "n8n", "action": "activated", "workflow_id": id, "url": url}),
                    || format!("n8n: activated workflow {id}: {url}"),
                );
            }
            Err(e) => self.failed(&e, "the workflow stays inactive"),
        }
    }

    /// `/open`: the editor URL of the thread's n8n workflow.
    pub(super) fn open(&self) {
        match &self.n8n {
            None => eprintln!("n8n is off: start chat with --n8n (N8N_API_URL, N8N_API_KEY)"),
            Some(Link { id: None, .. }) => {
                eprintln!("nothing deployed yet: /deploy sends the workflow to n8n")
            }
            Some(Link {
                id: Some(id),
                client,
                ..
            }) => {
                let url = client.editor_url(id);
                self.say(
                    json!({"event": "n8n", "action": "open", "workflow_id": id, "url": url}),
                    || format!("open {url}"),
                );
            }
        }
    }

    /// Reports a failed n8n request; a rejection becomes the next turn's finding.
    fn failed(&mut self, e: &ClientError, otherwise: &str) {
        let finding = deploy::finding(e);
        let json = self.ctx.json;
        if json {
            println!(
                "{}",
                json!({"event": "n8n_error", "error": e.to_string(), "node": e.node(),
                       "rejected": e.is_rejection()})
            );
        }
        match finding {
            Some(f) => {
                if !json {
                    eprintln!("error: {e}");
                    println!(
                        "(the thread keeps its workflow; the next turn asks the agent to fix it)"
                    );
                }
                if let Some(link) = self.n8n.as_mut() {
                    link.finding = Some(f);
                }
            }
            None if !json => eprintln!("error: {e} (the thread is intact; {otherwise})"),
            None => {}
        }
    }
}
