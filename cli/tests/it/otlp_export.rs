//! OpenTelemetry export: a builder turn run through the CLI with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! pointing at a loopback OTLP/HTTP receiver this test starts. The receiver decodes what
//! arrives (protobuf, the default, and JSON) and the span tree is checked against the turn's
//! script: one `chat` span per scripted model call, under the `task` of the node the script
//! names, one `execute_tool` span per scripted tool call, all in one trace under one `run`.

use crate::scenario;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn text(v: &Option<AnyValue>) -> Option<String> {
    match v.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key == key)
        .and_then(|kv| text(&kv.value))
}

/// Runs one builder turn with the export on; returns every span received and the resource's
/// `service.name`.
async fn export_of_a_turn(
    arch: &str,
    scripts: &std::path::Path,
    protocol: &str,
) -> (Vec<Span>, Vec<String>) {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    let db = tempfile::tempdir().unwrap();
    let endpoint = receiver.uri();
    let (db_path, scripts, arch, protocol) = (
        db.path().to_path_buf(),
        scripts.to_path_buf(),
        arch.to_string(),
        protocol.to_string(),
    );
    let prompt = scenario::prompt(&scripts);
    let o = tokio::task::spawn_blocking(move || {
        scenario::cli_turn_output(
            &db_path,
            &arch,
            "t",
            &prompt,
            &[
                ("AGENTGRAPH_PROVIDER", "scripted".as_ref()),
                ("AGENTGRAPH_SCRIPT_DIR", scripts.as_os_str()),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_ref()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.as_ref()),
            ],
        )
    })
    .await
    .unwrap();
    assert!(
        o.status.success(),
        "the turn failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut spans = Vec::new();
    let mut services = Vec::new();
    for req in receiver.received_requests().await.unwrap_or_default() {
        let content_type = req
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let export: ExportTraceServiceRequest = if content_type == "application/json" {
            serde_json::from_slice(&req.body).expect("an OTLP/JSON export")
        } else {
            assert_eq!(content_type, "application/x-protobuf");
            ExportTraceServiceRequest::decode(req.body.as_slice()).expect("an OTLP protobuf export")
        };
        for rs in export.resource_spans {
            if let Some(r) = &rs.resource {
                services.extend(
                    r.attributes
                        .iter()
                        .filter(|kv| kv.key == "service.name")
                        .filter_map(|kv| text(&kv.value)),
                );
            }
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    (spans, services)
}

/// The names of the ancestors of `span`, nearest first.
fn ancestors<'a>(span: &'a Span, by_id: &HashMap<Vec<u8>, &'a Span>) -> Vec<&'a Span> {
    let mut out = Vec::new();
    let mut parent = span.parent_span_id.clone();
    while let Some(p) = by_id.get(&parent) {
        out.push(*p);
        parent = p.parent_span_id.clone();
    }
    out
}

/// Checks the span tree of one turn against its script; returns what is wrong.
fn check_tree(spans: &[Span], script: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    if roots.len() != 1 || roots[0].name != "run" {
        problems.push(format!(
            "expected one root span `run`, got {:?}",
            roots.iter().map(|s| &s.name).collect::<Vec<_>>()
        ));
    }
    let traces: std::collections::BTreeSet<&Vec<u8>> = spans.iter().map(|s| &s.trace_id).collect();
    if traces.len() != 1 {
        problems.push(format!("{} traces, expected one", traces.len()));
    }
    for s in spans {
        if !s.parent_span_id.is_empty() && !by_id.contains_key(&s.parent_span_id) {
            problems.push(format!(
                "span {} has a parent that was not exported",
                s.name
            ));
        }
    }
    // Model calls: one per scripted response, each inside the task of the node the script
    // gives it, inside a step, inside the run.
    let responses = script["responses"].as_array().cloned().unwrap_or_default();
    let mut chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    chats.sort_by_key(|s| s.start_time_unix_nano);
    if chats.len() != responses.len() {
        problems.push(format!(
            "{} chat spans for {} scripted responses",
            chats.len(),
            responses.len()
        ));
    }
    for (chat, response) in chats.iter().zip(&responses) {
        let chain = ancestors(chat, &by_id);
        let names: Vec<&str> = chain.iter().map(|s| s.name.as_str()).collect();
        let task = chain.iter().find(|s| s.name == "task");
        let node = task.and_then(|t| attr(t, "node"));
        if node.as_deref() != response["node"].as_str() {
            problems.push(format!(
                "a chat span sits in node {node:?}, the script answers node {}",
                response["node"]
            ));
        }
        for want in ["task", "step", "run"] {
            if !names.contains(&want) {
                problems.push(format!("a chat span has no `{want}` above it: {names:?}"));
            }
        }
        for key in [
            "gen_ai.operation.name",
            "gen_ai.request.model",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
        ] {
            if attr(chat, key).is_none() {
                problems.push(format!("chat span without {key}"));
            }
        }
    }
    // Tool calls: the scripted calls the tool executor runs (a node's structured answer,
    // `respond`, is read by the node itself, not executed).
    let mut want: BTreeMap<String, usize> = BTreeMap::new();
    for r in &responses {
        for c in r["tool_calls"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or_default();
            if name != "respond" {
                *want.entry(name.to_string()).or_default() += 1;
            }
        }
    }
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for s in spans.iter().filter(|s| s.name.starts_with("execute_tool ")) {
        let tool = attr(s, "gen_ai.tool.name").unwrap_or_default();
        if s.name != format!("execute_tool {tool}") {
            problems.push(format!("span {} names tool {tool}", s.name));
        }
        if attr(s, "gen_ai.tool.call.id").is_none() {
            problems.push(format!("{} has no gen_ai.tool.call.id", s.name));
        }
        if !ancestors(s, &by_id).iter().any(|a| a.name == "task") {
            problems.push(format!("{} is not inside a task", s.name));
        }
        *got.entry(tool).or_default() += 1;
    }
    if got != want {
        problems.push(format!("tool spans {got:?}, the script calls {want:?}"));
    }
    problems
}

async fn the_turn_exports_its_span_tree(arch: &str, protocol: &str) {
    if scenario::catalogue_dir().is_none() {
        return;
    }
    let scripts = scenario::scenario("content-moderation");
    let script = scenario::read_json(&scripts.join(format!("{arch}.json")));
    let (spans, services) = export_of_a_turn(arch, &scripts, protocol).await;
    assert!(!spans.is_empty(), "nothing was exported");
    assert!(services.iter().all(|s| s == "agentgraph"), "{services:?}");
    let problems = check_tree(&spans, &script);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        spans.iter().any(|s| s.name == "checkpoint"),
        "no checkpoint span"
    );
    if arch == "multi" {
        // The agents are subgraphs: their steps nest inside the parent's task.
        let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
        let nested = spans
            .iter()
            .filter(|s| s.name.starts_with("chat "))
            .any(|c| {
                ancestors(c, &by_id)
                    .iter()
                    .filter(|a| a.name == "step")
                    .count()
                    >= 2
            });
        assert!(nested, "no model call inside a subgraph's step");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_agent_turn_exports_its_span_tree_over_otlp_protobuf() {
    the_turn_exports_its_span_tree("single", "http/protobuf").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_multi_agent_turn_exports_its_span_tree_over_otlp_json() {
    the_turn_exports_its_span_tree("multi", "http/json").await;
}

#[test]
fn an_unsupported_protocol_is_reported_and_the_run_goes_on() {
    let db = tempfile::tempdir().unwrap();
    let graph = scenario::root().join("server/tests/graphs/counter.ag");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .arg("--db")
        .arg(db.path())
        .arg("run")
        .arg(&graph)
        .args(["--input", r#"{"limit":2}"#])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("traces are not exported") && stderr.contains("http/protobuf"),
        "{stderr}"
    );
}
