//! Every error code.

use super::*;

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
