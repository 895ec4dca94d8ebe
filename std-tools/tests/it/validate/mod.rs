//! The validators: each rule triggered by a minimal workflow and quiet on the fixed one, the
//! report renderings, the two tools, robustness and speed.

use std::sync::{Arc, OnceLock};

use agentgraph_agents::tools::{Tool, ToolContext};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::catalogue::{Catalogue, NodeTypeDescription};
use agentgraph_std_tools::validate::{
    codes, rule, validate, validate_configuration, validate_structure, Report, RuleGroup, Severity,
    ValidateConfiguration, ValidateStructure, RULES,
};
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};

mod agents;
mod inputs;
mod parameters;
mod problems;
mod reachability;
mod reports;
mod structure;

fn builtin() -> &'static Catalogue {
    static C: OnceLock<Catalogue> = OnceLock::new();
    C.get_or_init(|| Catalogue::builtin().expect("the built-in catalogue loads"))
}

/// The real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`), loaded once; `None` records a skip.
fn real() -> Option<&'static Catalogue> {
    let dir = agentgraph_test_support::n8n_catalogue()?;
    static C: OnceLock<Catalogue> = OnceLock::new();
    Some(C.get_or_init(|| Catalogue::load_n8n_dir(&dir).expect("the real catalogue loads")))
}

const LC: &str = "@n8n/n8n-nodes-langchain";

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({
        "id": format!("id-{name}"),
        "name": name,
        "type": ty,
        "typeVersion": version,
        "position": [0, 0],
        "parameters": params,
    })
}

fn trigger() -> Value {
    node("Start", "n8n-nodes-base.manualTrigger", 1.0, json!({}))
}

fn set(name: &str) -> Value {
    node(name, "n8n-nodes-base.set", 3.4, json!({}))
}

fn main_to(target: &str) -> Value {
    json!({"main": [[{"node": target, "type": "main", "index": 0}]]})
}

fn wf(nodes: Vec<Value>, connections: Value) -> Workflow {
    Workflow::from_value(json!({"nodes": nodes, "connections": connections}))
        .expect("a valid workflow")
}

fn count(r: &Report, code: &str) -> usize {
    r.with_code(code).count()
}

fn on(r: &Report, code: &str, node: &str) -> bool {
    r.with_code(code).any(|f| f.node.as_deref() == Some(node))
}

fn all(w: &Workflow) -> Report {
    validate(w, builtin())
}

fn agent(name: &str, params: Value) -> Value {
    node(name, &format!("{LC}.agent"), 2.2, params)
}

fn model(name: &str) -> Value {
    node(name, &format!("{LC}.lmChatOpenAi"), 1.2, json!({}))
}

fn chat_trigger() -> Value {
    node("Chat", &format!("{LC}.chatTrigger"), 1.1, json!({}))
}
