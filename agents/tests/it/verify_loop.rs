//! The verify loop enforced by the graph: a scripted model that ignores `report_verdict`'s
//! `next` and keeps fixing is stopped by the route out of the tool step
//! (`verify_stopped` → `VerifyStopNode` → END), with a message to the user.

use crate::common::*;
use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::nodes::{has_tool_calls, LlmNode, ToolExecutorNode};
use agentgraph_agents::orchestration::{
    verify_stopped, ReportVerdictTool, VerifyStopNode, VERIFY_LOOP,
};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::*;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A fix that changes nothing, counting its calls.
struct Patch(Arc<AtomicUsize>);

#[async_trait]
impl Tool for Patch {
    fn name(&self) -> &str {
        "patch"
    }
    fn description(&self) -> &str {
        "Patches the workflow."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text("patched"))
    }
}

fn graph(script: Value, patches: Arc<AtomicUsize>) -> CompiledGraph {
    let model = Arc::new(ScriptedModel::from_json(script).expect("script"));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ReportVerdictTool), Arc::new(Patch(patches))];
    let executor = ToolExecutorNode::new(tools);
    let llm = LlmNode::new(model).tools(executor.specs());
    GraphBuilder::new("verify")
        .channel(message_list("messages"))
        .channel(ChannelSpec::new(VERIFY_LOOP, ValueType::Json).default_value(json!({})))
        .node("agent", Arc::new(llm))
        .node("tools", Arc::new(executor))
        .node("verify_stop", Arc::new(VerifyStopNode::default()))
        .edge(START, "agent")
        .route("agent", |s| {
            if has_tool_calls(s, "messages") {
                "tools"
            } else {
                END
            }
        })
        .route("tools", |s| {
            if verify_stopped(s, VERIFY_LOOP) {
                "verify_stop"
            } else {
                "agent"
            }
        })
        .edge("verify_stop", END)
        .compile()
        .expect("compiles")
        .with_checkpointer(memory())
}

fn verdict(verdict: &str, failure: &str) -> Value {
    json!({"node": "agent", "tool_calls": [{"name": "report_verdict",
        "args": {"subject": "wf1", "verdict": verdict, "failure": failure}}]})
}

fn patch() -> Value {
    json!({"node": "agent", "tool_calls": [{"name": "patch", "args": {}}]})
}

fn ask(text: &str) -> Input {
    Input::values(json!({"messages": [{"type": "human", "content": text}]}))
}

fn last_text(out: &RunOutput) -> String {
    out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn the_same_failure_twice_ends_the_turn_whatever_the_model_does_next() {
    let patches = Arc::new(AtomicUsize::new(0));
    // The model would go on patching forever; the script has far more than the loop allows.
    let mut responses = Vec::new();
    for _ in 0..10 {
        responses.push(verdict(
            "needs_patch",
            "Node 'Send' failed: 401 Unauthorized",
        ));
        responses.push(patch());
    }
    let g = graph(json!({ "responses": responses }), patches.clone());
    let out = g
        .invoke(ask("build and verify it"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert!(matches!(out.status, RunStatus::Done), "{:?}", out.status);
    assert_eq!(
        patches.load(Ordering::SeqCst),
        1,
        "one fix, then the repeat stopped it"
    );
    let state = &out.values[VERIFY_LOOP]["wf1"];
    assert_eq!(state["phase"], "failed_terminal");
    assert_eq!(state["reported"], true);
    let text = last_text(&out);
    assert!(
        text.starts_with("I stopped verifying `wf1`: the same failure came back after a fix."),
        "{text}"
    );
    assert!(
        text.contains("Node 'Send' failed: 401 Unauthorized"),
        "{text}"
    );
    // Question, three calls with their results, the stop message.
    assert_eq!(out.values["messages"].as_array().map(Vec::len), Some(8));
}

#[tokio::test]
async fn too_many_fixes_end_the_turn_and_a_stopped_subject_stays_stopped() {
    let patches = Arc::new(AtomicUsize::new(0));
    let mut responses = Vec::new();
    for kind in ["a", "b", "c"] {
        responses.push(verdict("needs_patch", &format!("error of kind {kind}")));
        responses.push(patch());
    }
    responses.push(verdict("needs_patch", "error of kind d"));
    // The next turn's: a new failure on the stopped subject, then a fix.
    responses.push(verdict("needs_patch", "error of kind e"));
    responses.push(patch());
    let g = graph(json!({ "responses": responses }), patches.clone());
    let out = g
        .invoke(ask("fix it"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert_eq!(
        patches.load(Ordering::SeqCst),
        3,
        "three fixes, the fourth refused"
    );
    let text = last_text(&out);
    assert!(
        text.starts_with("I stopped verifying `wf1`: 3 fixes did not make it pass."),
        "{text}"
    );
    assert!(text.contains("error of kind d"), "{text}");

    // A later turn: the model reports a new failure on the stopped subject; the turn ends again
    // (the script's next response would have been a patch).
    let more = g
        .invoke(ask("try once more"), RunConfig::thread("t"))
        .await
        .expect("second turn");
    assert_eq!(patches.load(Ordering::SeqCst), 3, "no fix after the stop");
    assert!(
        last_text(&more).starts_with("I stopped verifying `wf1`: it had already stopped"),
        "{}",
        last_text(&more)
    );
}

#[tokio::test]
async fn a_success_goes_back_to_the_model() {
    let patches = Arc::new(AtomicUsize::new(0));
    let g = graph(
        json!({"responses": [
            verdict("needs_patch", "Node 'Send' failed: 401"),
            patch(),
            verdict("success", ""),
            {"node": "agent", "text": "Verified: it runs."}
        ]}),
        patches,
    );
    let out = g
        .invoke(ask("verify"), RunConfig::thread("t"))
        .await
        .expect("run");
    assert_eq!(last_text(&out), "Verified: it runs.");
    assert_eq!(out.values[VERIFY_LOOP]["wf1"]["phase"], "done");
}
