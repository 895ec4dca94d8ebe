//! The real n8n catalogue: counts, port resolution for every type and version, tool
//! variants, search.

use super::*;

#[test]
fn real_catalogue_counts() {
    let Some(c) = real() else { return };
    assert_eq!(c.len() - c.generated_tool_count(), 568);
    assert_eq!(c.generated_tool_count(), 270);
    assert_eq!(c.len(), 568 + 270);
    assert!(c.contains("n8n-nodes-base.httpRequest"));
    assert!(c.contains(&format!("{LC}.agent")));
    // versioned lookup
    let agent = c.get(&format!("{LC}.agent"), Some(2.1)).expect("agent 2.1");
    assert!(agent.version.contains(2.1));
    let newest = c.get(&format!("{LC}.agent"), None).expect("agent");
    assert!(newest.version.contains(3.1));
    assert_eq!(c.get(&format!("{LC}.agent"), Some(99.0)), Some(newest));
    assert!(c.get("n8n-nodes-base.nope", None).is_none());
}

#[test]
fn real_expression_types_resolve_for_every_version() {
    let Some(c) = real() else { return };
    let expression_types: Vec<&str> = c
        .types()
        .filter(|t| {
            c.descriptions(t)
                .iter()
                .any(|d| d.inputs.is_expression() || d.outputs.is_expression())
        })
        .collect();
    assert_eq!(expression_types.len(), 43, "{expression_types:?}");
    let t = Instant::now();
    let mut n = 0;
    let mut strict_failures = Vec::new();
    for ty in &expression_types {
        for d in c.descriptions(ty) {
            for v in d.version.versions() {
                let ports =
                    resolve_ports(d, &json!({}), v).unwrap_or_else(|e| panic!("{ty} v{v}: {e}"));
                if resolve_ports_strict(d, &json!({}), v).is_err() {
                    strict_failures.push(format!("{ty} v{v}"));
                }
                assert!(
                    !ports.inputs.is_empty()
                        || !ports.outputs.is_empty()
                        || ty.contains("Trigger")
                        || ty.ends_with(".code"),
                    "{ty} v{v}: {ports:?}"
                );
                n += 1;
            }
        }
    }
    eprintln!(
        "resolved {n} (type, version) pairs of expression types in {:?}",
        t.elapsed()
    );
    // Only the LangChain Code node throws on defaults (no inputs configured yet); n8n, like
    // resolve_ports, then shows no ports.
    assert!(
        strict_failures
            .iter()
            .all(|f| f.starts_with("@n8n/n8n-nodes-langchain.code ")),
        "{strict_failures:?}"
    );
    let code = c.get(&format!("{LC}.code"), None).expect("code");
    let p = resolve_ports(code, &json!({"inputs": {"input": [{"type": "main"}, {"type": "ai_languageModel", "required": true, "maxConnections": 1}]}}), 1.0)
        .expect("resolves");
    assert_eq!(p.input_kinds(), vec!["main", "ai_languageModel"]);
    let t = Instant::now();
    for _ in 0..100 {
        let _ = c.ports(
            &format!("{LC}.agent"),
            None,
            &json!({"hasOutputParser": true}),
        );
    }
    eprintln!("cached resolve: {:?} per call", t.elapsed() / 100);
}

#[test]
fn real_all_types_resolve_default_ports() {
    let Some(c) = real() else { return };
    for ty in c.types() {
        let res = c.ports(ty, None, &json!({})).expect("type exists");
        res.unwrap_or_else(|e| panic!("{ty}: {e}"));
    }
}

