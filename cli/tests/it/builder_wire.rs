//! The workflow builder end to end over the real provider wire formats: the CLI runs a
//! builder graph with `AGENTGRAPH_PROVIDER=openai` or `anthropic` against a loopback server
//! (`wire/mod.rs`) that replays a scenario's script as streamed Chat Completions or Messages
//! events, as a user with an API key (or an OpenAI-compatible server) would run it.
//!
//! Each test checks the final workflow exactly as `builder.rs` does (node types, typed
//! connections, no validation finding), and from the recorded requests: the key header, the
//! model name of the graph's `model` block, every tool call streamed in pieces coming back
//! assembled (same name and arguments) with its result under the matching id, every script
//! response used, and no request the real API would reject (see `wire::openai_protocol` and
//! `wire::anthropic_protocol`). Needs the real n8n catalogue (`AGENTGRAPH_N8N_CATALOGUE`); skips
//! without it (fails under `CI=true`).

use crate::scenario;
use crate::wire;

use scenario::{catalogue_dir, check, prompt};
use serde_json::Value;
use std::ffi::OsStr;
use wire::{Recorded, Replay, Wire};

const KEY: &str = "test-key";

/// The tool calls whose results never go back to a model: a phase of the multi-agent graph
/// ends when discovery submits its results (the phase's conversation ends there).
fn may_end_a_conversation(name: &str) -> bool {
    name == "respond" || name == "submit_discovery_results"
}

