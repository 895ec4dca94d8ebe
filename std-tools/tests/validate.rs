//! The validators: each rule triggered by a minimal workflow and quiet on the fixed one, the
//! report renderings, the two tools, robustness and speed.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use agentgraph_agents::tools::{Tool, ToolContext};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::catalogue::{Catalogue, NodeTypeDescription};
use agentgraph_std_tools::validate::{
    codes, rule, validate, validate_configuration, validate_structure, Report, RuleGroup, Severity,
    ValidateConfiguration, ValidateStructure, RULES,
};
use agentgraph_std_tools::workflow::Workflow;
use serde_json::{json, Value};

fn builtin() -> &'static Catalogue {
    static C: OnceLock<Catalogue> = OnceLock::new();
    C.get_or_init(|| Catalogue::builtin().expect("the built-in catalogue loads"))
}

fn real() -> Option<&'static Catalogue> {
    static C: OnceLock<Option<Catalogue>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/n8n"
        ));
        if !dir.is_dir() {
            println!("skipped: the real catalogue {} is absent", dir.display());
            return None;
        }
        Some(Catalogue::load_n8n_dir(&dir).expect("the real catalogue loads"))
    })
    .as_ref()
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

#[test]
fn rules_have_unique_codes_and_groups() {
    let mut codes_seen: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    codes_seen.sort();
    codes_seen.dedup();
    assert_eq!(codes_seen.len(), RULES.len());
    assert_eq!(
        rule(codes::NO_TRIGGER).map(|r| r.group),
        Some(RuleGroup::Structure)
    );
    assert_eq!(
        rule(codes::HARDCODED_CREDENTIAL).map(|r| r.group),
        Some(RuleGroup::Configuration)
    );
}

#[test]
fn no_trigger() {
    let bad = wf(vec![set("A")], json!({}));
    assert_eq!(count(&all(&bad), codes::NO_TRIGGER), 1);
    let good = wf(vec![trigger(), set("A")], json!({"Start": main_to("A")}));
    assert_eq!(count(&all(&good), codes::NO_TRIGGER), 0);
    // a disabled trigger does not count; an empty workflow has nothing to report
    let mut t = trigger();
    t["disabled"] = json!(true);
    assert_eq!(count(&all(&wf(vec![t], json!({}))), codes::NO_TRIGGER), 1);
    assert!(all(&Workflow::default()).is_empty());
}

#[test]
fn node_type_and_version_not_found() {
    let bad = wf(
        vec![
            trigger(),
            node("X", "n8n-nodes-base.doesNotExist", 1.0, json!({})),
            node(
                "H",
                "n8n-nodes-base.httpRequest",
                9.0,
                json!({"url": "https://x.y"}),
            ),
        ],
        json!({"Start": {"main": [[{"node": "X", "type": "main", "index": 0}, {"node": "H", "type": "main", "index": 0}]]}}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::NODE_TYPE_NOT_FOUND, "X"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::NODE_VERSION_NOT_FOUND, "H"));
    let good = wf(
        vec![
            trigger(),
            node(
                "H",
                "n8n-nodes-base.httpRequest",
                4.2,
                json!({"url": "https://x.y"}),
            ),
        ],
        json!({"Start": main_to("H")}),
    );
    let r = all(&good);
    assert_eq!(
        count(&r, codes::NODE_TYPE_NOT_FOUND) + count(&r, codes::NODE_VERSION_NOT_FOUND),
        0
    );
}

#[test]
fn ports_unresolvable() {
    let mut cat = Catalogue::new();
    let desc: NodeTypeDescription = serde_json::from_value(json!({
        "name": "x.broken", "version": 1, "group": ["transform"],
        "inputs": ["main"], "outputs": "={{ 42 }}", "properties": []
    }))
    .expect("description");
    cat.insert(desc);
    let ok: NodeTypeDescription = serde_json::from_value(json!({
        "name": "x.trigger", "version": 1, "group": ["trigger"],
        "inputs": [], "outputs": ["main"], "properties": []
    }))
    .expect("description");
    cat.insert(ok);
    let w = wf(
        vec![
            node("T", "x.trigger", 1.0, json!({})),
            node("B", "x.broken", 1.0, json!({})),
        ],
        json!({"T": main_to("B")}),
    );
    let r = validate_structure(&w, &cat);
    assert!(
        on(&r, codes::PORTS_UNRESOLVABLE, "B"),
        "{}",
        r.render_text("")
    );
    assert!(!on(&r, codes::PORTS_UNRESOLVABLE, "T"));
}

