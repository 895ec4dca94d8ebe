//! The verify loop: a deterministic state machine an agent reports each verification verdict
//! to (`report_verdict`), which answers with the next step — so the build → verify → fix cycle
//! does not depend on the model's judgement of when to stop:
//!
//! ```text
//! verifying ─success──────────────► done           (finalize: report the verified result)
//!     ├─needs_patch──► patching  ─► verifying      (fix the failing part, run again)
//!     ├─needs_rebuild► rebuilding ─► verifying     (build it again, run again)
//!     └─failed, the same failure twice, or too many attempts ─► failed_terminal (stop, report)
//! ```
//!
//! The loop's state is kept in a thread channel (`verify_loop`, type `json`; the tool's setting
//! `channel`), keyed by what is verified (`subject`), so several workflows can be verified in
//! one thread. A failure's signature is its text with digits and case folded.

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

/// The tool's name.
pub const REPORT_VERDICT: &str = "report_verdict";
/// The default channel of the loop's state.
pub const VERIFY_LOOP: &str = "verify_loop";
/// Fix attempts before the loop stops.
pub const MAX_ATTEMPTS: u64 = 3;

/// Records verdicts and says what to do next.
pub struct ReportVerdictTool;

/// A failure's signature: lower case, digits dropped, whitespace collapsed.
fn signature(failure: &str) -> String {
    failure
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The next state and the guidance for a verdict on a subject in state `state`.
pub fn step(state: &Value, verdict: &str, failure: &str) -> (Value, String) {
    let attempts = state["attempts"].as_u64().unwrap_or(0);
    let mut seen: Vec<String> = state["signatures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect();
    let sig = signature(failure);
    let stopped = state["phase"] == "failed_terminal";
    let (phase, next) = match verdict {
        "success" => (
            "done",
            "Finalize: report the verified result to the user.".to_string(),
        ),
        // Terminal stays terminal: only a success ends it.
        _ if stopped => (
            "failed_terminal",
            "Stop: verification of this already stopped. Report the failure and what you tried \
             to the user; do not fix it again."
                .to_string(),
        ),
        "failed" => (
            "failed_terminal",
            "Stop: report what fails and what you tried; do not try again.".to_string(),
        ),
        _ if !sig.is_empty() && seen.contains(&sig) => (
            "failed_terminal",
            "Stop: the same failure happened twice, so another fix of the same kind will not \
             help. Report the failure and what you tried to the user."
                .to_string(),
        ),
        _ if attempts >= MAX_ATTEMPTS => (
            "failed_terminal",
            format!("Stop after {MAX_ATTEMPTS} fixes: report the remaining failure to the user."),
        ),
        "needs_rebuild" => (
            "rebuilding",
            "Build it again from the request (the structure is wrong), then verify again."
                .to_string(),
        ),
        _ => (
            "patching",
            "Fix only the failing part named in the failure, then verify again.".to_string(),
        ),
    };
    let reason = match (phase, verdict) {
        ("failed_terminal", _) if stopped => "stopped",
        ("failed_terminal", "failed") => "failed",
        ("failed_terminal", _) if !sig.is_empty() && seen.contains(&sig) => "repeated",
        ("failed_terminal", _) => "attempts",
        _ => "",
    };
    if !sig.is_empty() && !seen.contains(&sig) {
        seen.push(sig);
    }
    let attempts = match phase {
        "patching" | "rebuilding" => attempts + 1,
        _ => attempts,
    };
    let mut next_state = json!({"phase": phase, "attempts": attempts, "signatures": seen});
    // What the graph's stop message says (see `verify_gate`).
    if phase == "failed_terminal" {
        next_state["reason"] = json!(reason);
        next_state["failure"] = json!(failure.trim());
    }
    (next_state, next)
}

#[async_trait::async_trait]
impl Tool for ReportVerdictTool {
    fn name(&self) -> &str {
        REPORT_VERDICT
    }

    fn description(&self) -> &str {
        "After verifying something you built or fixed (e.g. running a workflow), report the \
         verdict: success, needs_patch, needs_rebuild or failed, with the failure. The answer \
         says what to do next; follow it (it stops the loop when a failure repeats)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "subject": {"type": "string", "description": "What is verified, e.g. a workflow id."},
                "verdict": {"type": "string", "enum": ["success", "needs_patch", "needs_rebuild", "failed"]},
                "failure": {"type": "string", "description": "The failure, as reported (node and error)."}
            },
            "required": ["subject", "verdict"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let subject = args["subject"].as_str().unwrap_or("").trim().to_string();
        if subject.is_empty() {
            return Err(ToolError::new(
                "INVALID_ARGUMENTS",
                "`subject` must name what is verified",
            ));
        }
        let verdict = args["verdict"].as_str().unwrap_or("");
        let failure = args["failure"].as_str().unwrap_or("");
        if verdict != "success" && failure.trim().is_empty() {
            return Err(ToolError::new(
                "INVALID_ARGUMENTS",
                "give `failure`: the node and error the verification showed",
            ));
        }
        let channel = ctx.settings()["channel"]
            .as_str()
            .unwrap_or(VERIFY_LOOP)
            .to_string();
        if ctx.state().schema().index_of(&channel).is_none() {
            return Err(ToolError::new(
                "NOT_CONFIGURED",
                format!(
                    "report_verdict needs a `{channel}: json = {{}}` channel in the graph's state"
                ),
            ));
        }
        let mut all = ctx
            .state()
            .get(&channel)
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !all.is_object() {
            all = json!({});
        }
        let (state, next) = step(&all[&subject], verdict, failure);
        all[&subject] = state.clone();
        Ok(ToolOutput {
            content: json!({"subject": subject, "phase": state["phase"],
                            "attempts": state["attempts"], "next": next}),
            writes: vec![(channel, all)],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_failure_twice_is_terminal_and_a_new_one_is_patched() {
        let (s, _) = step(
            &Value::Null,
            "needs_patch",
            "Node 'Send' failed: 401 Unauthorized",
        );
        assert_eq!(s["phase"], "patching");
        assert_eq!(s["attempts"], 1);
        let (s2, _) = step(&s, "needs_patch", "node 'send' failed: 403 unauthorized");
        assert_eq!(
            s2["phase"], "failed_terminal",
            "digits and case do not make it new"
        );
        let (s3, _) = step(&s, "needs_rebuild", "Missing trigger");
        assert_eq!(s3["phase"], "rebuilding");
        assert_eq!(s3["attempts"], 2);
        let (done, next) = step(&s3, "success", "");
        assert_eq!(done["phase"], "done");
        assert!(next.starts_with("Finalize"));
    }

    #[test]
    fn too_many_attempts_stop_the_loop() {
        let mut s = Value::Null;
        for i in 0..MAX_ATTEMPTS {
            let failure = format!("error kind {}", ["a", "b", "c", "d"][i as usize]);
            s = step(&s, "needs_patch", &failure).0;
            assert_eq!(s["phase"], "patching");
        }
        assert_eq!(
            step(&s, "needs_patch", "error kind z").0["phase"],
            "failed_terminal"
        );
    }
}
