//! The rule table and groups, the report renderings, the two tools, robustness and speed.

use super::*;

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
    // null: an empty workflow, which has nothing to run
    let out = structure
        .call(json!({}), &ctx(Value::Null))
        .await
        .expect("runs");
    let text = out.content.as_str().unwrap_or_default().to_string();
    assert!(text.contains("status=\"invalid\""), "{text}");
    assert!(text.contains("code=\"EMPTY_WORKFLOW\""), "{text}");
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
fn two_hundred_nodes_validate_the_same_twice_without_errors() {
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
    // Twice: the second run answers from the port cache and the warm JS engine, and must
    // agree with the first. (How fast is a benchmark's question, not a test's: a timed
    // assertion here failed on a loaded machine.)
    let first = all(&w);
    assert!(!first.has_errors(), "{}", first.render_text(""));
    let second = all(&w);
    assert_eq!(second.render_text(""), first.render_text(""));
}
