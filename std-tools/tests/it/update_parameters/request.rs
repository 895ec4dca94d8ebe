//! The request sent to the model, seen by a recording model.

use super::*;

/// Records every request and answers with fixed parameters.
struct Recording {
    requests: Mutex<Vec<(ModelRequest, String)>>,
    answer: Value,
}

#[async_trait]
impl ChatModel for Recording {
    fn name(&self) -> String {
        "test/recording".into()
    }
    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        if let Ok(mut r) = self.requests.lock() {
            r.push((req.clone(), ctx.node.clone()));
        }
        Ok(ModelResponse {
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "respond".into(),
                args: self.answer.clone(),
            }],
            stop_reason: "tool_use".into(),
            ..ModelResponse::default()
        })
    }
}

#[tokio::test]
async fn request_has_cacheable_definitions_and_live_workflow() {
    let rec = Arc::new(Recording {
        requests: Mutex::new(Vec::new()),
        answer: json!({"parameters": {"mode": "manual", "assignments": {"assignments": []}}}),
    });
    let model: Arc<dyn ChatModel> = rec.clone();
    let ctx = ctx_with(Some(model), state());
    ok(call(
        json!({"nodeId": "set-1", "changes": ["Add field 'status' with value 'processed'"]}),
        &ctx,
    )
    .await);
    let requests = rec.requests.lock().map(|r| r.clone()).unwrap_or_default();
    assert_eq!(requests.len(), 1);
    let (req, node) = &requests[0];
    assert_eq!(node, "detached");
    assert_eq!(req.system.len(), 3);
    let instructions = &req.system[0];
    assert!(instructions.cacheable);
    assert!(instructions.text.contains("expert n8n workflow architect"));
    assert!(instructions.text.contains("Set (Edit Fields) Node"));
    assert!(instructions.text.contains("n8n Expression Rules"));
    assert!(!instructions.text.contains("$fromAI Expression Support"));
    let defs = &req.system[1];
    assert!(defs.cacheable);
    assert!(defs.text.contains("<node_properties_definition>"));
    assert!(defs.text.contains("\"assignments\"") && defs.text.contains("assignmentCollection"));
    // jsonOutput is only shown in raw mode.
    assert!(!defs.text.contains("jsonOutput"), "{}", defs.text);
    let live = &req.system[2];
    assert!(!live.cacheable);
    assert!(live.text.contains("<current_workflow_json>"));
    assert!(live.text.contains("\"HTTP Request\""));
    assert!(
        live.text.contains("Name: Edit Fields") && live.text.contains("Type: n8n-nodes-base.set")
    );
    assert!(live
        .text
        .contains("<requested_changes>\n1. Add field 'status' with value 'processed'"));
    assert!(live
        .text
        .contains("Build a workflow that posts orders to our API"));
    assert_eq!(req.tools.len(), 1);
    assert_eq!(req.tools[0].name, "respond");
    assert_eq!(req.tool_choice, ToolChoice::Tool("respond".into()));
    assert_eq!(req.messages.len(), 1);
    assert_eq!(req.messages[0]["type"], "human");
}

#[tokio::test]
async fn tool_nodes_get_the_from_ai_guide() {
    let rec = Arc::new(Recording {
        requests: Mutex::new(Vec::new()),
        answer: json!({"parameters": {"sendTo": "={{ $fromAI('to') }}"}}),
    });
    let model: Arc<dyn ChatModel> = rec.clone();
    let ctx = ctx_with(Some(model), state());
    ok(call(
        json!({"nodeId": "gmail-tool-1", "changes": ["Let AI choose the recipient"]}),
        &ctx,
    )
    .await);
    let requests = rec.requests.lock().map(|r| r.clone()).unwrap_or_default();
    let text = &requests[0].0.system[0].text;
    assert!(text.contains("$fromAI Expression Support"));
    assert!(text.contains("Resource / Operation Nodes"));
    // descriptionType is shown; toolDescription only once it is `manual`.
    assert!(requests[0].0.system[1].text.contains("descriptionType"));
    assert!(!requests[0].0.system[1].text.contains("toolDescription"));
}

/// On the real n8n catalogue (`$AGENTGRAPH_N8N_CATALOGUE`, skipped without it): the request for a
/// fresh node of every type builds, its definitions stay within the cap, and every node type
/// ending in `Tool` gets the `$fromAI` guide.
#[test]
fn real_catalogue_requests_stay_within_the_cap() {
    use agentgraph_std_tools::builder::update_parameters::{build_request, MAX_DEFINITION_CHARS};
    use agentgraph_std_tools::workflow::WorkflowNode;
    let Some(dir) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let cat = match Catalogue::load_n8n_dir(dir) {
        Ok(c) => c,
        Err(e) => panic!("real catalogue: {e}"),
    };
    let mut largest = (0usize, String::new());
    let mut count = 0;
    for node_type in cat.types() {
        let Some(desc) = cat.get(node_type, None) else {
            continue;
        };
        let node = WorkflowNode::new("n1", "Node", node_type, desc.version.max(), [0.0, 0.0]);
        let mut wf = Workflow::default();
        wf.add_node(node.clone());
        let req = build_request(desc, &wf, &node, &["Set the main option".into()], None);
        let defs = &req.system[1].text;
        assert!(
            defs.len() < MAX_DEFINITION_CHARS + 400,
            "{node_type}: {}",
            defs.len()
        );
        if defs.len() > largest.0 {
            largest = (defs.len(), node_type.to_string());
        }
        if node_type.ends_with("Tool") {
            assert!(
                req.system[0].text.contains("$fromAI Expression Support"),
                "{node_type}"
            );
        }
        count += 1;
    }
    eprintln!(
        "built {count} requests; largest definitions: {} chars ({})",
        largest.0, largest.1
    );
    assert!(count > 500);
}
