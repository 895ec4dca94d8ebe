//! `get_best_practices` (technique documents) and `submit_discovery_results`.

use agentgraph_agents::tools::{validate_args, Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::best_practices::{self, technique_ids};
use agentgraph_std_tools::builder::discovery::{looks_like_full_type, validate};
use agentgraph_std_tools::builder::{
    document, techniques, GetBestPractices, SubmitDiscoveryResults,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

fn ctx() -> ToolContext {
    ToolContext::detached(StateView::from_object(json!({})))
}

fn ctx_with(settings: Value) -> ToolContext {
    ctx().with_settings(Arc::new(settings))
}

async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    call_in(tool, args, &ctx()).await
}

async fn call_in(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    tool.call(args, ctx).await
}

fn text(out: &ToolOutput) -> &str {
    out.content.as_str().expect("text content")
}

/// Full node types mentioned in a document.
fn full_types(doc: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in ["@n8n/n8n-nodes-langchain.", "n8n-nodes-base."] {
        let mut rest = doc;
        while let Some(i) = rest.find(prefix) {
            let after = &rest[i + prefix.len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(format!("{prefix}{name}"));
            }
            rest = &after[name.len()..];
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// get_best_practices
// ---------------------------------------------------------------------------------------------

const REQUIRED: &[&str] = &[
    "chatbot",
    "scraping_and_research",
    "content_generation",
    "data_extraction",
    "document_processing",
    "form_input",
    "notification",
    "scheduling",
    "triage",
    "data_transformation",
    "knowledge_base",
];

#[test]
fn every_required_technique_has_a_useful_document() {
    let ids = technique_ids();
    for id in REQUIRED {
        assert!(ids.contains(id), "missing technique {id}");
    }
    for t in techniques() {
        let doc = document(t.id).expect("document");
        assert_eq!(doc, t.document);
        let lines = doc.lines().count();
        assert!(
            (30..=80).contains(&lines),
            "{}: {lines} lines, expected 30-80",
            t.id
        );
        let types = full_types(doc);
        assert!(types.len() >= 3, "{}: only {types:?}", t.id);
        assert!(!t.summary.is_empty());
    }
    assert_eq!(document("nope"), None);
}

#[tokio::test]
async fn every_technique_is_returned_in_its_block() {
    let tool = GetBestPractices::new();
    for id in technique_ids() {
        let args = json!({"techniques": [id]});
        validate_args(&tool.input_schema(), &args).expect("schema accepts");
        let out = call(&tool, args).await.expect("ok");
        let t = text(&out);
        assert!(
            t.starts_with(&format!("<best_practices technique=\"{id}\">\n")),
            "{t}"
        );
        assert!(t.ends_with("\n</best_practices>"));
        assert!(t.contains(document(id).unwrap().trim_end()));
        assert!(!full_types(t).is_empty(), "{id} names no full node type");
        assert!(out.writes.is_empty(), "no record channel by default");
    }
}

#[tokio::test]
async fn several_techniques_in_one_call_in_order_without_repeats() {
    let tool = GetBestPractices::new();
    let out = call(
        &tool,
        json!({"techniques": ["knowledge_base", "chatbot", "knowledge_base"]}),
    )
    .await
    .unwrap();
    let t = text(&out);
    assert_eq!(t.matches("<best_practices ").count(), 2);
    assert_eq!(t.matches("</best_practices>").count(), 2);
    let kb = t.find("technique=\"knowledge_base\"").unwrap();
    let chat = t.find("technique=\"chatbot\"").unwrap();
    assert!(kb < chat);
    assert_eq!(
        t,
        best_practices::render_all(&["knowledge_base", "chatbot"]).unwrap()
    );
}

#[tokio::test]
async fn unknown_technique_lists_the_valid_ones() {
    let tool = GetBestPractices::new();
    // The executor's schema check rejects it first…
    assert!(validate_args(&tool.input_schema(), &json!({"techniques": ["chatbots"]})).is_err());
    // …and a direct call gets a coded error.
    let e = call(&tool, json!({"techniques": ["chatbot", "chatbots", "rag"]}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "UNKNOWN_TECHNIQUE");
    assert!(e.message.contains("`chatbots`") && e.message.contains("`rag`"));
    for id in REQUIRED {
        assert!(e.message.contains(id), "{}", e.message);
    }
}

#[tokio::test]
async fn best_practices_input_errors() {
    let tool = GetBestPractices::new();
    let e = call(&tool, json!({"techniques": []})).await.unwrap_err();
    assert_eq!(e.code, "NO_TECHNIQUES");
    let e = call(&tool, json!({})).await.unwrap_err();
    assert_eq!(e.code, "INVALID_INPUT");
    let e = call(&tool, json!({"techniques": [1]})).await.unwrap_err();
    assert_eq!(e.code, "INVALID_INPUT");
    // A lone string is tolerated in direct calls.
    let out = call(&tool, json!({"techniques": "triage"})).await.unwrap();
    assert!(text(&out).contains("technique=\"triage\""));
}

/// Asking for every technique at once (a small model did, and 34 000 characters of documents
/// overflowed its context) is refused with the limit; the `max_techniques` setting moves it.
#[tokio::test]
async fn too_many_techniques_are_refused_with_the_limit() {
    let tool = GetBestPractices::new();
    let all: Vec<&str> = technique_ids();
    let e = call(&tool, json!({ "techniques": all })).await.unwrap_err();
    assert_eq!(e.code, "TOO_MANY_TECHNIQUES");
    assert!(e.message.contains("at most 3"), "{}", e.message);
    let four = json!({"techniques": ["triage", "notification", "scheduling", "chatbot"]});
    assert_eq!(
        call(&tool, four.clone()).await.unwrap_err().code,
        "TOO_MANY_TECHNIQUES"
    );
    let out = call_in(&tool, four, &ctx_with(json!({"max_techniques": 4})))
        .await
        .unwrap();
    assert_eq!(text(&out).matches("<best_practices ").count(), 4);
    // Repeats count once.
    let three = json!({"techniques": ["triage", "triage", "notification", "scheduling"]});
    assert!(call(&tool, three).await.is_ok());
}

#[tokio::test]
async fn fetched_techniques_can_be_recorded() {
    let tool = GetBestPractices::new().with_record_channel("best_practices_fetched");
    let out = call(&tool, json!({"techniques": ["triage", "notification"]}))
        .await
        .unwrap();
    assert_eq!(
        out.writes,
        vec![(
            "best_practices_fetched".to_string(),
            json!(["triage", "notification"])
        )]
    );
    // The `record_channel` setting wins.
    let plain = GetBestPractices::new();
    let out = call_in(
        &plain,
        json!({"techniques": ["scheduling"]}),
        &ctx_with(json!({"record_channel": "fetched"})),
    )
    .await
    .unwrap();
    assert_eq!(
        out.writes,
        vec![("fetched".to_string(), json!(["scheduling"]))]
    );
}

#[test]
fn tool_description_lists_the_techniques() {
    let tool = GetBestPractices::default();
    assert_eq!(tool.name(), "get_best_practices");
    for id in REQUIRED {
        assert!(tool.description().contains(id));
    }
}

/// Every full node type the documents name exists in the real n8n catalogue (generated
/// `…Tool` variants count when their base node exists).
#[test]
fn documents_name_real_node_types() {
    let Some(root) = agentgraph_test_support::n8n_catalogue() else {
        return;
    };
    let mut known = BTreeSet::new();
    for (dir, prefix) in [
        ("n8n-nodes-base", "n8n-nodes-base."),
        ("n8n-nodes-langchain", "@n8n/n8n-nodes-langchain."),
    ] {
        let path = root.join(dir).join("nodes.json");
        let raw =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let nodes: Vec<Value> = serde_json::from_str(&raw).expect("nodes.json parses");
        for n in nodes {
            if let Some(name) = n.get("name").and_then(Value::as_str) {
                known.insert(format!("{prefix}{name}"));
            }
        }
    }
    for t in techniques() {
        for ty in full_types(t.document) {
            let ok = known.contains(&ty)
                || ty
                    .strip_suffix("Tool")
                    .is_some_and(|base| known.contains(base));
            assert!(ok, "{}: unknown node type {ty}", t.id);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// submit_discovery_results
// ---------------------------------------------------------------------------------------------

fn rag_nodes() -> Value {
    json!([
        {"nodeName": "@n8n/n8n-nodes-langchain.chatTrigger", "version": 1.3,
         "reasoning": "Users ask questions in chat", "connectionChangingParameters": []},
        {"nodeName": "@n8n/n8n-nodes-langchain.agent", "version": 2,
         "reasoning": "Answers using the knowledge base tool",
         "connectionChangingParameters": [
             {"name": "hasOutputParser", "possibleValues": [true, false]}]},
        {"nodeName": "@n8n/n8n-nodes-langchain.vectorStorePinecone", "version": 1.3,
         "reasoning": "Searches the indexed documents",
         "connectionChangingParameters": [
             {"name": "mode", "possibleValues": ["insert", "retrieve", "retrieve-as-tool"]}]}
    ])
}

#[tokio::test]
async fn discovery_happy_path_writes_context_and_log() {
    let tool = SubmitDiscoveryResults::new();
    let args = json!({
        "nodes": rag_nodes(),
        "techniques": ["knowledge_base", "chatbot"],
        "summary": "RAG chatbot over Pinecone"
    });
    validate_args(&tool.input_schema(), &args).expect("schema accepts");
    let out = call(&tool, args).await.unwrap();

    let t = text(&out);
    assert!(
        t.starts_with("Discovery results submitted: 3 node types."),
        "{t}"
    );
    assert!(t.contains(
        "- @n8n/n8n-nodes-langchain.agent (v2) — connection-changing parameters: hasOutputParser"
    ));
    assert!(t.contains("Best practices attached: knowledge_base, chatbot."));

    assert_eq!(out.writes.len(), 2);
    let (ch, ctxv) = &out.writes[0];
    assert_eq!(ch, "discovery_context");
    assert_eq!(
        ctxv["nodesFound"],
        rag_nodes(),
        "nodes kept in the reference's shape"
    );
    assert_eq!(
        ctxv["nodesFound"][1]["version"],
        json!(2),
        "whole versions stay integers"
    );
    assert_eq!(ctxv["techniques"], json!(["knowledge_base", "chatbot"]));
    assert_eq!(ctxv["summary"], "RAG chatbot over Pinecone");
    let bp = ctxv["bestPractices"].as_str().unwrap();
    assert!(bp.contains("<best_practices technique=\"knowledge_base\">"));
    assert!(bp.contains("<best_practices technique=\"chatbot\">"));

    let (ch, entry) = &out.writes[1];
    assert_eq!(ch, "coordination_log");
    assert_eq!(entry["phase"], "discovery");
    assert_eq!(entry["status"], "completed");
    assert_eq!(entry["summary"], "RAG chatbot over Pinecone");
    assert!(entry["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(
        entry["output"]["nodeTypes"],
        json!([
            "@n8n/n8n-nodes-langchain.chatTrigger",
            "@n8n/n8n-nodes-langchain.agent",
            "@n8n/n8n-nodes-langchain.vectorStorePinecone"
        ])
    );
    assert_eq!(entry["metadata"]["nodesFound"], json!(3));
}

#[tokio::test]
async fn discovery_defaults_and_channels() {
    // Minimal node, no techniques, no summary; channels from the constructor.
    let tool = SubmitDiscoveryResults::new()
        .with_channel("discovery")
        .with_log_channel("log");
    let args = json!({"nodes": [{"nodeName": "n8n-nodes-base.scheduleTrigger", "version": 1.2,
        "reasoning": "Runs daily", "connectionChangingParameters": []}]});
    let out = call(&tool, args.clone()).await.unwrap();
    assert_eq!(out.writes[0].0, "discovery");
    assert_eq!(out.writes[1].0, "log");
    let ctxv = &out.writes[0].1;
    assert_eq!(ctxv["techniques"], json!([]));
    assert!(ctxv.get("bestPractices").is_none());
    assert_eq!(
        ctxv["summary"],
        "Discovered 1 node type: n8n-nodes-base.scheduleTrigger"
    );
    assert!(text(&out).starts_with("Discovery results submitted: 1 node type."));

    // Settings override the constructor.
    let out = call_in(
        &tool,
        args,
        &ctx_with(json!({"channel": "dc", "log_channel": "cl"})),
    )
    .await
    .unwrap();
    assert_eq!(out.writes[0].0, "dc");
    assert_eq!(out.writes[1].0, "cl");
}

/// A type listed again at the same version is kept once (a small model repeated its items
/// until the output limit cut the call); at another version it is refused (`DUPLICATE_NODE`,
/// in `discovery_error_codes`).
#[tokio::test]
async fn a_type_listed_again_at_the_same_version_is_kept_once() {
    let tool = SubmitDiscoveryResults::new();
    let args = json!({"nodes": [
        node("n8n-nodes-base.webhook", json!(2)),
        node("n8n-nodes-base.set", json!(3.4)),
        node("n8n-nodes-base.set", json!(3.4)),
        node("n8n-nodes-base.webhook", json!(2)),
        node("n8n-nodes-base.set", json!(3.4)),
    ]});
    let out = call(&tool, args).await.expect("accepted");
    let found: Vec<&str> = out.writes[0].1["nodesFound"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["nodeName"].as_str())
        .collect();
    assert_eq!(found, ["n8n-nodes-base.webhook", "n8n-nodes-base.set"]);
    let msg = text(&out);
    assert!(
        msg.starts_with("Discovery results submitted: 2 node types."),
        "{msg}"
    );
    assert!(
        msg.contains(
            "Listed more than once, kept once: n8n-nodes-base.set, n8n-nodes-base.webhook."
        ),
        "{msg}"
    );
}

async fn discovery_error(tool: &SubmitDiscoveryResults, args: Value) -> ToolError {
    let e = call(tool, args.clone()).await.unwrap_err();
    // The pure validator agrees with the tool.
    assert_eq!(validate(&args, None).map(|_| ()).err().map(|v| v.code), {
        // A type checker only exists on the tool.
        if e.code == "UNKNOWN_NODE_TYPE" {
            None
        } else {
            Some(e.code.clone())
        }
    });
    e
}

fn node(name: &str, version: Value) -> Value {
    json!({"nodeName": name, "version": version, "reasoning": "needed",
           "connectionChangingParameters": []})
}

#[tokio::test]
async fn discovery_error_codes() {
    let tool = SubmitDiscoveryResults::new();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"nodes": []}), "NO_NODES", "at least one"),
        (json!({}), "NO_NODES", "missing"),
        (json!({"nodes": "x"}), "INVALID_INPUT", "list"),
        (json!("nodes"), "INVALID_INPUT", "object"),
        (json!({"nodes": [1]}), "INVALID_INPUT", "nodes[0]"),
        (
            json!({"nodes": [node("httpRequest", json!(4))]}),
            "INVALID_NODE_TYPE",
            "n8n-nodes-base.httpRequest",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.", json!(1))]}),
            "INVALID_NODE_TYPE",
            "package.name",
        ),
        (
            json!({"nodes": [{"version": 1, "reasoning": "r"}]}),
            "INVALID_NODE_TYPE",
            "missing",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!(3)), node("n8n-nodes-base.code", json!(2)),
                             node("n8n-nodes-base.set", json!(3.4))]}),
            "DUPLICATE_NODE",
            "nodes[0] and nodes[2]",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!(0))]}),
            "INVALID_VERSION",
            "positive",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!(-1.5))]}),
            "INVALID_VERSION",
            "positive",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!("3"))]}),
            "INVALID_VERSION",
            "not a number",
        ),
        (
            json!({"nodes": [{"nodeName": "n8n-nodes-base.set", "version": 3, "reasoning": "  "}]}),
            "MISSING_REASONING",
            "n8n-nodes-base.set",
        ),
        (
            json!({"nodes": [{"nodeName": "n8n-nodes-base.merge", "version": 3, "reasoning": "r",
                "connectionChangingParameters": [{"name": "numberInputs", "possibleValues": []}]}]}),
            "INVALID_PARAMETER",
            "numberInputs",
        ),
        (
            json!({"nodes": [{"nodeName": "n8n-nodes-base.merge", "version": 3, "reasoning": "r",
                "connectionChangingParameters": [{"name": "", "possibleValues": [2]}]}]}),
            "INVALID_PARAMETER",
            "no name",
        ),
        (
            json!({"nodes": [{"nodeName": "n8n-nodes-base.merge", "version": 3, "reasoning": "r",
                "connectionChangingParameters": [{"name": "numberInputs", "possibleValues": [2]},
                                                 {"name": "numberInputs", "possibleValues": [3]}]}]}),
            "INVALID_PARAMETER",
            "twice",
        ),
        (
            json!({"nodes": [{"nodeName": "n8n-nodes-base.merge", "version": 3, "reasoning": "r",
                "connectionChangingParameters": "numberInputs"}]}),
            "INVALID_PARAMETER",
            "list",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!(3))], "techniques": ["rag"]}),
            "UNKNOWN_TECHNIQUE",
            "knowledge_base",
        ),
        (
            json!({"nodes": [node("n8n-nodes-base.set", json!(3))], "summary": 5}),
            "INVALID_INPUT",
            "summary",
        ),
        (
            json!({"nodes": (0..101).map(|i| node(&format!("n8n-nodes-base.n{i}"), json!(1))).collect::<Vec<_>>()}),
            "TOO_MANY_NODES",
            "at most 100",
        ),
    ];
    for (args, code, needle) in cases {
        let e = discovery_error(&tool, args.clone()).await;
        assert_eq!(e.code, code, "{args}: {e}");
        assert!(e.message.contains(needle), "{code}: {}", e.message);
    }
}