/// The tool calls a request carries in its history, by id: (name, arguments).
fn calls_in(wire: Wire, body: &Value) -> Vec<(String, String, Value)> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m["role"] == "assistant") {
        match wire {
            Wire::OpenAi => {
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let args = c["function"]["arguments"].as_str().unwrap_or("null");
                    out.push((
                        c["id"].as_str().unwrap_or("").to_string(),
                        c["function"]["name"].as_str().unwrap_or("").to_string(),
                        serde_json::from_str(args).unwrap_or(Value::Null),
                    ));
                }
            }
            Wire::Anthropic => {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_use" {
                        out.push((
                            b["id"].as_str().unwrap_or("").to_string(),
                            b["name"].as_str().unwrap_or("").to_string(),
                            b["input"].clone(),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// The ids of the tool results a request carries.
fn results_in(wire: Wire, body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    match wire {
        Wire::OpenAi => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["tool_call_id"].as_str().map(str::to_string))
            .collect(),
        Wire::Anthropic => messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
            .collect(),
    }
}

/// What the recorded requests must show; returns the problems.
fn check_requests(wire: Wire, replay: &Replay) -> Vec<String> {
    let requests: Vec<Recorded> = replay.requests();
    let mut problems = Vec::new();
    let (model, key_header, key_value) = match wire {
        Wire::OpenAi => ("gpt-4o", "authorization", format!("Bearer {KEY}")),
        Wire::Anthropic => ("claude-sonnet-4-5", "x-api-key", KEY.to_string()),
    };
    if requests.len() != replay.script_len() {
        problems.push(format!(
            "{} requests for a script of {} responses",
            requests.len(),
            replay.script_len()
        ));
    }
    for (n, r) in requests.iter().enumerate() {
        let n = n + 1;
        if r.body["model"] != model {
            problems.push(format!(
                "request {n}: model {}, expected {model:?}",
                r.body["model"]
            ));
        }
        if r.headers.get(key_header) != Some(&key_value) {
            problems.push(format!(
                "request {n}: {key_header} is {:?}, expected {key_value:?}",
                r.headers.get(key_header)
            ));
        }
        if wire == Wire::Anthropic && !r.headers.contains_key("anthropic-version") {
            problems.push(format!("request {n}: no anthropic-version header"));
        }
    }
    let unused = replay.unused();
    if !unused.is_empty() {
        problems.push(format!("script responses never served: {unused:?}"));
    }
    // Every call streamed in pieces comes back assembled, with its result under its id.
    let issued = replay.issued();
    let mut answered = 0;
    for c in &issued {
        let later = requests.iter().find(|r| {
            r.served.is_some_and(|s| s > c.response) && results_in(wire, &r.body).contains(&c.id)
        });
        let Some(later) = later else {
            if !may_end_a_conversation(&c.name) {
                problems.push(format!(
                    "the result of `{}` ({}) of response #{} never went back to the model",
                    c.name,
                    c.id,
                    c.response + 1
                ));
            }
            continue;
        };
        answered += 1;
        match calls_in(wire, &later.body)
            .into_iter()
            .find(|(id, _, _)| *id == c.id)
        {
            Some((_, name, args)) if name == c.name && args == c.args => {}
            Some((_, name, args)) => problems.push(format!(
                "call {} came back as `{name}` {args}, streamed as `{}` {}",
                c.id, c.name, c.args
            )),
            None => problems.push(format!(
                "the request with the result of {} lacks the call itself",
                c.id
            )),
        }
    }
    if answered == 0 {
        problems.push("no tool result ever went back to the model".into());
    }
    eprintln!(
        "{wire:?}: {} requests, {} tool calls streamed, {answered} results sent back",
        requests.len(),
        issued.len()
    );
    problems
}

/// The texts of a request's messages, in order (both wire formats).
fn message_texts(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(parts) => out.extend(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    out
}

/// The builder and configurator phases get discovery's results once, in their opening
/// message, and not again in the context sent with every call.
fn check_discovery_handover(replay: &Replay) -> Vec<String> {
    let mut problems = Vec::new();
    let mut opened = 0;
    for (n, r) in replay.requests().iter().enumerate() {
        let texts = message_texts(&r.body);
        let phase = texts.iter().find(|t| {
            t.starts_with("Build the structure for this request:")
                || t.starts_with("Configure the workflow for this request:")
        });
        if let Some(first) = phase {
            opened += 1;
            if !first.contains("The node types discovery chose") {
                problems.push(format!(
                    "request {}: the phase's opening message lacks discovery's results: {first:.300}",
                    n + 1
                ));
            }
        }
        if texts.iter().any(|t| t.contains("<discovery_context>")) {
            problems.push(format!(
                "request {}: the discovery results are sent again in the context",
                n + 1
            ));
        }
    }
    if opened == 0 {
        problems.push("no request of the builder or configurator phase".into());
    }
    problems
}

/// The run's usage is the sum of everything the mock streamed: the graph's own model calls
/// and the nested ones inside update_node_parameters (the script's `match` responses, recorded
/// by the tool executor), cache reads and writes included.
fn check_usage(replay: &Replay, total: &Value) -> Vec<String> {
    let mut want = serde_json::Map::new();
    let mut calls = 0;
    for r in replay.requests() {
        let Some(i) = r.served else {
            continue;
        };
        calls += 1;
        for (k, v) in replay.usage_of(i).as_object().unwrap() {
            let sum = want.get(k).and_then(Value::as_u64).unwrap_or(0) + v.as_u64().unwrap_or(0);
            want.insert(k.clone(), sum.into());
        }
    }
    want.insert("calls".into(), calls.into());
    want.into_iter()
        .filter(|(k, v)| total[k] != *v)
        .map(|(k, v)| format!("usage total {k} is {}, expected {v}", total[&k]))
        .collect()
}

/// One turn of the `arch` builder on `slug`'s script over `wire`; every problem found.
async fn run_over_the_wire(slug: &str, arch: &str, wire: Wire) -> Result<(), String> {
    let dir = scenario::scenario(slug);
    let (server, replay) = Replay::start(wire, &dir.join(format!("{arch}.json"))).await;
    let uri = server.uri();
    let env: Vec<(&str, String)> = match wire {
        Wire::OpenAi => vec![
            ("AGENTGRAPH_PROVIDER", "openai".into()),
            ("OPENAI_API_KEY", KEY.into()),
            ("OPENAI_BASE_URL", format!("{uri}/v1")),
            // The mock stands for OpenAI's own API, which takes a named tool choice as is.
            ("OPENAI_NAMED_TOOL_CHOICE", "native".into()),
        ],
        Wire::Anthropic => vec![
            ("AGENTGRAPH_PROVIDER", "anthropic".into()),
            ("ANTHROPIC_API_KEY", KEY.into()),
            ("ANTHROPIC_BASE_URL", uri),
        ],
    };
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().to_path_buf();
    let text = prompt(&dir);
    let arch_owned = arch.to_string();
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_ref())).collect();
        scenario::cli_turn_output(&db_path, &arch_owned, "wire", &text, &env)
    })
    .await
    .unwrap();
    let what = format!("{slug}/{arch} over {wire:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let violations = replay.violations();
    if !violations.is_empty() {
        return Err(format!(
            "{what}: the mock provider saw requests a real API would reject, or that do not \
             fit the script:\n{}\n--- stderr of the run:\n{stderr}",
            violations.join("\n")
        ));
    }
    if !out.status.success() {
        return Err(format!(
            "{what}: exit {:?}\n{stdout}\n{stderr}",
            out.status.code()
        ));
    }
    let line = stdout.lines().rev().find(|l| !l.is_empty()).unwrap_or("");
    let state: Value = serde_json::from_str(line)
        .map_err(|e| format!("{what}: the last line is not JSON ({e}): {stdout}"))?;
    let mut problems = check(&dir, arch, &state["workflow"]);
    problems.extend(check_requests(wire, &replay));
    if arch == "multi" {
        problems.extend(check_discovery_handover(&replay));
    }
    problems.extend(check_usage(&replay, &state["usage"]["total"]));
    problems.extend(
        scenario::tool_errors(&out)
            .into_iter()
            .map(|e| format!("tool error {e}")),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}:\n{}", problems.join("\n")))
    }
}

