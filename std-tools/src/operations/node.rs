//! The node that applies the queued operations to the workflow.

use super::{apply_operations_with, parse_operations, ApplyNote};
use crate::catalogue::Catalogue;
use crate::workflow::Workflow;
use agentgraph_runtime::{Node, NodeError, TaskContext, Update};
use async_trait::async_trait;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// A graph node that applies the queued operations to the workflow: reads the workflow and
/// operations channels, writes the new workflow and `null` to the operations channel (which the
/// [`OperationsReducer`](super::OperationsReducer) reads as "clear the queue"). Writes nothing
/// when the queue is empty. An empty or `null` workflow channel is read as an empty workflow.
///
/// It never fails: a batch that cannot be applied (an operation fails, the queue or the
/// workflow cannot be read) leaves the workflow as it was and the queue is still cleared, so the
/// next batch starts clean. What the agent must know — the batch was not applied, or it was
/// applied with [`ApplyNote`]s (skipped operations, renamed nodes, dropped connections) — is
/// appended to the last tool message of the batch in the messages channel, when one is set
/// ([`Self::with_messages`]; without a tool message after the last AI message, it becomes a new
/// human message), and emitted as a custom event `{"tool": "apply_operations", "status":
/// "error"|"note", "title"}` (shown by `agentgraph chat`).
#[derive(Clone)]
pub struct ApplyOperationsNode {
    /// The channel holding the workflow JSON (default `workflow`).
    pub workflow_channel: String,
    /// The channel holding the operations queue (default `operations`).
    pub operations_channel: String,
    /// The messages channel the agent reads, where failures and notes go (default: none).
    pub messages_channel: Option<String>,
    /// The node catalogue, to place nodes moved off a taken position like `add_nodes` does
    /// (default: none, they move to the right).
    pub catalogue: Option<Arc<Catalogue>>,
}

impl fmt::Debug for ApplyOperationsNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApplyOperationsNode")
            .field("workflow_channel", &self.workflow_channel)
            .field("operations_channel", &self.operations_channel)
            .field("messages_channel", &self.messages_channel)
            .field("catalogue", &self.catalogue.is_some())
            .finish()
    }
}

impl Default for ApplyOperationsNode {
    fn default() -> Self {
        ApplyOperationsNode {
            workflow_channel: "workflow".into(),
            operations_channel: "operations".into(),
            messages_channel: None,
            catalogue: None,
        }
    }
}

/// What one run of an [`ApplyOperationsNode`] does.
#[derive(Debug, Clone)]
pub struct ApplyOutcome {
    /// The channel writes.
    pub update: Update,
    /// Why the batch was not applied (`code: message`), if it was not.
    pub error: Option<String>,
    /// The notes of an applied batch.
    pub notes: Vec<ApplyNote>,
}

impl ApplyOutcome {
    /// What the agent is told, if anything.
    pub fn notice(&self) -> Option<String> {
        if let Some(error) = &self.error {
            return Some(format!(
                "[workflow update failed] The workflow changes queued by your last tool calls \
                 were NOT applied; the workflow is unchanged ({error}). None of the changes those \
                 calls reported happened: check the workflow and make the ones still needed again."
            ));
        }
        if self.notes.is_empty() {
            return None;
        }
        let mut text = String::from(
            "[workflow update] The changes of your last tool calls were applied, with these \
             differences:",
        );
        for note in &self.notes {
            text.push_str("\n- ");
            text.push_str(&note.to_string());
        }
        Some(text)
    }

