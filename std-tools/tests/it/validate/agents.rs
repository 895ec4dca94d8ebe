//! Agent and tool rules: prompts, tools without parameters, `$fromAI` outside tools,
//! hard-coded credentials.

use super::*;

#[test]
fn agent_prompts() {
    let w = |params| {
        wf(
            vec![chat_trigger(), agent("Agent", params), model("Model")],
            json!({"Chat": main_to("Agent"), "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}}),
        )
    };
    let r = validate_configuration(&w(json!({"promptType": "define", "text": ""})), builtin());
    assert!(
        on(&r, codes::AGENT_NO_PROMPT, "Agent"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::AGENT_NO_SYSTEM_PROMPT, "Agent"));
    let r = validate_configuration(
        &w(json!({"promptType": "define", "text": "Summarise the news"})),
        builtin(),
    );
    assert!(on(&r, codes::AGENT_STATIC_PROMPT, "Agent"));
    let r = validate_configuration(
        &w(
            json!({"promptType": "define", "text": "=Summarise {{ $json.chatInput }}",
                  "options": {"systemMessage": "You are a news editor."}}),
        ),
        builtin(),
    );
    for c in [
        codes::AGENT_NO_PROMPT,
        codes::AGENT_STATIC_PROMPT,
        codes::AGENT_NO_SYSTEM_PROMPT,
    ] {
        assert_eq!(count(&r, c), 0, "{c}: {}", r.render_text(""));
    }
    // the default prompt type takes the chat input: no prompt finding
    let r = validate_configuration(&w(json!({"options": {"systemMessage": "x"}})), builtin());
    assert!(r.is_empty(), "{}", r.render_text(""));
}

fn with_tool(tool: Value) -> Workflow {
    wf(
        vec![
            chat_trigger(),
            agent("Agent", json!({"options": {"systemMessage": "x"}})),
            model("Model"),
            tool,
        ],
        json!({
            "Chat": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Tool": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        }),
    )
}

#[test]
fn tool_without_parameters() {
    let bad = with_tool(node("Tool", &format!("{LC}.toolCode"), 1.1, json!({})));
    assert!(on(&all(&bad), codes::TOOL_NO_PARAMETERS, "Tool"));
    let good = with_tool(node(
        "Tool",
        &format!("{LC}.toolCode"),
        1.1,
        json!({"name": "add", "description": "adds", "jsCode": "return 1"}),
    ));
    assert_eq!(count(&all(&good), codes::TOOL_NO_PARAMETERS), 0);
    // a tool with nothing to configure is fine bare
    let calc = with_tool(node(
        "Tool",
        &format!("{LC}.toolCalculator"),
        1.0,
        json!({}),
    ));
    assert_eq!(count(&all(&calc), codes::TOOL_NO_PARAMETERS), 0);
}

#[test]
fn from_ai_outside_tools() {
    let bad = wf(
        vec![
            trigger(),
            node(
                "H",
                "n8n-nodes-base.httpRequest",
                4.2,
                json!({"url": "={{ $fromAI('url', 'the page') }}"}),
            ),
            node(
                "Note",
                "n8n-nodes-base.stickyNote",
                1.0,
                json!({"content": "use ={{ $fromAI('x') }} in tools"}),
            ),
        ],
        json!({"Start": main_to("H")}),
    );
    let r = all(&bad);
    let f: Vec<_> = r.with_code(codes::FROM_AI_OUTSIDE_TOOL).collect();
    assert_eq!(f.len(), 1, "{}", r.render_text(""));
    assert_eq!(f[0].node.as_deref(), Some("H"));
    assert_eq!(f[0].path.as_deref(), Some("url"));
    let good = with_tool(node(
        "Tool",
        &format!("{LC}.toolHttpRequest"),
        1.1,
        json!({"url": "={{ $fromAI('url', 'the page') }}", "toolDescription": "fetch"}),
    ));
    assert_eq!(count(&all(&good), codes::FROM_AI_OUTSIDE_TOOL), 0);
}

#[test]
fn hard_coded_credentials() {
    let http = |headers: Value, query: Value| {
        node(
            "H",
            "n8n-nodes-base.httpRequest",
            4.2,
            json!({"url": "https://api.x.y", "sendHeaders": true, "headerParameters": {"parameters": headers},
                   "sendQuery": true, "queryParameters": {"parameters": query}}),
        )
    };
    let bad = wf(
        vec![
            trigger(),
            http(
                json!([{"name": "Authorization", "value": "Bearer sk-abcdefghijklmnop"}]),
                json!([{"name": "api_key", "value": "12345678"}]),
            ),
            node(
                "S",
                "n8n-nodes-base.set",
                3.4,
                json!({"assignments": {"assignments": [
                    {"name": "password", "value": "hunter2!", "type": "string"},
                    {"name": "city", "value": "Paris", "type": "string"}
                ]}}),
            ),
        ],
        json!({"Start": main_to("H"), "H": main_to("S")}),
    );
    let r = all(&bad);
    let paths: Vec<_> = r
        .with_code(codes::HARDCODED_CREDENTIAL)
        .map(|f| {
            (
                f.node.clone().unwrap_or_default(),
                f.path.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        paths,
        vec![
            (
                "H".to_string(),
                "headerParameters.parameters[0].value".to_string()
            ),
            (
                "H".to_string(),
                "queryParameters.parameters[0].value".to_string()
            ),
            (
                "S".to_string(),
                "assignments.assignments[0].value".to_string()
            ),
        ]
    );
    let good = wf(
        vec![
            trigger(),
            http(
                json!([{"name": "Authorization", "value": "=Bearer {{ $json.token }}"}, {"name": "Accept", "value": "application/json"}]),
                json!([{"name": "q", "value": "weather"}]),
            ),
        ],
        json!({"Start": main_to("H")}),
    );
    assert_eq!(count(&all(&good), codes::HARDCODED_CREDENTIAL), 0);
}
