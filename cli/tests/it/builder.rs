//! The workflow builder end to end with the scripted model, through the CLI and through the
//! Rust API, on the real n8n catalogue (`AGENTGRAPH_N8N_CATALOGUE`; the tests skip without it,
//! and fail under `CI=true`).
//!
//! Each folder of `tests/scenarios/` holds one prompt: `expect.json` (the prompt, the node
//! types and the typed connections the final workflow must have) and one script per
//! architecture (`single.json`, `multi.json`). The final workflow must also pass every check
//! of validate_structure and validate_configuration (no finding at all). The scenario helpers
//! live in `scenario/mod.rs`, shared with `builder_wire.rs` (the same scenarios over the real
//! provider wire formats).

use crate::scenario;

use agentgraph_runtime::{Input, Mode, Modes, RunConfig};
use scenario::{catalogue, catalogue_dir, check, human, prompt, root, scenarios};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Runs one turn through the CLI with the scripted model; returns the final state and the
/// tool calls that failed.
fn cli_turn(
    db: &Path,
    arch: &str,
    scripts: &Path,
    thread: &str,
    text: &str,
) -> (Value, Vec<String>) {
    let o = scenario::cli_turn_output(
        db,
        arch,
        thread,
        text,
        &[
            ("AGENTGRAPH_PROVIDER", "scripted".as_ref()),
            ("AGENTGRAPH_SCRIPT_DIR", scripts.as_os_str()),
        ],
    );
    let state = scenario::final_state(&o, &format!("{arch} on {}", scripts.display()));
    (state, scenario::tool_errors(&o))
}

