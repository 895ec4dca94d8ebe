//! The verify loop enforced by the graph: after a tool step, a subject whose verdicts reached
//! `failed_terminal` ([`super::ReportVerdictTool`]) and was not reported yet sends the run to
//! [`VerifyStopNode`], which tells the user and ends the turn. A model that ignores the tool's
//! `next` and keeps fixing cannot loop: every verdict that leaves a subject terminal stops the
//! run.
//!
//! ```text
//! agent → tools ─(verify_stopped(verify_loop))→ verify_stop → END
//!               └─(otherwise)─────────────────→ agent
//! ```

use agentgraph_runtime::messages::message;
use agentgraph_runtime::{stable_id, Node, NodeError, StateView, TaskContext, Update};
use async_trait::async_trait;
use serde_json::Value;

/// The phase of a subject whose loop is over without success.
pub const FAILED_TERMINAL: &str = "failed_terminal";

/// The subjects of a `verify_loop` value that are terminal and not reported yet, in key order.
pub fn stopped_subjects(verify_loop: &Value) -> Vec<String> {
    verify_loop
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, s)| s["phase"] == FAILED_TERMINAL && s["reported"] != Value::Bool(true))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Whether the loop state in `channel` holds a subject to stop on: the route condition out of
/// the tool step.
pub fn verify_stopped(state: &StateView, channel: &str) -> bool {
    state
        .get(channel)
        .is_some_and(|v| !stopped_subjects(v).is_empty())
}

/// Tells the user that verification stopped (each stopped subject: why, the last failure, the
/// fixes tried) as an AI message, and marks those subjects reported.
#[derive(Clone)]
pub struct VerifyStopNode {
    /// The loop's state (`verify_loop`).
    pub channel: String,
    /// The conversation the message goes to.
    pub messages_channel: String,
}

impl Default for VerifyStopNode {
    fn default() -> Self {
        VerifyStopNode {
            channel: super::VERIFY_LOOP.into(),
            messages_channel: "messages".into(),
        }
    }
}

fn describe(subject: &str, s: &Value) -> String {
    let attempts = s["attempts"].as_u64().unwrap_or(0);
    let why = match s["reason"].as_str() {
        Some("repeated") => "the same failure came back after a fix".to_string(),
        Some("attempts") => format!("{attempts} fixes did not make it pass"),
        Some("stopped") => "it had already stopped, and another fix was reported".to_string(),
        _ => "the failure cannot be fixed here".to_string(),
    };
    let failure = s["failure"].as_str().unwrap_or("").trim();
    let mut text = format!("I stopped verifying `{subject}`: {why}.");
    if !failure.is_empty() {
        text.push_str(&format!(" The last failure: {failure}"));
        if !failure.ends_with('.') {
            text.push('.');
        }
    }
    text.push_str(&format!(" Fixes tried: {attempts}."));
    text
}

#[async_trait]
impl Node for VerifyStopNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let mut all = ctx
            .state()
            .get(&self.channel)
            .cloned()
            .unwrap_or(Value::Null);
        let stopped = stopped_subjects(&all);
        if stopped.is_empty() {
            return Ok(Update::new());
        }
        let mut lines: Vec<String> = stopped.iter().map(|s| describe(s, &all[s])).collect();
        lines.push(
            "Tell me how you want to go on: what to change, or whether to build it differently."
                .into(),
        );
        for s in &stopped {
            all[s]["reported"] = Value::Bool(true);
        }
        let id = format!(
            "verify-stop-{}",
            stable_id(&[&ctx.ns().join("|"), ctx.task_id(), "verify_stop"])
        );
        Ok(Update::new()
            .set(
                self.messages_channel.clone(),
                message("ai", id, lines.join("\n\n")),
            )
            .set(self.channel.clone(), all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_unreported_terminal_subjects_stop() {
        let v = json!({
            "a": {"phase": "patching"},
            "b": {"phase": "failed_terminal"},
            "c": {"phase": "failed_terminal", "reported": true},
            "d": {"phase": "done"}
        });
        assert_eq!(stopped_subjects(&v), ["b"]);
        assert!(stopped_subjects(&json!(null)).is_empty());
    }

    #[test]
    fn the_message_says_why_and_what_failed() {
        let s = json!({"phase": "failed_terminal", "attempts": 1, "reason": "repeated",
                       "failure": "Node 'Send' failed: 401"});
        assert_eq!(
            describe("wf1", &s),
            "I stopped verifying `wf1`: the same failure came back after a fix. The last \
             failure: Node 'Send' failed: 401. Fixes tried: 1."
        );
    }
}
