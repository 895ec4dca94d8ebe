//! `update_node_parameters`: happy paths, post-processing, the request sent to the model and
//! every error code, with scripted and recording models.

use agentgraph_agents::models::scripted::ScriptedModel;
use agentgraph_agents::models::{
    CallContext, ChatModel, ModelError, ModelRequest, ModelResponse, ToolCall, ToolChoice,
};
use agentgraph_agents::tools::{validate_args, Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::update_parameters::{answer_schema, TOOL_NAME};
use agentgraph_std_tools::builder::UpdateNodeParameters;
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{apply_operations, parse_operations};
use agentgraph_std_tools::workflow::Workflow;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

fn tool() -> UpdateNodeParameters {
    match Catalogue::builtin() {
        Ok(c) => UpdateNodeParameters::new(Arc::new(c)),
        Err(e) => panic!("builtin catalogue: {e}"),
    }
}

fn workflow() -> Value {
    json!({
        "name": "Test",
        "nodes": [
            {"id": "trigger-1", "name": "Webhook", "type": "n8n-nodes-base.webhook",
             "typeVersion": 2, "position": [0, 0], "parameters": {"path": "in"}},
            {"id": "set-1", "name": "Edit Fields", "type": "n8n-nodes-base.set",
             "typeVersion": 3.4, "position": [200, 0], "parameters": {}},
            {"id": "http-1", "name": "HTTP Request", "type": "n8n-nodes-base.httpRequest",
             "typeVersion": 4.2, "position": [400, 0],
             "parameters": {"method": "GET", "url": "", "options": {}}},
            {"id": "gmail-tool-1", "name": "Send Email", "type": "n8n-nodes-base.gmailTool",
             "typeVersion": 2.1, "position": [600, 200], "parameters": {}},
            {"id": "gmail-1", "name": "Gmail", "type": "n8n-nodes-base.gmail",
             "typeVersion": 2.1, "position": [600, 0], "parameters": {}},
            {"id": "odd-1", "name": "Odd", "type": "n8n-nodes-base.doesNotExist",
             "typeVersion": 1, "position": [800, 0], "parameters": {}}
        ],
        "connections": {
            "Webhook": {"main": [[{"node": "Edit Fields", "type": "main", "index": 0}]]},
            "Edit Fields": {"main": [[{"node": "HTTP Request", "type": "main", "index": 0}]]}
        }
    })
}

fn state() -> StateView {
    StateView::from_object(json!({
        "workflow": workflow(),
        "messages": [
            {"type": "human", "id": "h1", "content": "Build a workflow that posts orders to our API"},
            {"type": "ai", "id": "a1", "content": "On it."}
        ]
    }))
}

fn respond(parameters: Value) -> Value {
    json!({"node": "detached", "tool_calls": [{"name": "respond", "args": {"parameters": parameters}}]})
}

fn scripted(responses: Vec<Value>) -> Arc<dyn ChatModel> {
    match ScriptedModel::from_json(json!({ "responses": responses })) {
        Ok(m) => Arc::new(m),
        Err(e) => panic!("script: {e}"),
    }
}

fn ctx_with(model: Option<Arc<dyn ChatModel>>, state: StateView) -> ToolContext {
    ToolContext::detached(state).with_model(model)
}

async fn call(args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    tool().call(args, ctx).await
}

fn ok(r: Result<ToolOutput, ToolError>) -> ToolOutput {
    match r {
        Ok(o) => o,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(r: Result<ToolOutput, ToolError>) -> ToolError {
    match r {
        Ok(o) => panic!("expected an error, got {o:?}"),
        Err(e) => e,
    }
}

fn text(out: &ToolOutput) -> &str {
    out.content.as_str().unwrap_or_default()
}

/// The single updateNode operation written to `channel`.
fn update_op(out: &ToolOutput, channel: &str) -> Value {
    assert_eq!(out.writes.len(), 1, "{:?}", out.writes);
    assert_eq!(out.writes[0].0, channel);
    let ops = out.writes[0].1.as_array().cloned().unwrap_or_default();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["type"], "updateNode");
    ops[0].clone()
}

fn applied(out: &ToolOutput) -> Workflow {
    let wf = match Workflow::from_value(workflow()) {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    let ops = match parse_operations(&out.writes[0].1) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    match apply_operations(&wf, &ops) {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn spec_and_schemas() {
    let t = tool();
    assert_eq!(t.name(), TOOL_NAME);
    assert_eq!(t.spec().name, "update_node_parameters");
    let schema = t.input_schema();
    assert!(validate_args(&schema, &json!({"nodeId": "a", "changes": ["x"]})).is_ok());
    assert!(validate_args(&schema, &json!({"changes": ["x"]})).is_err());
    assert!(validate_args(&answer_schema(), &json!({"parameters": {}})).is_ok());
    assert!(validate_args(&answer_schema(), &json!({"parameters": "x"})).is_err());
}

#[tokio::test]
async fn set_node_happy_path_with_prefix_fixing() {
    let params = json!({
        "mode": "manual",
        "assignments": {"assignments": [
            {"id": "id-1", "name": "status", "value": "processed", "type": "string"},
            {"id": "id-2", "name": "timestamp", "value": "{{ $now.toISO() }}", "type": "string"},
            {"id": "id-3", "name": "userId", "value": "={{ $('Webhook').item.json.body.id }}", "type": "string"}
        ]},
        "options": {}
    });
    let ctx = ctx_with(Some(scripted(vec![respond(params)])), state());
    let out = ok(call(
        json!({"nodeId": "set-1", "changes": [
            "Add field 'status' with value 'processed'",
            "Add field 'timestamp' with current date",
            "Add field 'userId' from the webhook body"
        ]}),
        &ctx,
    )
    .await);
    let msg = text(&out);
    assert!(
        msg.starts_with(
            "Successfully updated parameters for node \"Edit Fields\":\n- Add field 'status'"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("Parameters changed: added assignments, mode, options"),
        "{msg}"
    );
    assert!(
        msg.contains("Expression prefixes fixed: assignments.assignments[1].value"),
        "{msg}"
    );
    assert!(!msg.contains("does not define"), "{msg}");
    let op = update_op(&out, "operations");
    assert_eq!(op["nodeId"], "set-1");
    let a = &op["updates"]["parameters"]["assignments"]["assignments"];
    assert_eq!(a[1]["value"], "={{ $now.toISO() }}");
    assert_eq!(a[2]["value"], "={{ $('Webhook').item.json.body.id }}");
    let wf = applied(&out);
    let node = wf
        .node_by_id("set-1")
        .map(|n| n.parameters.clone())
        .unwrap_or_default();
    assert_eq!(node["assignments"]["assignments"][0]["name"], "status");
}

#[tokio::test]
async fn http_request_happy_path() {
    let params = json!({
        "method": "POST",
        "url": "https://api.example.com/orders/{{ $json.orderId }}",
        "authentication": "genericCredentialType",
        "genericAuthType": "httpBearerAuth",
        "sendHeaders": true,
        "headerParameters": {"parameters": [{"name": "Content-Type", "value": "application/json"}]},
        "sendBody": true,
        "contentType": "json",
        "specifyBody": "keypair",
        "bodyParameters": {"parameters": [{"name": "city", "value": "{{ $json.city }}"}]},
        "options": {}
    });
    let ctx = ctx_with(Some(scripted(vec![respond(params)])), state());
    let out = ok(call(
        json!({"nodeId": "http-1", "changes": [
            "Set the URL to https://api.example.com/orders/<orderId>",
            "Set method to POST",
            "Add header Content-Type with value application/json",
            "Set body to { city: {{ $json.city }} }"
        ]}),
        &ctx,
    )
    .await);
    let msg = text(&out);
    assert!(
        msg.contains("Successfully updated parameters for node \"HTTP Request\""),
        "{msg}"
    );
    assert!(msg.contains("modified method, url"), "{msg}");
    assert!(
        msg.contains("added authentication, bodyParameters"),
        "{msg}"
    );
    assert!(
        msg.contains("Expression prefixes fixed: url, bodyParameters.parameters[0].value")
            || msg.contains("Expression prefixes fixed: bodyParameters.parameters[0].value, url"),
        "{msg}"
    );
    let op = update_op(&out, "operations");
    let p = &op["updates"]["parameters"];
    assert_eq!(
        p["url"],
        "=https://api.example.com/orders/{{ $json.orderId }}"
    );
    assert_eq!(
        p["bodyParameters"]["parameters"][0]["value"],
        "={{ $json.city }}"
    );
    assert_eq!(
        p["headerParameters"]["parameters"][0]["value"],
        "application/json"
    );
    let wf = applied(&out);
    assert_eq!(
        wf.node_by_name("HTTP Request")
            .map(|n| n.parameters["method"].clone()),
        Some(json!("POST"))
    );
}

#[tokio::test]
async fn gmail_tool_accepts_from_ai() {
    let params = json!({
        "resource": "message", "operation": "send",
        "sendTo": "={{ $fromAI('to') }}",
        "subject": "{{ $fromAI('subject') }}",
        "message": "$fromAI('message_html', 'The body as HTML')",
        "options": {}
    });
    let ctx = ctx_with(Some(scripted(vec![respond(params)])), state());
    let out = ok(call(
        json!({"nodeId": "gmail-tool-1", "changes": [
            "Set sendTo to {{ $fromAI('to') }}",
            "Set subject to {{ $fromAI('subject') }}",
            "Set message to {{ $fromAI('message_html') }}"
        ]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "operations");
    let p = &op["updates"]["parameters"];
    assert_eq!(p["sendTo"], "={{ $fromAI('to') }}");
    assert_eq!(p["subject"], "={{ $fromAI('subject') }}");
    assert_eq!(
        p["message"],
        "={{ $fromAI('message_html', 'The body as HTML') }}"
    );
    assert_eq!(op["nodeId"], "gmail-tool-1");
}

#[tokio::test]
async fn from_ai_outside_tool_nodes_is_rejected() {
    let params = json!({"resource": "message", "operation": "send",
        "sendTo": "={{ $fromAI('to') }}", "subject": "Hi", "message": "x"});
    let ctx = ctx_with(Some(scripted(vec![respond(params)])), state());
    let e = err(call(
        json!({"nodeId": "gmail-1", "changes": ["Let AI pick the recipient"]}),
        &ctx,
    )
    .await);
    assert_eq!(e.code, "FROMAI_NOT_ALLOWED");
    assert!(
        e.message.contains("\"Gmail\"") && e.message.contains("sendTo"),
        "{}",
        e.message
    );
    assert!(e.message.contains("tool"), "{}", e.message);
}

#[tokio::test]
async fn invalid_first_answer_is_repaired() {
    let ctx = ctx_with(
        Some(scripted(vec![
            json!({"node": "detached", "tool_calls": [{"name": "respond", "args": {"params": {"url": "x"}}}]}),
            respond(json!({"method": "GET", "url": "https://example.com", "options": {}})),
        ])),
        state(),
    );
    let out = ok(call(
        json!({"nodeId": "http-1", "changes": ["Set the URL to https://example.com"]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "operations");
    assert_eq!(op["updates"]["parameters"]["url"], "https://example.com");
    assert!(text(&out).contains("modified url"), "{}", text(&out));
}

#[tokio::test]
async fn name_fallback_unknown_keys_and_custom_channels() {
    let st = StateView::from_object(json!({"wf": workflow()}));
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"method": "GET", "url": "https://a.b", "foo": 1, "options": {}}),
        )])),
        st,
    )
    .with_settings(Arc::new(
        json!({"workflow_channel": "wf", "operations_channel": "ops"}),
    ));
    let out = ok(call(
        json!({"nodeId": "HTTP Request", "changes": ["Set the URL to https://a.b"]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "ops");
    assert_eq!(op["nodeId"], "http-1");
    let msg = text(&out);
    assert!(msg.contains("does not define: foo"), "{msg}");
    assert_eq!(op["updates"]["parameters"]["foo"], 1);
}

#[tokio::test]
async fn queued_operations_are_seen() {
    let st = StateView::from_object(json!({
        "workflow": workflow(),
        "operations": [{"type": "addNodes", "nodes": [
            {"id": "new-1", "name": "Code", "type": "n8n-nodes-base.code", "typeVersion": 2,
             "position": [0, 300], "parameters": {}}
        ]}]
    }));
    let code = "return [{ json: { a: `{{x}}` } }];";
    let ctx = ctx_with(Some(scripted(vec![respond(json!({"jsCode": code}))])), st);
    let out = ok(call(
        json!({"nodeId": "new-1", "changes": ["Return one item"]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "operations");
    assert_eq!(op["updates"]["parameters"]["jsCode"], code);
    assert!(!text(&out).contains("prefixes fixed"), "{}", text(&out));
}

#[tokio::test]
async fn error_codes() {
    let m = || Some(scripted(vec![respond(json!({}))]));
    // NO_CHANGES
    let e = err(call(
        json!({"nodeId": "set-1", "changes": []}),
        &ctx_with(m(), state()),
    )
    .await);
    assert_eq!(e.code, "NO_CHANGES");
    let e = err(call(
        json!({"nodeId": "set-1", "changes": ["  "]}),
        &ctx_with(m(), state()),
    )
    .await);
    assert_eq!(e.code, "NO_CHANGES");
    // INVALID_INPUT
    let e = err(call(json!({"changes": ["x"]}), &ctx_with(m(), state())).await);
    assert_eq!(e.code, "INVALID_INPUT");
    // NODE_NOT_FOUND
    let e = err(call(
        json!({"nodeId": "nope", "changes": ["x"]}),
        &ctx_with(m(), state()),
    )
    .await);
    assert_eq!(e.code, "NODE_NOT_FOUND");
    assert!(e.message.contains("Edit Fields (set-1)"), "{}", e.message);
    let empty = StateView::from_object(json!({}));
    let e = err(call(
        json!({"nodeId": "set-1", "changes": ["x"]}),
        &ctx_with(m(), empty),
    )
    .await);
    assert_eq!(e.code, "NODE_NOT_FOUND");
    // INVALID_WORKFLOW
    let bad = StateView::from_object(json!({"workflow": {"nodes": 3}}));
    let e = err(call(
        json!({"nodeId": "set-1", "changes": ["x"]}),
        &ctx_with(m(), bad),
    )
    .await);
    assert_eq!(e.code, "INVALID_WORKFLOW");
    // NODE_TYPE_NOT_FOUND
    let e = err(call(
        json!({"nodeId": "odd-1", "changes": ["x"]}),
        &ctx_with(m(), state()),
    )
    .await);
    assert_eq!(e.code, "NODE_TYPE_NOT_FOUND");
    assert!(e.message.contains("doesNotExist"), "{}", e.message);
    // NO_MODEL
    let e = err(call(
        json!({"nodeId": "set-1", "changes": ["x"]}),
        &ctx_with(None, state()),
    )
    .await);
    assert_eq!(e.code, "NO_MODEL");
    // PARAMETER_UPDATE_FAILED: two invalid answers.
    let bad_answer = json!({"node": "detached", "tool_calls": [{"name": "respond", "args": {"parameters": "nope"}}]});
    let ctx = ctx_with(
        Some(scripted(vec![bad_answer.clone(), bad_answer])),
        state(),
    );
    let e = err(call(json!({"nodeId": "set-1", "changes": ["x"]}), &ctx).await);
    assert_eq!(e.code, "PARAMETER_UPDATE_FAILED");
    assert!(
        e.message.contains("Edit Fields") && e.message.contains("invalid"),
        "{}",
        e.message
    );
    // PARAMETER_UPDATE_FAILED: the model call fails (script names another node).
    let ctx = ctx_with(
        Some(scripted(vec![
            json!({"node": "someone_else", "text": "hi"}),
        ])),
        state(),
    );
    let e = err(call(json!({"nodeId": "set-1", "changes": ["x"]}), &ctx).await);
    assert_eq!(e.code, "PARAMETER_UPDATE_FAILED");
    assert!(e.message.contains("model call failed"), "{}", e.message);
    // FROMAI_NOT_ALLOWED in a Set node.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"assignments": {"assignments": [
            {"id": "1", "name": "a", "value": "{{ $fromAI('a') }}", "type": "string"}]}}),
        )])),
        state(),
    );
    let e = err(call(json!({"nodeId": "set-1", "changes": ["x"]}), &ctx).await);
    assert_eq!(e.code, "FROMAI_NOT_ALLOWED");
    assert!(
        e.message.contains("assignments.assignments[0].value"),
        "{}",
        e.message
    );
}

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

/// On the real n8n catalogue (skipped when `../shared/data/n8n` is absent): the request for a
/// fresh node of every type builds, its definitions stay within the cap, and every node type
/// ending in `Tool` gets the `$fromAI` guide.
#[test]
fn real_catalogue_requests_stay_within_the_cap() {
    use agentgraph_std_tools::builder::update_parameters::{build_request, MAX_DEFINITION_CHARS};
    use agentgraph_std_tools::workflow::WorkflowNode;
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/n8n"
    ));
    if !dir.is_dir() {
        eprintln!("skipping: {} is absent", dir.display());
        return;
    }
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

// ---------------------------------------------------------------------------------------------
// Connection-shaping parameters (WOULD_BREAK_CONNECTIONS)
// ---------------------------------------------------------------------------------------------

fn agent_state() -> StateView {
    StateView::from_object(json!({
        "workflow": {
            "name": "Agents",
            "nodes": [
                {"id": "agent-1", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent",
                 "typeVersion": 2.2, "position": [0, 0],
                 "parameters": {"hasOutputParser": true, "promptType": "define", "text": "hi"}},
                {"id": "parser-1", "name": "Parser",
                 "type": "@n8n/n8n-nodes-langchain.outputParserStructured",
                 "typeVersion": 1.3, "position": [0, 200], "parameters": {}},
                {"id": "store-1", "name": "Knowledge",
                 "type": "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
                 "typeVersion": 1.3, "position": [200, 200],
                 "parameters": {"mode": "retrieve-as-tool", "toolName": "kb",
                                "toolDescription": "docs", "memoryKey": "k"}}
            ],
            "connections": {
                "Parser": {"ai_outputParser": [[{"node": "Agent", "type": "ai_outputParser", "index": 0}]]},
                "Knowledge": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
            }
        }
    }))
}

#[tokio::test]
async fn dropped_connection_parameters_are_kept() {
    // The model leaves hasOutputParser out: it is kept, and the message says why.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"promptType": "define", "text": "Summarise the input"}),
        )])),
        agent_state(),
    );
    let out = ok(call(
        json!({"nodeId": "agent-1", "changes": ["Set the prompt to Summarise the input"]}),
        &ctx,
    )
    .await);
    let t = text(&out);
    assert!(!t.contains("removed hasOutputParser"), "{t}");
    assert!(t.contains("Kept hasOutputParser as before"), "{t}");
    assert!(
        t.contains("\"Parser\" → \"Agent\" (ai_outputParser)"),
        "{t}"
    );
    let op = update_op(&out, "operations");
    assert_eq!(op["updates"]["parameters"]["hasOutputParser"], true);
    assert_eq!(op["updates"]["parameters"]["text"], "Summarise the input");

    // A vector store used as a tool: the model drops `mode`.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"toolName": "kb", "toolDescription": "Company handbook", "memoryKey": "k"}),
        )])),
        agent_state(),
    );
    let out = ok(call(
        json!({"nodeId": "store-1", "changes": ["Describe the tool as the company handbook"]}),
        &ctx,
    )
    .await);
    let op = update_op(&out, "operations");
    assert_eq!(
        op["updates"]["parameters"]["mode"],
        "retrieve-as-tool",
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("Kept mode as before"), "{}", text(&out));
}

