//! The built-in catalogue, node-type export, the npm layout, and the built-in catalogue
//! checked against the real one.

use super::*;

#[test]
fn node_types_export_and_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("nodes.json");
    std::fs::write(
        &p,
        r#"[{"name":"n8n-nodes-base.fooTool","displayName":"Foo Tool","version":1,"inputs":[],"outputs":["ai_tool"],"properties":[],"custom":1}]"#,
    )
    .expect("write");
    let c = Catalogue::load_node_types_export(&p).expect("loads");
    assert_eq!(c.len(), 1);
    assert_eq!(c.generated_tool_count(), 0);
    let d = c.get("n8n-nodes-base.fooTool", Some(1.0)).expect("foo");
    assert_eq!(d.extra.get("custom"), Some(&json!(1)));

    std::fs::write(&p, r#"[{"name":"x","version":"one"}]"#).expect("write");
    let err = Catalogue::load_nodes_json(&p, "pkg")
        .expect_err("bad version")
        .to_string();
    assert!(
        err.contains("nodes.json") && err.contains("entry 0") && err.contains("(x)"),
        "{err}"
    );
    std::fs::write(&p, "{}").expect("write");
    let err = Catalogue::load_nodes_json(&p, "pkg")
        .expect_err("not an array")
        .to_string();
    assert!(err.contains("not a JSON array"), "{err}");
    let err = Catalogue::load_n8n_dir(dir.path().join("none"))
        .expect_err("empty")
        .to_string();
    assert!(err.contains("neither"), "{err}");
}