#[test]
fn every_scenario_through_the_cli_on_both_architectures() {
    if catalogue_dir().is_none() {
        return;
    }
    let mut problems = Vec::new();
    let mut ran = 0;
    for s in scenarios() {
        for arch in ["single", "multi"] {
            if !s.join(format!("{arch}.json")).exists() {
                problems.push(format!("{}: no {arch}.json", s.display()));
                continue;
            }
            let db = tempfile::tempdir().unwrap();
            let (out, errors) = cli_turn(db.path(), arch, &s, "t", &prompt(&s));
            problems.extend(check(&s, arch, &out["workflow"]));
            // The script's calls must all succeed: a replay that only ends well is not enough.
            problems.extend(
                errors
                    .iter()
                    .map(|e| format!("{}/{arch}: tool error {e}", s.display())),
            );
            ran += 1;
        }
    }
    assert!(ran >= 2, "no scenario ran");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Compiles a builder graph with the scripts of `scenario`, through the Rust API, on the
/// real catalogue.
fn compile(arch: &str, scripts: &Path) -> agentgraph_runtime::CompiledGraph {
    scenario::compile_with(arch, scripts, catalogue().unwrap())
}

/// The last message of a run's output (the turn's answer).
fn last_message(out: &agentgraph_runtime::RunOutput) -> Value {
    out.values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_else(|| panic!("no messages in {:#}", out.values))
}

/// One turn of `arch` on the scripted answers of `fixture` (a folder of `cli/tests/fixtures/`),
/// on thread `thread`: the run's output and the thread's state values after it.
async fn fixture_turn(
    fixture: &str,
    arch: &str,
    text: &str,
    thread: &str,
) -> (agentgraph_runtime::RunOutput, Value) {
    let g = compile(arch, &root().join("cli/tests/fixtures").join(fixture));
    let out = g
        .invoke(Input::values(human(text)), RunConfig::thread(thread))
        .await
        .unwrap_or_else(|e| panic!("{fixture}/{arch}: the run ends normally: {e}"));
    let state = g.get_state(thread, None).await.unwrap().unwrap().values;
    (out, state)
}

#[tokio::test]
async fn every_scenario_through_the_rust_api_on_both_architectures() {
    if catalogue().is_none() {
        return;
    }
    let mut problems = Vec::new();
    for s in scenarios() {
        for arch in ["single", "multi"] {
            if !s.join(format!("{arch}.json")).exists() {
                continue;
            }
            let g = compile(arch, &s);
            let thread = format!("api-{}-{arch}", s.file_name().unwrap().to_string_lossy());
            let config = RunConfig::thread(thread).modes(Modes::of(&[Mode::Custom]));
            let mut stream = g.stream(Input::values(human(&prompt(&s))), config);
            let mut events = Vec::new();
            while let Some(ev) = stream.next().await {
                events.push(ev);
            }
            let out = stream
                .finish()
                .await
                .unwrap_or_else(|e| panic!("{}/{arch}: {e}", s.display()));
            problems.extend(check(&s, arch, &out.values["workflow"]));
            problems.extend(
                scenario::tool_errors_in(&events)
                    .iter()
                    .map(|e| format!("{}/{arch}: tool error {e}", s.display())),
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn a_failing_phase_is_explained_by_the_responder() {
    if catalogue().is_none() {
        return;
    }
    // The builder's model call fails (its script answer is meant for another node): the error
    // boundary catches it, the coordination log records it, and the responder answers.
    let (out, state) = fixture_turn(
        "phase-error",
        "multi",
        "Every Monday, summarize my unread Gmail",
        "phase-error",
    )
    .await;
    let log = state["coordination_log"].clone();
    let entries = log.as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["phase"] == "builder" && e["status"] == "error"),
        "{log}"
    );
    assert_eq!(state["error"]["node"], "builder");
    let answer = last_message(&out);
    assert_eq!(answer["type"], "ai");
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("builder step failed"));
    // Nothing half-built leaked into the workflow.
    assert_eq!(out.values["workflow"]["nodes"], json!([]));
}

#[tokio::test]
async fn both_architectures_share_one_state_schema() {
    if catalogue().is_none() {
        return;
    }
    let dir = root().join("tests/scenarios/weekly-email-summary");
    let single = compile("single", &dir);
    let multi = compile("multi", &dir);
    assert_eq!(single.schema().version(), multi.schema().version());
    // One thread: a turn with the single agent, then one with the multi-agent graph, which
    // sees the first turn's messages and workflow.
    let store = Arc::new(agentgraph_runtime::MemoryCheckpointer::new());
    let single = single.with_checkpointer(store.clone());
    let multi = multi.with_checkpointer(store);
    single
        .invoke(
            Input::values(human(&prompt(&dir))),
            RunConfig::thread("swap"),
        )
        .await
        .unwrap();
    let before = single
        .get_state("swap", None)
        .await
        .unwrap()
        .unwrap()
        .values;
    assert_eq!(before["workflow"]["nodes"].as_array().unwrap().len(), 6);
    let state = multi.get_state("swap", None).await.unwrap().unwrap();
    assert_eq!(state.values["workflow"], before["workflow"]);
    assert_eq!(state.values["messages"], before["messages"]);
}

#[tokio::test]
async fn discovery_without_results_is_reminded_then_explained_and_the_log_is_per_turn() {
    if catalogue().is_none() {
        return;
    }
    // The discovery agent answers three times without submitting (once, then after each of
    // the two reminders): the phase logs an error; on the empty workflow the builder still
    // runs once from the request alone (logged as a retry), answers in text four times (once,
    // then after each of three reminders to validate) and logs an error; the configurator is
    // skipped (nothing to configure), the responder explains (its script answer only matches a
    // request holding the discovery entry).
    let fixture = root().join("cli/tests/fixtures/discovery-unsubmitted");
    let g = compile("multi", &fixture);
    let thread = "discovery-unsubmitted";
    let out = g
        .invoke(
            Input::values(human("Every Monday, summarize my unread Gmail")),
            RunConfig::thread(thread),
        )
        .await
        .expect("the run ends normally");
    let state = g.get_state(thread, None).await.unwrap().unwrap();
    let log = state.values["coordination_log"].clone();
    let phases: Vec<(&str, &str)> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["phase"].as_str().unwrap_or("?"),
                e["status"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        phases,
        [
            ("discovery", "error"),
            ("check", "retry"),
            ("builder", "error")
        ],
        "{log}"
    );
    assert_eq!(out.values["workflow"]["nodes"], json!([]));
    let answer = last_message(&out);
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("Discovery did not finish"));
    // The next turn starts a fresh coordination log.
    let out = g
        .invoke(
            Input::values(human("What did you do?")),
            RunConfig::thread(thread),
        )
        .await
        .expect("second turn");
    let state = g.get_state(thread, None).await.unwrap().unwrap();
    assert_eq!(state.values["coordination_log"], json!([]));
    let answer = last_message(&out);
    assert_eq!(answer["content"], "(test) Second turn.");
}

/// A multi-agent turn of `fixture` whose check sends the builder back exactly once: that retry
/// entry's summary, the final workflow's node names and connections, and the final answer.
async fn turn_with_one_check_retry(
    fixture: &str,
    text: &str,
) -> (String, Vec<String>, Value, Value) {
    let (out, state) = fixture_turn(fixture, "multi", text, fixture).await;
    let log = state["coordination_log"].as_array().unwrap().clone();
    let retries: Vec<&Value> = log
        .iter()
        .filter(|e| e["phase"] == "check" && e["status"] == "retry")
        .collect();
    assert_eq!(retries.len(), 1, "{log:?}");
    let summary = retries[0]["summary"].as_str().unwrap_or("").to_string();
    let wf = &out.values["workflow"];
    let names = wf["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["name"].as_str().map(str::to_string))
        .collect();
    let answer = last_message(&out)["content"].clone();
    (summary, names, wf["connections"].clone(), answer)
}

#[tokio::test]
async fn a_build_left_with_only_its_trigger_sends_the_builder_back_once() {
    if catalogue().is_none() {
        return;
    }
    // The builder adds the trigger, then stops until its reminders run out; the configurator
    // finds nothing to do. The check sees only the trigger and sends the builder back once,
    // with a log entry saying so; the second run adds the step and connects it.
    let (summary, names, connections, answer) =
        turn_with_one_check_retry("builder-only-trigger", "Every Monday, prepare a report").await;
    assert!(summary.contains("only its trigger"), "{summary}");
    assert_eq!(names, ["Every Monday", "Prepare Report"]);
    assert_eq!(
        connections["Every Monday"]["main"][0][0]["node"],
        "Prepare Report"
    );
    assert_eq!(answer, "(test) Every Monday, Prepare Report runs.");
}

#[tokio::test]
async fn an_unfinished_build_sends_the_builder_back_once_with_the_structure_problems() {
    if catalogue().is_none() {
        return;
    }
    // The builder adds a schedule and a Basic LLM Chain, validates (the chain has no chat
    // model: invalid) and gives up after its reminders. The check finds the structure's
    // problem and sends the builder back once, naming it; the second run adds the model.
    let (summary, names, connections, answer) = turn_with_one_check_retry(
        "builder-unfinished",
        "Every Monday, write me a digest with AI",
    )
    .await;
    assert!(
        summary.starts_with("the structure check found: "),
        "{summary}"
    );
    assert!(summary.contains("Write Digest"), "{summary}");
    assert!(summary.contains("ai_languageModel"), "{summary}");
    assert_eq!(names, ["Every Monday", "Write Digest", "Chat Model"]);
    assert_eq!(
        connections["Chat Model"]["ai_languageModel"][0][0]["node"],
        "Write Digest"
    );
    assert_eq!(
        answer,
        "(test) Every Monday, Write Digest runs with its Chat Model."
    );
}

#[tokio::test]
async fn a_message_the_naming_call_calls_a_question_is_answered_not_built() {
    if catalogue().is_none() {
        return;
    }
    // On an empty workflow, `kind: "question"` from the naming call makes the turn a question:
    // the answer ends it (no reminder that nothing was built, no discovery). The scripts hold
    // no answer for a reminder or a phase, so either would fail the run.
    for arch in ["single", "multi"] {
        let (out, _) = fixture_turn("naming-question", arch, "What can you do?", arch).await;
        let answer = last_message(&out);
        assert_eq!(
            answer["content"], "(test) I build n8n workflows from a description.",
            "{arch}"
        );
        assert_eq!(out.values["workflow"]["nodes"], json!([]), "{arch}");
    }
}

#[tokio::test]
async fn a_build_stopped_for_repeating_a_done_search_shows_the_workflow_it_left() {
    if catalogue().is_none() {
        return;
    }
    // As a small model did in a measured run: after building (trigger, one node, connected)
    // it sent the search it had already made five more times. Each repeat is answered
    // REPEATED_CALL without running (the search is pure); four are followed by "answer the
    // user now", the fifth ends the turn. The answer says a done step was repeated (not that
    // a step failed) and, as the workflow passes the structure check, shows it.
    let (out, state) = fixture_turn(
        "search-after-building",
        "single",
        "Receive orders on a webhook and mark their priority",
        "repeat-done",
    )
    .await;
    let answer = last_message(&out);
    let text = answer["content"].as_str().unwrap();
    assert!(
        text.starts_with(
            "I stopped because I kept sending the same step again (search_nodes) although it had already been done. The workflow passes the structure check"
        ),
        "{text}"
    );
    assert!(text.contains("Receive Orders"), "{text}");
    assert!(text.contains("Mark Priority"), "{text}");
    assert!(!text.contains("failing"), "{text}");
    let refused = state["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["type"] == "tool"
                && m["content"]["error"]["code"] == "REPEATED_CALL"
                && m["content"]
                    .to_string()
                    .contains("earlier in this conversation and succeeded")
        })
        .count();
    assert_eq!(refused, 5, "{:#}", state["messages"]);
}

#[tokio::test]
async fn a_builder_that_never_validates_cleanly_ends_in_error() {
    if catalogue().is_none() {
        return;
    }
    // The supervisor sends the empty workflow to the builder; routing sends it to discovery
    // first (the builder cannot search). The builder stops without validating (reminded),
    // validates an empty workflow (invalid: no trigger), then keeps stopping (reminded to fix,
    // up to three reminders in all): the phase logs an error with the validation result
    // instead of "completed".
    let (out, state) = fixture_turn(
        "builder-unvalidated",
        "multi",
        "Every Monday, summarize my unread Gmail",
        "builder-unvalidated",
    )
    .await;
    let log = state["coordination_log"].as_array().unwrap().clone();
    assert_eq!(log[0]["phase"], "discovery", "{log:?}");
    let builder = log
        .iter()
        .find(|e| e["phase"] == "builder")
        .expect("a builder entry");
    assert_eq!(builder["status"], "error", "{log:?}");
    let summary = builder["summary"].as_str().unwrap();
    assert!(summary.contains("status=\"invalid\""), "{summary}");
    assert!(summary.contains("NO_TRIGGER"), "{summary}");
    let answer = last_message(&out);
    assert!(answer["content"]
        .as_str()
        .unwrap()
        .contains("not valid yet"));
}

#[tokio::test]
async fn the_workflow_context_reaches_the_model_and_long_parameters_are_trimmed() {
    if catalogue().is_none() {
        return;
    }
    // A workflow with large Code nodes (over the prompt budget) and an execution schema from
    // the caller: the agent's request holds the schema (its only script answer matches on
    // it), and the code is replaced by the get_node_parameter placeholder.
    let fixture = root().join("cli/tests/fixtures/workflow-context");
    let g = compile("single", &fixture);
    // Three Code nodes of 28 000 characters: each readable (the cap is 30 000), together over
    // the 30 000-token budget of the prompt, so they are trimmed there.
    let code = format!("const a = 1;\n{}", "// padding\n".repeat(2_330));
    let nodes: Vec<Value> = (1..=3)
        .map(|i| {
            json!({"id": i.to_string(), "name": format!("Code{i}"), "type": "n8n-nodes-base.code",
                   "typeVersion": 2, "position": [i * 220, 0], "parameters": {"jsCode": code}})
        })
        .collect();
    let workflow = json!({"name": "Big", "connections": {}, "nodes": nodes});
    let mut input = human("What fields does the trigger give me?");
    input["workflow"] = workflow;
    input["workflow_context"] = json!({"execution_schema": [{"nodeName": "Trigger", "schema": {"customer_email_field": "string"}}]});
    let out = g
        .invoke(Input::values(input), RunConfig::thread("workflow-context"))
        .await
        .expect("both script answers matched: the schema and the placeholder were in the prompt");
    let messages = out.values["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "(test) I can see the execution schema and read the code."
    );
    // The tool still reads the full value.
    let read = messages
        .iter()
        .find(|m| m["type"] == "tool")
        .expect("the get_node_parameter result");
    assert!(
        read["content"].to_string().contains("const a = 1;"),
        "{read}"
    );
}