/// Runs one combination, skipping without the catalogue.
async fn builder_over_the_wire(slug: &str, arch: &str, wire: Wire) {
    if catalogue_dir().is_none() {
        return;
    }
    if let Err(e) = run_over_the_wire(slug, arch, wire).await {
        panic!("{e}");
    }
}

macro_rules! over_the_wire {
    ($($test:ident: $slug:literal, $arch:literal, $wire:expr;)*) => {
        /// The scenarios with a test of their own on every architecture and wire format.
        const NAMED: &[&str] = &[$($slug),*];
        $(
        #[tokio::test(flavor = "multi_thread")]
        async fn $test() {
            builder_over_the_wire($slug, $arch, $wire).await;
        }
    )*};
}

over_the_wire! {
    single_agent_over_openai_weekly_email_summary: "weekly-email-summary", "single", Wire::OpenAi;
    single_agent_over_openai_github_issue_triage: "github-issue-triage", "single", Wire::OpenAi;
    single_agent_over_openai_webhook_order_processing: "webhook-order-processing", "single", Wire::OpenAi;
    multi_agent_over_anthropic_weekly_email_summary: "weekly-email-summary", "multi", Wire::Anthropic;
    multi_agent_over_anthropic_github_issue_triage: "github-issue-triage", "multi", Wire::Anthropic;
    multi_agent_over_anthropic_webhook_order_processing: "webhook-order-processing", "multi", Wire::Anthropic;
    single_agent_over_anthropic_weekly_email_summary: "weekly-email-summary", "single", Wire::Anthropic;
    single_agent_over_anthropic_github_issue_triage: "github-issue-triage", "single", Wire::Anthropic;
    single_agent_over_anthropic_webhook_order_processing: "webhook-order-processing", "single", Wire::Anthropic;
    multi_agent_over_openai_weekly_email_summary: "weekly-email-summary", "multi", Wire::OpenAi;
    multi_agent_over_openai_github_issue_triage: "github-issue-triage", "multi", Wire::OpenAi;
    multi_agent_over_openai_webhook_order_processing: "webhook-order-processing", "multi", Wire::OpenAi;
}

/// Every other scenario: the single agent over OpenAI and the multi-agent graph over
/// Anthropic, all problems reported together.
#[tokio::test(flavor = "multi_thread")]
async fn every_other_scenario_single_over_openai_and_multi_over_anthropic() {
    if catalogue_dir().is_none() {
        return;
    }
    let mut problems = Vec::new();
    let mut ran = 0;
    for dir in scenario::scenarios() {
        let slug = dir.file_name().unwrap().to_string_lossy().into_owned();
        if NAMED.contains(&slug.as_str()) {
            continue;
        }
        for (arch, wire) in [("single", Wire::OpenAi), ("multi", Wire::Anthropic)] {
            if let Err(e) = run_over_the_wire(&slug, arch, wire).await {
                problems.push(e);
            }
            ran += 1;
        }
    }
    assert!(ran > 0, "no other scenario in tests/scenarios");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The mock's protocol checks catch what the real APIs reject.
#[test]
fn the_protocol_checks_catch_unanswered_and_misplaced_tool_results() {
    let openai = serde_json::json!({"model": "gpt-4o", "stream": true, "messages": [
        {"role": "system", "content": "You build workflows."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "user", "content": "and?"}]});
    let problems = wire::openai_protocol(&openai);
    assert!(
        problems.len() == 1 && problems[0].contains("call_2"),
        "{problems:?}"
    );
    let anthropic = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 10,
        "stream": true, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "see"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": " "}]}],
        "tools": [{"name": "a", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "b"}});
    let problems = wire::anthropic_protocol(&anthropic).join("\n");
    for needle in [
        "results must come first",
        "two `user` messages in a row",
        "empty text block",
        "forces `b`",
    ] {
        assert!(problems.contains(needle), "{needle} in {problems}");
    }
}