#[tokio::test]
async fn requested_change_that_breaks_connections_is_refused() {
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"hasOutputParser": false, "promptType": "define", "text": "hi"}),
        )])),
        agent_state(),
    );
    let e = err(call(
        json!({"nodeId": "agent-1", "changes": ["Remove the output parser"]}),
        &ctx,
    )
    .await);
    assert_eq!(e.code, "WOULD_BREAK_CONNECTIONS", "{e}");
    assert!(
        e.message
            .contains("\"Parser\" → \"Agent\" (ai_outputParser)"),
        "{e}"
    );
    assert!(e.message.contains("remove_connection"), "{e}");
    // Unconnected nodes change freely.
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"mode": "insert", "memoryKey": "k"}),
        )])),
        StateView::from_object(json!({"workflow": {
            "name": "x",
            "nodes": [{"id": "s", "name": "Store",
                       "type": "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
                       "typeVersion": 1.3, "position": [0, 0],
                       "parameters": {"mode": "retrieve-as-tool"}}],
            "connections": {}
        }})),
    );
    let out = ok(call(
        json!({"nodeId": "s", "changes": ["Set mode to insert"]}),
        &ctx,
    )
    .await);
    assert_eq!(
        update_op(&out, "operations")["updates"]["parameters"]["mode"],
        "insert"
    );
}

