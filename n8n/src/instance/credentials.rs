//! `workflow_credentials`: the credential types a workflow's nodes need, which are assigned,
//! which are missing, and whether the instance knows each type. Never any secret: n8n 1.123's
//! public API cannot list credentials, so "assigned" means the node names one.

use super::{arg, client, workflow_by_key, CatalogueFn};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Reports a workflow's credential needs.
pub struct WorkflowCredentialsTool {
    /// The node-type catalogue (which credentials each node type takes).
    pub catalogue: CatalogueFn,
}

/// The credential types a node type requires (`required: true`, no display condition).
fn required_types(desc: Option<&Value>) -> Vec<String> {
    desc.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["required"].as_bool() == Some(true) && c.get("displayOptions").is_none())
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

#[async_trait::async_trait]
impl Tool for WorkflowCredentialsTool {
    fn name(&self) -> &str {
        "workflow_credentials"
    }
    fn description(&self) -> &str {
        "The credential types a workflow needs, per node: assigned (by name, never secrets) or \
         missing, and whether this n8n knows the type. The user creates credentials in n8n."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"workflowId": {"type": "string"}},
               "required": ["workflowId"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = arg(&args, "workflowId")?;
        let client = client()?;
        let w = workflow_by_key(&client, id).await?;
        // The first call may read a large catalogue from disk: off the async workers.
        let load = self.catalogue.clone();
        let catalogue = tokio::task::spawn_blocking(move || load())
            .await
            .map_err(|e| {
                ToolError::new("CATALOGUE", format!("the node catalogue did not load: {e}"))
            })?;
        let mut needs: Vec<Value> = Vec::new();
        let mut types: BTreeMap<String, bool> = BTreeMap::new();
        for n in w["nodes"].as_array().into_iter().flatten() {
            let node_type = n["type"].as_str().unwrap_or("");
            let desc = catalogue.get(node_type, n["typeVersion"].as_f64());
            let required = required_types(desc.and_then(|d| d.credentials.as_ref()));
            let assigned = n["credentials"].as_object();
            let mut all: Vec<String> = required.clone();
            for k in assigned.into_iter().flatten().map(|(k, _)| k) {
                if !all.contains(k) {
                    all.push(k.clone());
                }
            }
            for t in all {
                let name = assigned
                    .and_then(|a| a.get(&t))
                    .and_then(|c| c["name"].as_str());
                types.insert(t.clone(), false);
                needs.push(json!({
                    "node": n["name"], "type": t,
                    "status": if name.is_some() { "assigned" } else { "missing" },
                    "credential": name,
                }));
            }
        }
        for (t, known) in types.iter_mut() {
            *known = client.credential_schema(t).await.is_ok();
        }
        let missing = needs.iter().filter(|n| n["status"] == "missing").count();
        let satisfiable = missing == 0 && types.values().all(|k| *k);
        Ok(ToolOutput {
            content: json!({
                "workflowId": id, "needs": needs, "typesKnownToInstance": types,
                "satisfied": satisfiable,
                "note": "missing credentials are created by the user in n8n (Credentials), then selected on the node",
            }),
            writes: Vec::new(),
        })
    }
}