#[test]
fn real_specific_ports() {
    let Some(c) = real() else { return };
    let vs = format!("{LC}.vectorStoreInMemory");
    let p = c
        .ports(&vs, None, &json!({"mode": "insert"}))
        .expect("exists")
        .expect("resolves");
    assert!(p.has_input("main") && p.has_output("main"), "{p:?}");
    assert!(
        p.has_input("ai_document") && p.has_input("ai_embedding"),
        "{p:?}"
    );
    let p = c
        .ports(&vs, None, &json!({"mode": "retrieve-as-tool"}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(p.output_kinds(), vec!["ai_tool"]);
    assert!(!p.has_input("main"));
    let p = c
        .ports(&vs, None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(
        p.output_kinds(),
        vec!["ai_vectorStore"],
        "default mode is retrieve"
    );

    let agent = format!("{LC}.agent");
    for v in [2.2, 3.1] {
        let with = c
            .ports(&agent, Some(v), &json!({"hasOutputParser": true}))
            .expect("exists")
            .expect("resolves");
        assert!(with.has_input("ai_outputParser"), "{with:?}");
        let without = c
            .ports(&agent, Some(v), &json!({"hasOutputParser": false}))
            .expect("exists")
            .expect("resolves");
        assert!(!without.has_input("ai_outputParser"));
        assert!(without.has_input("ai_languageModel") && without.has_input("main"));
        let lm = without
            .inputs
            .iter()
            .find(|p| p.kind == "ai_languageModel")
            .expect("model input");
        assert!(lm.required);
        assert_eq!(lm.max_connections, Some(1));
    }
    // agent default (v3.1): hasOutputParser defaults to false in the description
    let d = c
        .ports(&agent, None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert!(!d.has_input("ai_outputParser"), "{d:?}");

    let merge = c
        .ports(
            "n8n-nodes-base.merge",
            Some(3.0),
            &json!({"numberInputs": 4}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(merge.inputs.len(), 4);
    assert!(merge.inputs.iter().all(|p| p.kind == "main"));
    assert_eq!(merge.inputs[3].display_name.as_deref(), Some("Input 4"));
    let merge = c
        .ports("n8n-nodes-base.merge", None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(merge.inputs.len(), 2);

    let loader = format!("{LC}.documentDefaultDataLoader");
    let p = c
        .ports(&loader, Some(1.1), &json!({"textSplittingMode": "custom"}))
        .expect("exists")
        .expect("resolves");
    assert!(p.has_input("ai_textSplitter"), "{p:?}");
    let p = c
        .ports(&loader, Some(1.1), &json!({}))
        .expect("exists")
        .expect("resolves");
    assert!(!p.has_input("ai_textSplitter"), "{p:?}");
    assert_eq!(p.output_kinds(), vec!["ai_document"]);

    let p = c
        .ports(&format!("{LC}.lmChatOpenAi"), None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(p.output_kinds(), vec!["ai_languageModel"]);

    let sw = c
        .ports(
            "n8n-nodes-base.switch",
            Some(3.2),
            &json!({"rules": {"values": [{"outputKey": "a"}, {}]}}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(sw.outputs.len(), 2);
    assert_eq!(sw.outputs[0].display_name.as_deref(), Some("a"));
}

#[test]
fn real_more_expression_ports() {
    let Some(c) = real() else { return };
    let wh = c
        .ports(
            "n8n-nodes-base.webhook",
            Some(2.1),
            &json!({"httpMethod": ["GET", "POST"], "multipleMethods": true}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(wh.outputs.len(), 2, "{wh:?}");
    assert_eq!(wh.outputs[1].display_name.as_deref(), Some("POST"));
    let wh = c
        .ports("n8n-nodes-base.webhook", None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(wh.outputs.len(), 1);
    let r = c
        .ports("n8n-nodes-base.respondToWebhook", Some(1.3), &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(r.outputs.len(), 2, "1.3 always has the response branch");
    let r = c
        .ports("n8n-nodes-base.respondToWebhook", Some(1.5), &json!({}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(r.outputs.len(), 1);
    let r = c
        .ports(
            "n8n-nodes-base.respondToWebhook",
            Some(1.5),
            &json!({"enableResponseOutput": true}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(r.outputs.len(), 2);
    let e = c
        .ports(
            "n8n-nodes-base.evaluation",
            Some(4.8),
            &json!({"operation": "checkIfEvaluating"}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(e.outputs.len(), 2);
    let e = c
        .ports(
            "n8n-nodes-base.evaluation",
            Some(4.8),
            &json!({"operation": "setMetrics", "metric": "correctness"}),
        )
        .expect("exists")
        .expect("resolves");
    assert!(e.has_input("ai_languageModel"), "{e:?}");
    let ms = c
        .ports(
            "@n8n/n8n-nodes-langchain.modelSelector",
            None,
            &json!({"numberInputs": 3}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(ms.inputs.len(), 3);
    assert!(ms
        .inputs
        .iter()
        .all(|p| p.kind == "ai_languageModel" && p.required));
    let oa = c
        .ports(
            "@n8n/n8n-nodes-langchain.openAi",
            None,
            &json!({"resource": "text", "operation": "response"}),
        )
        .expect("exists")
        .expect("resolves");
    assert!(oa.has_input("ai_tool"), "{oa:?}");
    let ps = c
        .ports(
            "@n8n/n8n-nodes-langchain.outputParserStructured",
            None,
            &json!({"autoFix": true}),
        )
        .expect("exists")
        .expect("resolves");
    assert_eq!(ps.output_kinds(), vec!["ai_outputParser"]);
}

#[test]
fn real_tool_variants() {
    let Some(c) = real() else { return };
    let slack = c.get("n8n-nodes-base.slackTool", None).expect("slackTool");
    assert!(c.is_generated_tool("n8n-nodes-base.slackTool"));
    assert_eq!(slack.display_name, "Slack Tool");
    assert_eq!(slack.outputs, PortsSpec::List(vec![json!("ai_tool")]));
    assert_eq!(slack.inputs, PortsSpec::List(vec![]));
    assert!(slack.usable_as_tool.is_none());
    let td = slack
        .properties
        .iter()
        .find(|p| p.name == "toolDescription")
        .expect("toolDescription");
    assert!(td.is_required());
    assert!(
        slack.properties.iter().any(|p| p.name == "descriptionType"),
        "slack has resource/operation"
    );
    let codex = slack.codex.as_ref().expect("codex");
    assert_eq!(codex.categories.as_deref(), Some(&["AI".to_string()][..]));
    // versioned: every description class converted
    let usable = c
        .descriptions("n8n-nodes-base.slack")
        .iter()
        .filter(|d| d.is_usable_as_tool())
        .count();
    assert_eq!(c.descriptions("n8n-nodes-base.slackTool").len(), usable);
    // httpRequest replacements merged
    let http = c
        .get("n8n-nodes-base.httpRequestTool", None)
        .expect("httpRequestTool");
    let sub = http
        .codex
        .as_ref()
        .and_then(|c| c.subcategories.as_ref())
        .and_then(|s| s.get("Tools"))
        .cloned();
    assert_eq!(sub, Some(json!(["Recommended Tools"])));
}

#[test]
fn real_search() {
    let Some(c) = real() else { return };
    let t = Instant::now();
    let _ = c.search("warm", 5);
    eprintln!("search index built in {:?}", t.elapsed());
    let t = Instant::now();
    let hits = c.search("http", 5);
    eprintln!("search 'http': {:?}", t.elapsed());
    assert_eq!(hits[0].node_type, "n8n-nodes-base.httpRequest", "{hits:?}");
    let hits = c.search("gmail", 5);
    assert!(
        hits.iter().any(|h| h.node_type == "n8n-nodes-base.gmail"),
        "{hits:?}"
    );
    assert_eq!(hits[0].node_type, "n8n-nodes-base.gmail");
    let t = Instant::now();
    let hits = c.search_sub_nodes("ai_languageModel", "openai", 5);
    eprintln!("sub-node search: {:?}", t.elapsed());
    assert!(
        hits.iter()
            .any(|h| h.node_type == format!("{LC}.lmChatOpenAi")),
        "{hits:?}"
    );
    let all = c.search_sub_nodes("ai_vectorStore", "", 100);
    assert!(
        all.iter()
            .any(|h| h.node_type == format!("{LC}.vectorStoreInMemory")),
        "{all:?}"
    );
    // hidden nodes never show up
    for h in c.search("a", 1000) {
        assert!(!c.get(&h.node_type, None).expect("exists").is_hidden());
    }
    let t = Instant::now();
    for _ in 0..100 {
        let _ = c.search("slack", 5);
    }
    eprintln!("search 'slack': {:?} per call", t.elapsed() / 100);
}
