//! Trimming of a workflow shown to a model (the `trim_workflow` filter).

use agentgraph_std_tools::workflow::trim::*;
use serde_json::{json, Value};

#[test]
fn trims_long_strings_at_any_depth_and_keeps_the_rest() {
    let long = "x".repeat(1001);
    let wf = json!({
        "name": "wf",
        "nodes": [
            {"id": "n1", "name": "HTTP", "type": "n8n-nodes-base.httpRequest", "position": [0, 0],
             "parameters": {
                "url": "https://example.com",
                "body": long,
                "options": {"headers": [{"name": "a", "value": long}, {"name": "b", "value": "ok"}],
                            "timeout": 30, "flag": true},
                "edge": "y".repeat(1000)
             },
             "notes": long},
            {"id": "n2", "name": "NoParams"}
        ],
        "connections": {"HTTP": {"main": [[{"node": "NoParams", "type": "main", "index": 0}]]}},
        "custom": {"anything": long}
    });
    let out = trim_workflow_parameters(&wf, DEFAULT_MAX_PARAM_CHARS);
    let p = &out["nodes"][0]["parameters"];
    assert_eq!(p["body"], OMITTED);
    assert_eq!(p["options"]["headers"][0]["value"], OMITTED);
    assert_eq!(p["options"]["headers"][0]["name"], "a");
    assert_eq!(p["options"]["headers"][1]["value"], "ok");
    assert_eq!(p["options"]["timeout"], 30);
    assert_eq!(p["options"]["flag"], true);
    assert_eq!(p["url"], "https://example.com");
    assert_eq!(
        p["edge"], wf["nodes"][0]["parameters"]["edge"],
        "exactly at the limit"
    );
    // Outside `parameters`, nothing changes.
    assert_eq!(out["nodes"][0]["notes"], wf["nodes"][0]["notes"]);
    assert_eq!(out["nodes"][1], wf["nodes"][1]);
    assert_eq!(out["connections"], wf["connections"]);
    assert_eq!(out["custom"], wf["custom"]);
    assert_eq!(out["name"], "wf");
    // The input is untouched; a large object of short values is not replaced as a whole.
    assert_eq!(wf["nodes"][0]["parameters"]["body"], json!(long));
    let many: Vec<Value> = (0..500).map(|i| json!({"k": i})).collect();
    let wf2 = json!({"nodes": [{"parameters": {"rows": many}}], "connections": {}});
    assert_eq!(trim_workflow_parameters(&wf2, 10), wf2);
    // Non-workflow input is returned unchanged.
    assert_eq!(trim_workflow_parameters(&json!("text"), 1), json!("text"));
}

#[test]
fn trim_workflow_json_only_trims_large_workflows() {
    let small = json!({"nodes": [{"parameters": {"body": "x".repeat(2000)}}], "connections": {}});
    assert_eq!(trim_workflow_json(&small), small);
    let big_text = "x".repeat(80_000);
    let big = json!({"nodes": [{"parameters": {"body": big_text}}], "connections": {}});
    assert_eq!(
        trim_workflow_json(&big)["nodes"][0]["parameters"]["body"],
        OMITTED
    );
}