#[test]
fn connection_to_missing_node() {
    let bad = wf(vec![trigger()], json!({"Start": main_to("Ghost")}));
    assert!(on(&all(&bad), codes::CONNECTION_NODE_MISSING, "Start"));
    let good = wf(
        vec![trigger(), set("Ghost")],
        json!({"Start": main_to("Ghost")}),
    );
    assert_eq!(count(&all(&good), codes::CONNECTION_NODE_MISSING), 0);
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

#[test]
fn missing_required_input() {
    let bad = wf(
        vec![chat_trigger(), agent("Agent", json!({}))],
        json!({"Chat": main_to("Agent")}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::MISSING_REQUIRED_INPUT, "Agent"),
        "{}",
        r.render_text("")
    );
    assert!(r
        .with_code(codes::MISSING_REQUIRED_INPUT)
        .any(|f| f.message.contains("ai_languageModel")));
    let good = wf(
        vec![chat_trigger(), agent("Agent", json!({})), model("Model")],
        json!({
            "Chat": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(count(&all(&good), codes::MISSING_REQUIRED_INPUT), 0);
}

#[test]
fn missing_required_input_on_the_real_agent() {
    let Some(cat) = real() else { return };
    let a = node("Agent", &format!("{LC}.agent"), 3.0, json!({}));
    let bad = wf(
        vec![chat_trigger(), a.clone()],
        json!({"Chat": main_to("Agent")}),
    );
    assert!(on(
        &validate(&bad, cat),
        codes::MISSING_REQUIRED_INPUT,
        "Agent"
    ));
    let good = wf(
        vec![chat_trigger(), a, model("Model")],
        json!({
            "Chat": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(
        count(&validate(&good, cat), codes::MISSING_REQUIRED_INPUT),
        0
    );
}

#[test]
fn unsupported_connection_type() {
    // the model has no main input; a main connection listed as ai_tool mismatches
    let bad = wf(
        vec![
            trigger(),
            model("Model"),
            agent("Agent", json!({})),
            set("A"),
        ],
        json!({
            "Start": main_to("Model"),
            "A": {"main": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::UNSUPPORTED_CONNECTION_TYPE, "Model"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::UNSUPPORTED_CONNECTION_TYPE, "A"));
    // a source that does not output the type
    let bad = wf(
        vec![trigger(), set("A"), agent("Agent", json!({}))],
        json!({"Start": main_to("A"), "A": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}}),
    );
    assert!(on(&all(&bad), codes::UNSUPPORTED_CONNECTION_TYPE, "A"));
    let good = wf(
        vec![trigger(), agent("Agent", json!({})), model("Model")],
        json!({
            "Start": main_to("Agent"),
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }),
    );
    assert_eq!(count(&all(&good), codes::UNSUPPORTED_CONNECTION_TYPE), 0);
}

fn merge(params: Value) -> Value {
    node("Merge", "n8n-nodes-base.merge", 3.1, params)
}

#[test]
fn merge_inputs() {
    let conns = json!({
        "Start": {"main": [[{"node": "A", "type": "main", "index": 0}, {"node": "B", "type": "main", "index": 0}, {"node": "C", "type": "main", "index": 0}]]},
        "A": {"main": [[{"node": "Merge", "type": "main", "index": 0}]]},
        "B": {"main": [[{"node": "Merge", "type": "main", "index": 1}]]},
        "C": {"main": [[{"node": "Merge", "type": "main", "index": 2}]]}
    });
    let nodes = |m| vec![trigger(), set("A"), set("B"), set("C"), m];
    let bad = wf(nodes(merge(json!({}))), conns.clone());
    let r = all(&bad);
    assert!(
        on(&r, codes::MERGE_INPUT_OUT_OF_RANGE, "Merge"),
        "{}",
        r.render_text("")
    );
    let good = wf(nodes(merge(json!({"numberInputs": 3}))), conns);
    assert_eq!(count(&all(&good), codes::MERGE_INPUT_OUT_OF_RANGE), 0);
}

#[test]
fn merge_inputs_on_the_real_catalogue() {
    let Some(cat) = real() else { return };
    let conns = json!({
        "Start": {"main": [[{"node": "A", "type": "main", "index": 0}, {"node": "B", "type": "main", "index": 0}]]},
        "A": {"main": [[{"node": "Merge", "type": "main", "index": 0}]]},
        "B": {"main": [[{"node": "Merge", "type": "main", "index": 3}]]}
    });
    let m = |p| node("Merge", "n8n-nodes-base.merge", 3.2, p);
    let bad = wf(
        vec![trigger(), set("A"), set("B"), m(json!({"numberInputs": 3}))],
        conns.clone(),
    );
    assert!(on(
        &validate(&bad, cat),
        codes::MERGE_INPUT_OUT_OF_RANGE,
        "Merge"
    ));
    let good = wf(
        vec![trigger(), set("A"), set("B"), m(json!({"numberInputs": 4}))],
        conns,
    );
    assert_eq!(
        count(&validate(&good, cat), codes::MERGE_INPUT_OUT_OF_RANGE),
        0
    );
}

#[test]
fn input_and_output_indexes() {
    let bad = wf(
        vec![trigger(), set("A"), set("B")],
        json!({
            "Start": main_to("A"),
            "A": {"main": [[], [{"node": "B", "type": "main", "index": 1}]]}
        }),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::OUTPUT_INDEX_OUT_OF_RANGE, "A"),
        "{}",
        r.render_text("")
    );
    assert!(on(&r, codes::INPUT_INDEX_OUT_OF_RANGE, "B"));
    // an error output (onError: continueErrorOutput) is a second main output
    let mut a = set("A");
    a["onError"] = json!("continueErrorOutput");
    let good = wf(
        vec![trigger(), a, set("B")],
        json!({"Start": main_to("A"), "A": {"main": [[], [{"node": "B", "type": "main", "index": 0}]]}}),
    );
    let r = all(&good);
    assert_eq!(
        count(&r, codes::OUTPUT_INDEX_OUT_OF_RANGE) + count(&r, codes::INPUT_INDEX_OUT_OF_RANGE),
        0
    );
}

#[test]
fn sub_node_not_connected() {
    let bad = wf(vec![trigger(), model("Model")], json!({}));
    let r = all(&bad);
    assert!(on(&r, codes::SUB_NODE_NOT_CONNECTED, "Model"));
    assert!(
        !on(&r, codes::UNREACHABLE_NODE, "Model"),
        "sub-nodes are not reachability targets"
    );
    let good = wf(
        vec![trigger(), agent("Agent", json!({})), model("Model")],
        json!({"Start": main_to("Agent"), "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}}),
    );
    assert_eq!(count(&all(&good), codes::SUB_NODE_NOT_CONNECTED), 0);
}

#[test]
fn unreachable_nodes() {
    let sticky = node(
        "Note",
        "n8n-nodes-base.stickyNote",
        1.0,
        json!({"content": "hi"}),
    );
    let bad = wf(
        vec![
            trigger(),
            set("A"),
            set("Island"),
            set("Tail"),
            sticky.clone(),
        ],
        json!({"Start": main_to("A"), "Island": main_to("Tail")}),
    );
    let r = all(&bad);
    assert!(on(&r, codes::UNREACHABLE_NODE, "Island"));
    assert!(on(&r, codes::UNREACHABLE_NODE, "Tail"));
    assert!(!on(&r, codes::UNREACHABLE_NODE, "A"));
    assert!(
        !on(&r, codes::UNREACHABLE_NODE, "Note"),
        "sticky notes are never findings"
    );
    let good = wf(
        vec![trigger(), set("A"), set("Island"), sticky],
        json!({"Start": main_to("A"), "A": main_to("Island")}),
    );
    assert_eq!(count(&all(&good), codes::UNREACHABLE_NODE), 0);
}

#[test]
fn trigger_not_connected() {
    let hook = node("Hook", "n8n-nodes-base.webhook", 2.0, json!({"path": "p"}));
    let bad = wf(
        vec![trigger(), hook.clone(), set("A")],
        json!({"Start": main_to("A")}),
    );
    let r = all(&bad);
    assert!(
        on(&r, codes::TRIGGER_NOT_CONNECTED, "Hook"),
        "{}",
        r.render_text("")
    );
    assert!(!on(&r, codes::TRIGGER_NOT_CONNECTED, "Start"));
    let good = wf(
        vec![trigger(), hook, set("A")],
        json!({"Start": main_to("A"), "Hook": main_to("A")}),
    );
    assert_eq!(count(&all(&good), codes::TRIGGER_NOT_CONNECTED), 0);
    // a lone trigger is a workflow being started, not a dangling node
    assert_eq!(
        count(
            &all(&wf(vec![trigger()], json!({}))),
            codes::TRIGGER_NOT_CONNECTED
        ),
        0
    );
}

#[test]
fn expressions_referencing_missing_nodes() {
    let with = |expr: &str| {
        wf(
            vec![
                trigger(),
                node(
                    "A",
                    "n8n-nodes-base.set",
                    3.4,
                    json!({"assignments": {"assignments": [{"name": "x", "value": expr, "type": "string"}]}}),
                ),
            ],
            json!({"Start": main_to("A")}),
        )
    };
    for expr in [
        "={{ $('Ghost').item.json.x }}",
        "={{ $node[\"Ghost\"].json.x }}",
        "={{ $node.Ghost.json.x }}",
    ] {
        let r = all(&with(expr));
        let f = r.with_code(codes::EXPRESSION_MISSING_NODE).next();
        assert!(f.is_some(), "{expr}");
        assert_eq!(
            f.and_then(|f| f.path.clone()).as_deref(),
            Some("assignments.assignments[0].value")
        );
    }
    let r = all(&with(
        "={{ $('Start').item.json.x }} {{ $node[\"A\"].json }}",
    ));
    assert_eq!(count(&r, codes::EXPRESSION_MISSING_NODE), 0);
    // plain text is not evaluated
    assert_eq!(
        count(&all(&with("$('Ghost')")), codes::EXPRESSION_MISSING_NODE),
        0
    );
}

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

#[test]
fn groups_split_the_rules() {
    let w = wf(
        vec![
            set("A"),
            node("H", "n8n-nodes-base.httpRequest", 4.2, json!({})),
        ],
        json!({"A": main_to("H")}),
    );
    let s = validate_structure(&w, builtin());
    let c = validate_configuration(&w, builtin());
    assert!(s
        .findings
        .iter()
        .all(|f| f.rule_group == RuleGroup::Structure));
    assert!(c
        .findings
        .iter()
        .all(|f| f.rule_group == RuleGroup::Configuration));
    assert!(on(&s, codes::NO_TRIGGER, "") || count(&s, codes::NO_TRIGGER) == 1);
    assert_eq!(count(&c, codes::MISSING_REQUIRED_PARAMETER), 1);
    assert_eq!(all(&w).findings.len(), s.findings.len() + c.findings.len());
}

#[test]
fn report_renderings() {
    let w = wf(vec![model("Model <1>")], json!({}));
    let r = all(&w);
    assert!(r.has_errors());
    assert_eq!(r.counts().get(codes::NO_TRIGGER), Some(&1));
    let text = r.render_text("wf.json: ");
    assert!(text.contains("wf.json: [NO_TRIGGER] error: "), "{text}");
    assert!(
        text.contains("wf.json: node \"Model <1>\" [SUB_NODE_NOT_CONNECTED] error: "),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with("2 errors, 0 warnings, 0 infos"),
        "{text}"
    );
    let block = r.render_block("structure");
    assert!(
        block.starts_with("<validation_result scope=\"structure\" status=\"invalid\" errors=\"2\"")
    );
    assert!(block.contains("node=\"Model &lt;1&gt;\""), "{block}");
    assert!(block.ends_with("</validation_result>"));
    let j = r.to_json();
    assert_eq!(j["valid"], json!(false));
    assert_eq!(j["findings"][0]["code"], json!("NO_TRIGGER"));
    assert_eq!(j["findings"][0]["severity"], json!("error"));
    assert_eq!(j["findings"][0]["rule_group"], json!("structure"));
    let ok = Report::default();
    assert!(ok
        .render_block("configuration")
        .contains("status=\"valid\""));
    assert_eq!(ok.summary(), "no problems found");
    assert_eq!(Severity::Warning.as_str(), "warning");
}

#[tokio::test]
async fn tools_read_the_workflow_channel() {
    let cat = Arc::new(builtin().clone());
    let structure = ValidateStructure::new(cat.clone());
    let config = ValidateConfiguration::new(cat);
    assert_eq!(structure.name(), "validate_structure");
    assert_eq!(config.name(), "validate_configuration");
    assert_eq!(structure.input_schema()["type"], json!("object"));

    let ctx = |v: Value| ToolContext::detached(StateView::from_object(json!({"workflow": v})));
    // null: an empty workflow, valid
    let out = structure
        .call(json!({}), &ctx(Value::Null))
        .await
        .expect("runs");
    let text = out.content.as_str().unwrap_or_default().to_string();
    assert!(text.contains("status=\"valid\""), "{text}");
    assert!(out.writes.is_empty());

    let w = wf(
        vec![
            model("Model"),
            node("H", "n8n-nodes-base.httpRequest", 4.2, json!({})),
        ],
        json!({}),
    );
    let out = structure
        .call(json!({}), &ctx(w.to_value()))
        .await
        .expect("runs");
    let text = out.content.as_str().unwrap_or_default().to_string();
    assert!(text.contains("code=\"NO_TRIGGER\""), "{text}");
    assert!(text.contains("code=\"SUB_NODE_NOT_CONNECTED\""));
    assert!(!text.contains("MISSING_REQUIRED_PARAMETER"));
    let out = config
        .call(json!({}), &ctx(w.to_value()))
        .await
        .expect("runs");
    let text = out.content.as_str().unwrap_or_default().to_string();
    assert!(
        text.contains(
            "code=\"MISSING_REQUIRED_PARAMETER\" severity=\"error\" node=\"H\" path=\"url\""
        ),
        "{text}"
    );
    assert!(!text.contains("NO_TRIGGER"));

    let err = structure
        .call(json!({}), &ctx(json!({"nodes": 3})))
        .await
        .expect_err("not a workflow");
    assert_eq!(err.code, "INVALID_WORKFLOW");

    // another channel, from the tool settings
    let other = ToolContext::detached(StateView::from_object(json!({"wf": w.to_value()})))
        .with_settings(Arc::new(json!({"workflow_channel": "wf"})));
    let out = structure.call(json!({}), &other).await.expect("runs");
    assert!(out
        .content
        .as_str()
        .unwrap_or_default()
        .contains("NO_TRIGGER"));
}

#[test]
fn malformed_workflows_never_panic() {
    let w = Workflow::from_value(json!({
        "nodes": [
            {"name": "T", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0],
             "parameters": {"responseMode": 7, "options": "nope", "path": null}},
            {"name": "A", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 99, "position": [0, 0],
             "parameters": {"promptType": ["define"], "text": {"x": 1}, "options": [1, 2]}},
            {"name": "M", "type": "n8n-nodes-base.merge", "typeVersion": 3, "position": [0, 0],
             "parameters": {"numberInputs": "many"}},
            {"name": "H", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0],
             "parameters": {"headerParameters": {"parameters": [null, 3, {"name": 5, "value": {}}]},
                            "jsonHeaders": "={ not json", "method": {"a": 1}}},
            {"name": "S", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [0, 0],
             "parameters": {"assignments": "x", "fields": {"values": 3}, "values": {"string": [1]}}},
            {"name": "U", "type": "", "typeVersion": -1, "position": [0, 0], "parameters": {"x": "$('"}},
            {"name": "é", "type": "custom.thing", "typeVersion": 1.5, "position": [0, 0],
             "parameters": {"a": "={{ $fromaé $from $('é') $node[ $node. $(`x${y}`) }}"}}
        ],
        "connections": {
            "T": {"main": [null, [], [{"node": "A", "type": "main", "index": 4000000000u64}]]},
            "Nope": {"weird": [[{"node": "Nowhere", "type": "main", "index": 0}]]},
            "M": {"main": [[{"node": "M", "type": "main", "index": 0}]]}
        }
    }))
    .expect("loads");
    let r = all(&w);
    assert!(!r.is_empty());
    if let Some(cat) = real() {
        let _ = validate(&w, cat);
    }
}

#[test]
fn two_hundred_nodes_validate_quickly() {
    let mut nodes = vec![trigger()];
    let mut conns = serde_json::Map::new();
    let mut prev = "Start".to_string();
    for i in 0..199 {
        let name = format!("N{i}");
        let n = match i % 4 {
            0 => node(
                &name,
                "n8n-nodes-base.httpRequest",
                4.2,
                json!({"url": format!("={{{{ $('{prev}').item.json.u }}}}")}),
            ),
            1 => node(
                &name,
                "n8n-nodes-base.set",
                3.4,
                json!({"assignments": {"assignments": [{"name": "a", "value": "={{ $json.a }}", "type": "string"}]}}),
            ),
            2 => node(&name, "n8n-nodes-base.if", 2.2, json!({})),
            _ => node(
                &name,
                "n8n-nodes-base.code",
                2.0,
                json!({"jsCode": "return $input.all();"}),
            ),
        };
        nodes.push(n);
        conns.insert(prev.clone(), main_to(&name));
        prev = name;
    }
    let w = wf(nodes, Value::Object(conns));
    let _ = all(&w); // warm the port cache and JS engine
    let t = Instant::now();
    let runs = 10;
    for _ in 0..runs {
        let r = all(&w);
        assert!(!r.has_errors(), "{}", r.render_text(""));
    }
    let per = t.elapsed().as_secs_f64() * 1000.0 / runs as f64;
    println!("200-node workflow: {per:.2} ms per validation");
    assert!(per < 200.0, "{per} ms");
}