#[tokio::test]
async fn type_checker_hook_rejects_unknown_types() {
    let tool = SubmitDiscoveryResults::new().with_type_checker(|t: &str| {
        t.starts_with("n8n-nodes-base.") && t != "n8n-nodes-base.nope"
    });
    let ok = call(
        &tool,
        json!({"nodes": [node("n8n-nodes-base.set", json!(3))]}),
    )
    .await;
    assert!(ok.is_ok());
    let e = discovery_error(
        &tool,
        json!({"nodes": [node("n8n-nodes-base.nope", json!(1))]}),
    )
    .await;
    assert_eq!(e.code, "UNKNOWN_NODE_TYPE");
    assert!(e.message.contains("search_nodes"));
    assert!(format!("{tool:?}").contains("checker: true"));
}

#[tokio::test]
async fn with_a_catalogue_a_list_of_sub_nodes_alone_is_refused() {
    let catalogue = Arc::new(
        agentgraph_std_tools::catalogue::Catalogue::builtin().expect("built-in catalogue"),
    );
    let tool = SubmitDiscoveryResults::new().with_catalogue(catalogue);
    let loader = "@n8n/n8n-nodes-langchain.documentDefaultDataLoader";
    let model = "@n8n/n8n-nodes-langchain.lmChatOpenAi";
    let e = call(
        &tool,
        json!({"nodes": [node(loader, json!(1.1)), node(model, json!(1))]}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "NO_MAIN_NODES", "{e}");
    assert!(
        e.message.contains(loader) && e.message.contains(model),
        "{e}"
    );
    // With a main-flow node beside them, or a trigger alone, the list stands.
    for nodes in [
        json!([
            node(loader, json!(1.1)),
            node("n8n-nodes-base.httpRequest", json!(4.2))
        ]),
        json!([node("n8n-nodes-base.webhook", json!(2))]),
    ] {
        call(&tool, json!({ "nodes": nodes }))
            .await
            .expect("accepted");
    }
    // A sub-node listed with the parameters that change its ports may become a main node.
    let store = json!({"nodeName": "@n8n/n8n-nodes-langchain.vectorStoreInMemory",
        "version": 1, "reasoning": "r",
        "connectionChangingParameters": [{"name": "mode", "possibleValues": ["insert"]}]});
    call(&tool, json!({ "nodes": [store] }))
        .await
        .expect("accepted");
    // Unknown types are still refused by name.
    let e = call(
        &tool,
        json!({"nodes": [node("n8n-nodes-base.nope", json!(1))]}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "UNKNOWN_NODE_TYPE");
}

#[test]
fn full_type_shapes() {
    for ok in [
        "n8n-nodes-base.httpRequest",
        "@n8n/n8n-nodes-langchain.agent",
        "n8n-nodes-base.googleSheetsTool",
        "@acme/n8n-nodes-foo.bar_baz",
    ] {
        assert!(looks_like_full_type(ok), "{ok}");
    }
    for bad in [
        "httpRequest",
        "n8n-nodes-base.",
        ".agent",
        "n8n-nodes-base.http request",
        "n8n nodes.set",
        "@n8n/.agent",
        "n8n-nodes-base.1set",
        "",
    ] {
        assert!(!looks_like_full_type(bad), "{bad}");
    }
}

#[test]
fn discovery_schema_matches_the_reference_shape() {
    let tool = SubmitDiscoveryResults::default();
    assert_eq!(tool.name(), "submit_discovery_results");
    let schema = tool.input_schema();
    assert_eq!(
        schema["properties"]["nodes"]["items"]["required"],
        json!([
            "nodeName",
            "version",
            "reasoning",
            "connectionChangingParameters"
        ])
    );
    assert!(validate_args(
        &schema,
        &json!({"nodes": [{"nodeName": "n8n-nodes-base.set"}]})
    )
    .is_err());
}