    /// The custom event that shows the outcome, if there is something to show.
    pub fn event(&self) -> Option<Value> {
        let (status, title) = match (&self.error, self.notes.as_slice()) {
            (Some(error), _) => ("error", format!("workflow changes not applied: {error}")),
            (None, []) => return None,
            (None, notes) => (
                "note",
                format!(
                    "workflow changes applied: {}",
                    notes
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ),
        };
        Some(serde_json::json!({"tool": "apply_operations", "status": status, "title": title}))
    }
}

fn is_type(m: &Value, kind: &str) -> bool {
    m.get("type").and_then(Value::as_str) == Some(kind)
}

/// `notice` appended to the content of a tool message.
fn with_notice(content: Option<&Value>, notice: &str) -> Value {
    let sep = "\n\n";
    match content {
        None | Some(Value::Null) => Value::String(notice.to_string()),
        Some(Value::String(s)) if s.is_empty() => Value::String(notice.to_string()),
        Some(Value::String(s)) => Value::String(format!("{s}{sep}{notice}")),
        Some(Value::Array(parts)) => {
            let mut parts = parts.clone();
            parts.push(serde_json::json!({"type": "text", "text": format!("{sep}{notice}")}));
            Value::Array(parts)
        }
        Some(other) => Value::String(format!("{other}{sep}{notice}")),
    }
}

/// The messages write that shows `notice` to the agent: its last tool message after the last AI
/// message, rewritten (same id) with the notice appended; else a new human message.
fn notice_message(messages: Option<&Value>, notice: &str) -> Value {
    let list = messages.and_then(Value::as_array).map(Vec::as_slice);
    let batch = list
        .unwrap_or_default()
        .iter()
        .rev()
        .take_while(|m| !is_type(m, "ai"))
        .find(|m| is_type(m, "tool") && m.get("id").and_then(Value::as_str).is_some());
    match batch {
        Some(tool) => {
            let mut m = tool.clone();
            m["content"] = with_notice(tool.get("content"), notice);
            Value::Array(vec![m])
        }
        None => serde_json::json!([{"type": "human", "content": notice}]),
    }
}

impl ApplyOperationsNode {
    /// The node on channels `workflow` and `operations`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The node on other channels.
    pub fn with_channels(workflow: impl Into<String>, operations: impl Into<String>) -> Self {
        ApplyOperationsNode {
            workflow_channel: workflow.into(),
            operations_channel: operations.into(),
            ..Self::default()
        }
    }

    /// Reports failures and notes in this messages channel.
    pub fn with_messages(mut self, messages: impl Into<String>) -> Self {
        self.messages_channel = Some(messages.into());
        self
    }

    /// Places nodes moved off a taken position with this catalogue.
    pub fn with_catalogue(mut self, catalogue: Arc<Catalogue>) -> Self {
        self.catalogue = Some(catalogue);
        self
    }

    /// The update this node makes for the given channel values (`None`: empty channel), without
    /// a messages channel.
    pub fn compute(&self, workflow: Option<&Value>, operations: Option<&Value>) -> Update {
        self.outcome(workflow, operations, None).update
    }

    /// What this node does for the given channel values (`None`: empty channel); `messages` is
    /// the messages channel's value (read only when there is something to tell).
    pub fn outcome(
        &self,
        workflow: Option<&Value>,
        operations: Option<&Value>,
        messages: Option<&Value>,
    ) -> ApplyOutcome {
        let applied = match operations.map(parse_operations) {
            None => Ok(None),
            Some(Err(e)) => Err(format!("invalid_operations: {e}")),
            Some(Ok(ops)) if ops.is_empty() => Ok(None),
            Some(Ok(ops)) => match workflow {
                None | Some(Value::Null) => Ok(Workflow::default()),
                Some(v) => {
                    Workflow::from_value_ref(v).map_err(|e| format!("invalid_workflow: {e}"))
                }
            }
            .and_then(|current| {
                apply_operations_with(&current, &ops, self.catalogue.as_deref())
                    .map(Some)
                    .map_err(|e| format!("operation_failed: {e}"))
            }),
        };
        let mut out = ApplyOutcome {
            update: Update::new(),
            error: None,
            notes: Vec::new(),
        };
        match applied {
            Ok(None) => return out,
            Ok(Some(applied)) => {
                out.update = out
                    .update
                    .set(self.workflow_channel.clone(), applied.workflow.to_value());
                out.notes = applied.notes;
            }
            Err(error) => out.error = Some(error),
        }
        // Applied or not, the batch is done: a failing batch must not block every later one.
        out.update = out.update.set(self.operations_channel.clone(), Value::Null);
        if let (Some(channel), Some(notice)) = (&self.messages_channel, out.notice()) {
            out.update = out
                .update
                .set(channel.clone(), notice_message(messages, &notice));
        }
        out
    }
}

#[async_trait]
impl Node for ApplyOperationsNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let state = ctx.state();
        let messages = self
            .messages_channel
            .as_deref()
            .and_then(|channel| state.get(channel));
        let out = self.outcome(
            state.get(&self.workflow_channel),
            state.get(&self.operations_channel),
            messages,
        );
        if let Some(error) = &out.error {
            tracing::warn!(%error, "apply_operations: batch not applied, queue cleared");
        }
        if let Some(event) = out.event() {
            ctx.emit_custom(event).await;
        }
        Ok(out.update)
    }
}