#[test]
fn builtin_catalogue() {
    let t = Instant::now();
    let c = Catalogue::builtin().expect("builtin loads");
    eprintln!("builtin: {} types in {:?}", c.len(), t.elapsed());
    for ty in [
        "n8n-nodes-base.manualTrigger",
        "n8n-nodes-base.scheduleTrigger",
        "n8n-nodes-base.webhook",
        "n8n-nodes-base.formTrigger",
        "@n8n/n8n-nodes-langchain.chatTrigger",
        "n8n-nodes-base.emailReadImap",
        "n8n-nodes-base.httpRequest",
        "n8n-nodes-base.set",
        "n8n-nodes-base.if",
        "n8n-nodes-base.switch",
        "n8n-nodes-base.merge",
        "n8n-nodes-base.code",
        "n8n-nodes-base.respondToWebhook",
        "n8n-nodes-base.gmail",
        "n8n-nodes-base.slack",
        "n8n-nodes-base.googleSheets",
        "@n8n/n8n-nodes-langchain.agent",
        "@n8n/n8n-nodes-langchain.chainLlm",
        "@n8n/n8n-nodes-langchain.lmChatOpenAi",
        "@n8n/n8n-nodes-langchain.lmChatAnthropic",
        "@n8n/n8n-nodes-langchain.memoryBufferWindow",
        "@n8n/n8n-nodes-langchain.toolCode",
        "@n8n/n8n-nodes-langchain.toolHttpRequest",
        "@n8n/n8n-nodes-langchain.toolCalculator",
        "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
        "@n8n/n8n-nodes-langchain.embeddingsOpenAi",
        "@n8n/n8n-nodes-langchain.documentDefaultDataLoader",
        "@n8n/n8n-nodes-langchain.textSplitterRecursiveCharacterTextSplitter",
        "@n8n/n8n-nodes-langchain.outputParserStructured",
        "n8n-nodes-base.slackTool",
        "n8n-nodes-base.httpRequestTool",
    ] {
        assert!(c.contains(ty), "builtin lacks {ty}");
    }
    for ty in c.types() {
        for d in c.descriptions(ty) {
            assert!(!d.description.is_empty(), "{ty} has no description");
            for v in d.version.versions() {
                resolve_ports(d, &json!({}), v).unwrap_or_else(|e| panic!("{ty} v{v}: {e}"));
            }
        }
    }
    let vs = "@n8n/n8n-nodes-langchain.vectorStoreInMemory";
    let p = c
        .ports(vs, None, &json!({"mode": "insert"}))
        .expect("exists")
        .expect("resolves");
    assert!(
        p.has_input("main")
            && p.has_input("ai_document")
            && p.has_input("ai_embedding")
            && p.has_output("main")
    );
    let p = c
        .ports(vs, None, &json!({"mode": "retrieve-as-tool"}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(p.output_kinds(), vec!["ai_tool"]);
    let agent = "@n8n/n8n-nodes-langchain.agent";
    let p = c
        .ports(agent, None, &json!({"hasOutputParser": true}))
        .expect("exists")
        .expect("resolves");
    assert!(p.has_input("ai_outputParser"));
    let p = c
        .ports(agent, None, &json!({}))
        .expect("exists")
        .expect("resolves");
    assert!(!p.has_input("ai_outputParser") && p.has_input("ai_languageModel"));
    let p = c
        .ports("n8n-nodes-base.merge", None, &json!({"numberInputs": 3}))
        .expect("exists")
        .expect("resolves");
    assert_eq!(p.inputs.len(), 3);
    let p = c
        .ports(
            "@n8n/n8n-nodes-langchain.documentDefaultDataLoader",
            None,
            &json!({"textSplittingMode": "custom"}),
        )
        .expect("exists")
        .expect("resolves");
    assert!(p.has_input("ai_textSplitter"));
    assert_eq!(
        c.search("http", 5)[0].node_type,
        "n8n-nodes-base.httpRequest"
    );
    assert!(c
        .search_sub_nodes("ai_languageModel", "openai", 5)
        .iter()
        .any(|h| h.node_type.ends_with("lmChatOpenAi")));
    // required properties and options with displayOptions exist for validators
    let http = c.get("n8n-nodes-base.httpRequest", None).expect("http");
    assert!(http
        .properties
        .iter()
        .any(|p| p.name == "url" && p.is_required()));
    let gmail = c.get("n8n-nodes-base.gmail", None).expect("gmail");
    assert!(gmail
        .properties
        .iter()
        .any(|p| p.name == "operation" && p.display_options.is_some() && p.options.is_some()));
}

#[test]
fn catalogue_is_send_sync_and_merges() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Catalogue>();
    let mut c = Catalogue::builtin().expect("builtin");
    let before = c.len();
    let mut other = Catalogue::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("nodes.json");
    std::fs::write(
        &p,
        r#"[{"name":"myNode","displayName":"My Node","description":"Does things","version":[1,2],"defaultVersion":2,"inputs":["main"],"outputs":["main"],"properties":[],"usableAsTool":true},
            {"name":"httpRequest","displayName":"Replaced","description":"x","version":1,"inputs":["main"],"outputs":["main"],"properties":[]}]"#,
    )
    .expect("write");
    other.merge(Catalogue::load_nodes_json(&p, "n8n-nodes-base").expect("loads"));
    assert!(other.contains("n8n-nodes-base.myNodeTool"));
    let tool = other.get("n8n-nodes-base.myNodeTool", None).expect("tool");
    assert_eq!(tool.properties[0].name, "toolDescription");
    assert_eq!(tool.properties[0].default, Some(json!("Does things")));
    assert!(tool.properties.iter().all(|p| p.name != "descriptionType"));
    c.merge(other);
    assert_eq!(c.len(), before + 2);
    assert_eq!(
        c.get("n8n-nodes-base.httpRequest", None)
            .expect("http")
            .display_name,
        "Replaced"
    );
    assert_eq!(c.versions("n8n-nodes-base.myNode"), vec![1.0, 2.0]);
    assert_eq!(c.default_version("n8n-nodes-base.myNode"), Some(2.0));
    assert_eq!(c.search("my node", 5)[0].node_type, "n8n-nodes-base.myNode");
}

#[test]
fn npm_layout_dir_loads() {
    let Some(data) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("@n8n/n8n-nodes-langchain/dist/types");
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::copy(
        data.join("n8n-nodes-langchain/nodes.json"),
        target.join("nodes.json"),
    )
    .expect("copy");
    let c = Catalogue::load_n8n_dir(dir.path()).expect("loads");
    assert_eq!(c.len() - c.generated_tool_count(), 124);
    assert!(c.contains("@n8n/n8n-nodes-langchain.agent"));
}