#[tokio::test]
async fn from_ai_is_allowed_in_langchain_tool_nodes() {
    let ctx = ctx_with(
        Some(scripted(vec![respond(
            json!({"url": "={{ $fromAI('url') }}", "toolDescription": "Fetch a page"}),
        )])),
        StateView::from_object(json!({"workflow": {
            "name": "x",
            "nodes": [{"id": "t", "name": "Fetch Page",
                       "type": "@n8n/n8n-nodes-langchain.toolHttpRequest",
                       "typeVersion": 1.1, "position": [0, 0], "parameters": {}}],
            "connections": {}
        }})),
    );
    let out = ok(call(
        json!({"nodeId": "t", "changes": ["Let the agent pick the URL"]}),
        &ctx,
    )
    .await);
    assert_eq!(
        update_op(&out, "operations")["updates"]["parameters"]["url"],
        "={{ $fromAI('url') }}"
    );
}

/// The caller's execution schema (`workflow_context`) is shown to the updater model, so it can
/// use real field names; nothing is added when there is none.
#[test]
fn the_workflow_context_is_shown_to_the_updater() {
    use agentgraph_std_tools::builder::update_parameters::{
        build_request, build_request_with_context,
    };
    use agentgraph_std_tools::workflow::WorkflowNode;
    let cat = Catalogue::builtin().unwrap();
    let desc = cat.get("n8n-nodes-base.set", None).unwrap();
    let node = WorkflowNode::new(
        "n1",
        "Edit",
        "n8n-nodes-base.set",
        desc.version.max(),
        [0.0, 0.0],
    );
    let mut wf = Workflow::default();
    wf.add_node(node.clone());
    let changes = ["Copy the customer's email".to_string()];
    let context = json!({"execution_schema": [{"nodeName": "Trigger",
        "schema": {"customer_email_field": "string"}}]});
    let req = build_request_with_context(desc, &wf, &node, &changes, None, Some(&context));
    let dynamic = &req.system[2].text;
    assert!(dynamic.contains("<workflow_context>"), "{dynamic}");
    assert!(dynamic.contains("customer_email_field"), "{dynamic}");
    for none in [None, Some(&json!({})), Some(&Value::Null)] {
        let req = build_request_with_context(desc, &wf, &node, &changes, None, none);
        assert!(!req.system[2].text.contains("<workflow_context>"));
    }
    let plain = build_request(desc, &wf, &node, &changes, None);
    assert!(!plain.system[2].text.contains("<workflow_context>"));
}
