//! Parameter rules: webhook response mode, required parameters and option values, both
//! following visibility.

use super::*;

#[test]
fn webhook_response_mode() {
    let hook = |mode: &str| {
        node(
            "Hook",
            "n8n-nodes-base.webhook",
            2.0,
            json!({"path": "x", "responseMode": mode}),
        )
    };
    let respond = node("Respond", "n8n-nodes-base.respondToWebhook", 1.1, json!({}));
    let bad = wf(vec![hook("responseNode")], json!({}));
    let r = all(&bad);
    assert!(on(&r, codes::WEBHOOK_RESPOND_NODE_MISSING, "Hook"));
    let bad = wf(
        vec![hook("onReceived"), respond.clone()],
        json!({"Hook": main_to("Respond")}),
    );
    assert!(on(
        &all(&bad),
        codes::RESPOND_NODE_WITHOUT_RESPONSE_MODE,
        "Respond"
    ));
    let good = wf(
        vec![hook("responseNode"), respond],
        json!({"Hook": main_to("Respond")}),
    );
    let r = all(&good);
    assert_eq!(
        count(&r, codes::WEBHOOK_RESPOND_NODE_MISSING)
            + count(&r, codes::RESPOND_NODE_WITHOUT_RESPONSE_MODE),
        0
    );
}

#[test]
fn missing_required_parameters_follow_visibility() {
    let w = |n: Value| wf(vec![trigger(), n], json!({"Start": main_to("N")}));
    let r = all(&w(node("N", "n8n-nodes-base.httpRequest", 4.2, json!({}))));
    let f = r.with_code(codes::MISSING_REQUIRED_PARAMETER).next();
    assert_eq!(
        f.and_then(|f| f.path.clone()).as_deref(),
        Some("url"),
        "{}",
        r.render_text("")
    );
    let r = all(&w(node(
        "N",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({"url": "https://x.y"}),
    )));
    assert_eq!(
        count(&r, codes::MISSING_REQUIRED_PARAMETER),
        0,
        "{}",
        r.render_text("")
    );
    // redirectURL is required but only shown for respondWith = redirect
    let hook = node(
        "Start",
        "n8n-nodes-base.webhook",
        2.0,
        json!({"path": "p", "responseMode": "responseNode"}),
    );
    let rw = |p| {
        wf(
            vec![
                hook.clone(),
                node("N", "n8n-nodes-base.respondToWebhook", 1.1, p),
            ],
            json!({"Start": main_to("N")}),
        )
    };
    assert_eq!(
        count(&all(&rw(json!({}))), codes::MISSING_REQUIRED_PARAMETER),
        0
    );
    let r = all(&rw(json!({"respondWith": "redirect"})));
    assert!(r
        .with_code(codes::MISSING_REQUIRED_PARAMETER)
        .any(|f| f.path.as_deref() == Some("redirectURL")));
    // an empty resource locator counts as missing
    let sheets = |doc: &str| {
        node(
            "N",
            "n8n-nodes-base.googleSheets",
            4.6,
            json!({
                "operation": "read",
                "documentId": {"__rl": true, "mode": "id", "value": doc},
                "sheetName": {"__rl": true, "mode": "id", "value": "Sheet1"}
            }),
        )
    };
    assert!(all(&w(sheets("")))
        .with_code(codes::MISSING_REQUIRED_PARAMETER)
        .any(|f| f.path.as_deref() == Some("documentId")));
    assert!(!all(&w(sheets("abc")))
        .with_code(codes::MISSING_REQUIRED_PARAMETER)
        .any(|f| f.path.as_deref() == Some("documentId")));
}

#[test]
fn invalid_option_values_follow_visibility() {
    let w = |p: Value| {
        wf(
            vec![trigger(), node("N", "n8n-nodes-base.httpRequest", 4.2, p)],
            json!({"Start": main_to("N")}),
        )
    };
    let r = all(&w(json!({"url": "https://x.y", "method": "FETCH"})));
    assert!(on(&r, codes::INVALID_OPTION_VALUE, "N"));
    for ok in [json!("POST"), json!("={{ $json.method }}")] {
        let r = all(&w(json!({"url": "https://x.y", "method": ok})));
        assert_eq!(count(&r, codes::INVALID_OPTION_VALUE), 0);
    }
    // gmail: `operation` options depend on `resource`
    let gmail = |res: &str, op: &str| {
        wf(
            vec![
                trigger(),
                node(
                    "N",
                    "n8n-nodes-base.gmail",
                    2.1,
                    json!({"resource": res, "operation": op}),
                ),
            ],
            json!({"Start": main_to("N")}),
        )
    };
    assert!(on(
        &all(&gmail("label", "send")),
        codes::INVALID_OPTION_VALUE,
        "N"
    ));
    assert_eq!(
        count(&all(&gmail("label", "getAll")), codes::INVALID_OPTION_VALUE),
        0
    );
    assert_eq!(
        count(&all(&gmail("message", "send")), codes::INVALID_OPTION_VALUE),
        0
    );
}
