//! The builder's scenarios in a real n8n: each scenario's workflow, built by the scripted
//! builder (both architectures) over **the instance's own node types**, is created in n8n,
//! read back and compared in every field n8n keeps; scenarios whose nodes run offline
//! (`"run"` in `expect.json`: an input and the items expected per node) are executed and must
//! succeed with those items. Needs a running n8n (`scripts/n8n start`; `.ci/run` starts one)
//! and the real catalogue for the builder's scripts; skips without them (fails under CI).

use crate::scenario::{self, compile_with, human, prompt, read_json, scenarios};
use agentgraph_n8n::client::{workflow_for_n8n, N8nClient, Session};
use agentgraph_n8n::execute::{run_workflow, RunOptions};
use agentgraph_runtime::{Input, RunConfig};
use agentgraph_std_tools::catalogue::Catalogue;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The node fields a builder workflow carries and n8n keeps as sent.
const NODE_FIELDS: [&str; 9] = [
    "id",
    "name",
    "type",
    "typeVersion",
    "position",
    "parameters",
    "credentials",
    "webhookId",
    "disabled",
];

/// What n8n answered differs from what was sent: the differences, for a message.
fn differences(sent: &Value, got: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["name", "connections"] {
        if sent[key] != got[key] {
            out.push(format!("{key}: sent {} got {}", sent[key], got[key]));
        }
    }
    for (key, value) in sent["settings"].as_object().into_iter().flatten() {
        if &got["settings"][key] != value {
            out.push(format!(
                "settings.{key}: sent {value} got {}",
                got["settings"][key]
            ));
        }
    }
    let (s, g) = (sent["nodes"].as_array(), got["nodes"].as_array());
    let (Some(s), Some(g)) = (s, g) else {
        return vec!["nodes missing".into()];
    };
    if s.len() != g.len() {
        out.push(format!("{} nodes sent, {} kept", s.len(), g.len()));
    }
    for node in s {
        let Some(kept) = g.iter().find(|k| k["name"] == node["name"]) else {
            out.push(format!("node {} missing", node["name"]));
            continue;
        };
        for f in NODE_FIELDS {
            if node[f] != kept[f] {
                out.push(format!(
                    "node {} {f}: sent {} got {}",
                    node["name"], node[f], kept[f]
                ));
            }
        }
    }
    out
}

async fn instance_catalogue() -> Option<(N8nClient, Arc<Catalogue>)> {
    let n8n = agentgraph_test_support::require_n8n()?;
    scenario::catalogue()?; // the scripts were written against the real catalogue's names
    let client = N8nClient::new(&n8n.url, &n8n.api_key).expect("client");
    let session = Session::login(&n8n.url, &n8n.email, &n8n.password)
        .await
        .expect("login");
    let types = session.node_types().await.expect("node types");
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("n8n-scenario-node-types.json");
    std::fs::write(&file, types.to_string()).expect("write");
    let catalogue = Catalogue::load_node_types_export(&file).expect("the instance's types load");
    Some((client, Arc::new(catalogue)))
}

#[tokio::test]
async fn every_scenario_workflow_is_kept_by_n8n_and_the_offline_ones_run() {
    let Some((client, catalogue)) = instance_catalogue().await else {
        return;
    };
    let mut problems = Vec::new();
    let (mut created, mut ran) = (0, 0);
    for s in scenarios() {
        let slug = s.file_name().unwrap().to_string_lossy().into_owned();
        let expect = read_json(&s.join("expect.json"));
        for arch in ["single", "multi"] {
            if !s.join(format!("{arch}.json")).exists() {
                continue;
            }
            let g = compile_with(arch, &s, catalogue.clone());
            let out = g
                .invoke(
                    Input::values(human(&prompt(&s))),
                    RunConfig::thread(format!("n8n-{slug}-{arch}")),
                )
                .await
                .unwrap_or_else(|e| panic!("{slug}/{arch}: {e}"));
            let workflow = out.values["workflow"].clone();
            assert!(
                workflow["nodes"].as_array().is_some_and(|n| !n.is_empty()),
                "{slug}/{arch}: the builder made no workflow"
            );
            let sent = workflow_for_n8n(&workflow);
            let made = client
                .create_workflow(&workflow)
                .await
                .unwrap_or_else(|e| panic!("{slug}/{arch}: n8n refused the workflow: {e}"));
            created += 1;
            let id = made["id"].as_str().expect("id").to_string();
            let got = client.get_workflow(&id).await.expect("read back");
            for d in differences(&sent, &got) {
                problems.push(format!("{slug}/{arch}: {d}"));
            }
            client.delete_workflow(&id).await.expect("delete");
            let Some(run) = expect.get("run") else {
                continue;
            };
            let report = run_workflow(&client, &workflow, &run["input"], &RunOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{slug}/{arch}: run: {e}"));
            ran += 1;
            if !report.succeeded() {
                problems.push(format!(
                    "{slug}/{arch}: execution {}: {report:?}",
                    report.status
                ));
                continue;
            }
            for (node, items) in run["expect"].as_object().expect("expect: node -> items") {
                let got = report.items_of(node).map(<[Value]>::to_vec);
                if got.as_ref() != items.as_array() {
                    problems.push(format!(
                        "{slug}/{arch}: {node} output {got:?}, expected {items}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        created >= 20,
        "only {created} scenario workflows were created"
    );
    assert!(
        ran >= 4,
        "only {ran} scenario runs (two offline scenarios × two architectures)"
    );
}
