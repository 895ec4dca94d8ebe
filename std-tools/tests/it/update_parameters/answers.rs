//! Happy paths and post-processing: prefix fixing, `$fromAI` rules, repair, name
//! fallback, queued operations.

use super::*;

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