/// The hand-written built-in descriptions give the same port kinds as the real ones.
#[test]
fn builtin_ports_match_real() {
    let Some(real) = real() else { return };
    let builtin = Catalogue::builtin().expect("builtin");
    let samples = [
        json!({}),
        json!({"mode": "insert"}),
        json!({"mode": "load"}),
        json!({"mode": "retrieve-as-tool"}),
        json!({"hasOutputParser": true}),
        json!({"hasOutputParser": true, "needsFallback": true}),
        json!({"numberInputs": 3}),
        json!({"textSplittingMode": "custom"}),
        json!({"httpMethod": "POST"}),
        json!({"enableResponseOutput": true}),
        json!({"mode": "expression", "numberOutputs": 3}),
    ];
    let mut compared = 0;
    for ty in builtin.types().filter(|t| !builtin.is_generated_tool(t)) {
        let Some(version) = builtin.default_version(ty) else {
            continue;
        };
        if real.get_exact(ty, version).is_none() {
            eprintln!("{ty} v{version} not in the real catalogue");
            continue;
        }
        for params in &samples {
            let b = builtin
                .ports(ty, Some(version), params)
                .expect("exists")
                .expect("builtin resolves");
            let r = real
                .ports(ty, Some(version), params)
                .expect("exists")
                .expect("real resolves");
            let kinds = |p: &[agentgraph_std_tools::catalogue::Port]| {
                p.iter().map(|p| p.kind.clone()).collect::<Vec<_>>()
            };
            let mut bi = kinds(&b.inputs);
            let mut ri = kinds(&r.inputs);
            bi.sort();
            ri.sort();
            assert_eq!(bi, ri, "{ty} v{version} inputs for {params}");
            assert_eq!(
                kinds(&b.outputs),
                kinds(&r.outputs),
                "{ty} v{version} outputs for {params}"
            );
            compared += 1;
        }
    }
    assert!(compared > 250, "{compared}");
}

/// Every built-in parameter name, type and static option value exists in the real
/// description of the same version, so workflows built on the built-in catalogue run in n8n.
#[test]
fn builtin_properties_exist_in_real() {
    let Some(real) = real() else { return };
    let builtin = Catalogue::builtin().expect("builtin");
    let mut problems = Vec::new();
    for ty in builtin.types().filter(|t| !builtin.is_generated_tool(t)) {
        for d in builtin.descriptions(ty) {
            for v in d.version.versions() {
                let Some(r) = real.get_exact(ty, v) else {
                    problems.push(format!("{ty} v{v}: not in the real catalogue"));
                    continue;
                };
                for p in &d.properties {
                    let same: Vec<_> = r.properties_named(&p.name).collect();
                    if same.is_empty() {
                        problems.push(format!("{ty} v{v}: unknown parameter {}", p.name));
                        continue;
                    }
                    if !same.iter().any(|q| q.kind == p.kind) {
                        problems.push(format!(
                            "{ty} v{v}: {} is {} in the real catalogue",
                            p.name, same[0].kind
                        ));
                    }
                    let dynamic = p
                        .type_options
                        .as_ref()
                        .is_some_and(|t| t.get("loadOptionsMethod").is_some());
                    if matches!(p.kind.as_str(), "options" | "multiOptions") && !dynamic {
                        for o in p.options.iter().flatten() {
                            let value = o.get("value");
                            let known = same
                                .iter()
                                .flat_map(|q| q.options.iter().flatten())
                                .any(|q| q.get("value") == value);
                            if !known {
                                problems
                                    .push(format!("{ty} v{v}: {} has no option {value:?}", p.name));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn explicit_null_default_round_trips() {
    let p: agentgraph_std_tools::catalogue::NodeProperty = serde_json::from_value(
        json!({"name": "ts", "displayName": "TS", "type": "number", "default": null, "hint": "x"}),
    )
    .expect("parses");
    assert_eq!(p.default, Some(serde_json::Value::Null));
    let back = serde_json::to_value(&p).expect("serialises");
    assert_eq!(
        back,
        json!({"name": "ts", "displayName": "TS", "type": "number", "default": null, "hint": "x"})
    );
}
