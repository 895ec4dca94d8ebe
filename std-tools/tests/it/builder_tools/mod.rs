//! The workflow-builder tools: happy paths, every error code, connection inference on the real
//! n8n catalogue (when `$AGENTGRAPH_N8N_CATALOGUE` names it) and an end-to-end build.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::state::codes;
use agentgraph_std_tools::builder::{
    workflow_tools, AddNodes, ConnectNodes, GetNodeDetails, GetNodeParameter, RemoveConnection,
    RemoveNode, SearchNodes,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{apply_operations, parse_operations, Operation};
use agentgraph_std_tools::workflow::{Workflow, WorkflowNode};
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};

mod add_nodes;
mod add_trigger;
mod auto_connect;
mod connect;
mod end_to_end;
mod inference;
mod ports;
mod remove_and_read;
mod search;

const LC: &str = "@n8n/n8n-nodes-langchain";

fn builtin() -> Arc<Catalogue> {
    static CAT: OnceLock<Arc<Catalogue>> = OnceLock::new();
    CAT.get_or_init(|| Arc::new(Catalogue::builtin().expect("builtin catalogue")))
        .clone()
}

/// The real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`), loaded once; `None` records a skip.
fn real() -> Option<Arc<Catalogue>> {
    let dir = agentgraph_test_support::n8n_catalogue()?;
    static CAT: OnceLock<Arc<Catalogue>> = OnceLock::new();
    Some(
        CAT.get_or_init(|| Arc::new(Catalogue::load_n8n_dir(dir).expect("real catalogue loads")))
            .clone(),
    )
}

/// A workflow under construction: tools are called against it, their operations applied.
struct Session {
    cat: Arc<Catalogue>,
    wf: Workflow,
}

impl Session {
    fn new(cat: Arc<Catalogue>) -> Self {
        Session {
            cat,
            wf: Workflow::default(),
        }
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::detached(StateView::from_object(
            json!({"workflow": self.wf.to_value()}),
        ))
    }

    async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        agentgraph_agents::tools::validate_args(&tool.input_schema(), &args)
            .map_err(|e| ToolError::new("SCHEMA", format!("{e:?}")))?;
        tool.call(args, &self.ctx()).await
    }

    /// Calls and applies the queued operations; returns the message.
    async fn run(&mut self, tool: &dyn Tool, args: Value) -> String {
        let out = self
            .call(tool, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{} {args}: {e}", tool.name()));
        self.apply(&out);
        text(&out)
    }

    fn apply(&mut self, out: &ToolOutput) {
        for (channel, value) in &out.writes {
            assert_eq!(channel, "operations");
            let ops = parse_operations(value).expect("operations parse");
            self.wf = apply_operations(&self.wf, &ops).expect("operations apply");
        }
    }

    async fn err(&self, tool: &dyn Tool, args: Value) -> ToolError {
        match self.call(tool, args.clone()).await {
            Ok(out) => panic!(
                "{} {args}: expected an error, got {}",
                tool.name(),
                text(&out)
            ),
            Err(e) => e,
        }
    }

    async fn add(&mut self, node_type: &str, name: &str, params: Value) -> String {
        let tool = AddNodes::new(self.cat.clone());
        let msg = self
            .run(
                &tool,
                json!({"nodeType": node_type, "name": name,
                       "connectionParametersReasoning": "test", "connectionParameters": params}),
            )
            .await;
        id_of(&msg)
    }

    /// [`Session::add`] without the `ai_*` connections add_nodes makes by itself (for tests of
    /// connect_nodes).
    async fn add_alone(&mut self, node_type: &str, name: &str, params: Value) -> String {
        let tool = AddNodes::new(self.cat.clone());
        let args = json!({"nodeType": node_type, "name": name,
                          "connectionParametersReasoning": "test", "connectionParameters": params});
        let out = self
            .call(&tool, args.clone())
            .await
            .unwrap_or_else(|e| panic!("add_nodes {args}: {e}"));
        for (_, value) in &out.writes {
            let ops: Vec<Operation> = parse_operations(value)
                .expect("operations parse")
                .into_iter()
                .filter(|op| matches!(op, Operation::AddNodes { .. }))
                .collect();
            self.wf = apply_operations(&self.wf, &ops).expect("operations apply");
        }
        id_of(&text(&out))
    }

    async fn connect(&mut self, source: &str, target: &str) -> String {
        let tool = ConnectNodes::new(self.cat.clone());
        self.run(
            &tool,
            json!({"sourceNodeId": source, "targetNodeId": target}),
        )
        .await
    }

    fn name(&self, id: &str) -> String {
        self.wf.node_by_id(id).expect("node").name.clone()
    }

    fn has_edge(&self, source: &str, kind: &str, target: &str) -> bool {
        self.wf
            .edges()
            .iter()
            .any(|e| e.source == source && e.kind == kind && e.target.node == target)
    }
}

fn text(out: &ToolOutput) -> String {
    out.content.as_str().unwrap_or_default().to_string()
}

fn id_of(msg: &str) -> String {
    msg.split("with ID ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no id in {msg}"))
        .to_string()
}

fn ops_of(out: &ToolOutput) -> Vec<Operation> {
    out.writes
        .iter()
        .flat_map(|(_, v)| parse_operations(v).expect("ops"))
        .collect()
}
