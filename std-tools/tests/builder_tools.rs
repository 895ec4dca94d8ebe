//! The workflow-builder tools: happy paths, every error code, connection inference on the real
//! n8n catalogue (when `../shared/data/n8n` is present) and an end-to-end build.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::StateView;
use agentgraph_std_tools::builder::state::codes;
use agentgraph_std_tools::builder::{
    workflow_tools, AddNodes, ConnectNodes, GetNodeDetails, GetNodeParameter, RemoveConnection,
    RemoveNode, SearchNodes,
};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::operations::{apply_operations, parse_operations, Operation};
use agentgraph_std_tools::workflow::{Workflow, WorkflowNode};
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};

const LC: &str = "@n8n/n8n-nodes-langchain";

fn builtin() -> Arc<Catalogue> {
    static CAT: OnceLock<Arc<Catalogue>> = OnceLock::new();
    CAT.get_or_init(|| Arc::new(Catalogue::builtin().expect("builtin catalogue")))
        .clone()
}

fn real() -> Option<Arc<Catalogue>> {
    static CAT: OnceLock<Option<Arc<Catalogue>>> = OnceLock::new();
    CAT.get_or_init(|| {
        let dir = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/n8n"
        ));
        if !dir.is_dir() {
            eprintln!("skipping real-catalogue tests: {} is absent", dir.display());
            return None;
        }
        Some(Arc::new(
            Catalogue::load_n8n_dir(dir).expect("real catalogue loads"),
        ))
    })
    .clone()
}

/// A workflow under construction: tools are called against it, their operations applied.
struct Session {
    cat: Arc<Catalogue>,
    wf: Workflow,
}

impl Session {
    fn new(cat: Arc<Catalogue>) -> Self {
        Session {
            cat,
            wf: Workflow::default(),
        }
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::detached(StateView::from_object(
            json!({"workflow": self.wf.to_value()}),
        ))
    }

    async fn call(&self, tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
        agentgraph_agents::tools::validate_args(&tool.input_schema(), &args)
            .map_err(|e| ToolError::new("SCHEMA", format!("{e:?}")))?;
        tool.call(args, &self.ctx()).await
    }

    /// Calls and applies the queued operations; returns the message.
    async fn run(&mut self, tool: &dyn Tool, args: Value) -> String {
        let out = self
            .call(tool, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{} {args}: {e}", tool.name()));
        self.apply(&out);
        text(&out)
    }

    fn apply(&mut self, out: &ToolOutput) {
        for (channel, value) in &out.writes {
            assert_eq!(channel, "operations");
            let ops = parse_operations(value).expect("operations parse");
            self.wf = apply_operations(&self.wf, &ops).expect("operations apply");
        }
    }

    async fn err(&self, tool: &dyn Tool, args: Value) -> ToolError {
        match self.call(tool, args.clone()).await {
            Ok(out) => panic!(
                "{} {args}: expected an error, got {}",
                tool.name(),
                text(&out)
            ),
            Err(e) => e,
        }
    }

    async fn add(&mut self, node_type: &str, name: &str, params: Value) -> String {
        let tool = AddNodes::new(self.cat.clone());
        let msg = self
            .run(
                &tool,
                json!({"nodeType": node_type, "name": name,
                       "connectionParametersReasoning": "test", "connectionParameters": params}),
            )
            .await;
        id_of(&msg)
    }

    async fn connect(&mut self, source: &str, target: &str) -> String {
        let tool = ConnectNodes::new(self.cat.clone());
        self.run(
            &tool,
            json!({"sourceNodeId": source, "targetNodeId": target}),
        )
        .await
    }

    fn name(&self, id: &str) -> String {
        self.wf.node_by_id(id).expect("node").name.clone()
    }

    fn has_edge(&self, source: &str, kind: &str, target: &str) -> bool {
        self.wf
            .edges()
            .iter()
            .any(|e| e.source == source && e.kind == kind && e.target.node == target)
    }
}

fn text(out: &ToolOutput) -> String {
    out.content.as_str().unwrap_or_default().to_string()
}

fn id_of(msg: &str) -> String {
    msg.split("with ID ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no id in {msg}"))
        .to_string()
}

fn ops_of(out: &ToolOutput) -> Vec<Operation> {
    out.writes
        .iter()
        .flat_map(|(_, v)| parse_operations(v).expect("ops"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// search_nodes / get_node_details
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn search_nodes_name_and_sub_node_queries() {
    let s = Session::new(builtin());
    let tool = SearchNodes::new(s.cat.clone());
    let out = s
        .call(
            &tool,
            json!({"queries": [
                {"queryType": "name", "query": "http"},
                {"queryType": "subNodeSearch", "connectionType": "ai_languageModel"},
                {"queryType": "name", "query": "zzzznothing"}
            ]}),
        )
        .await
        .expect("search");
    let t = text(&out);
    assert!(out.writes.is_empty());
    assert!(t.starts_with("Found "), "{t}");
    assert!(t.contains("nodes matching \"http\":"), "{t}");
    assert!(
        t.contains("<node_name>n8n-nodes-base.httpRequest</node_name>"),
        "{t}"
    );
    assert!(t.contains("<node_inputs>[\"main\"]</node_inputs>"), "{t}");
    assert!(t.contains("<node_version>4.2</node_version>"), "{t}");
    assert!(
        t.contains("sub-nodes with output type ai_languageModel"),
        "{t}"
    );
    assert!(t.contains(&format!("<node_name>{LC}.lmChatOpenAi</node_name>")));
    assert!(t.contains("<node_outputs>[\"ai_languageModel\"]</node_outputs>"));
    assert!(t.contains("No nodes found matching \"zzzznothing\""), "{t}");
    // Limit 5 per query.
    let out = s
        .call(
            &tool,
            json!({"queries": [{"queryType": "name", "query": "e"}]}),
        )
        .await
        .expect("search");
    assert!(text(&out).matches("<node>").count() <= 5);
}

#[tokio::test]
async fn search_nodes_errors() {
    let s = Session::new(builtin());
    let tool = SearchNodes::new(s.cat.clone());
    for args in [
        json!({"queries": []}),
        json!({"queries": [{"queryType": "name"}]}),
        json!({"queries": [{"queryType": "name", "query": "  "}]}),
        json!({"queries": [{"queryType": "subNodeSearch", "query": "x"}]}),
    ] {
        let e = s.err(&tool, args.clone()).await;
        assert!(
            e.code == codes::INVALID_INPUT || e.code == "SCHEMA",
            "{args}: {e}"
        );
    }
    // Unknown queryType (bypassing the schema's enum).
    let e = tool
        .call(
            json!({"queries": [{"queryType": "fuzzy", "query": "x"}]}),
            &s.ctx(),
        )
        .await
        .expect_err("unknown type");
    assert_eq!(e.code, codes::INVALID_INPUT);
    assert!(e.message.contains("subNodeSearch"));
}

#[tokio::test]
async fn search_nodes_real_catalogue() {
    let Some(cat) = real() else { return };
    let s = Session::new(cat);
    let tool = SearchNodes::new(s.cat.clone());
    let t = text(
        &s.call(
            &tool,
            json!({"queries": [
                {"queryType": "name", "query": "gmail"},
                {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "calculator"}
            ]}),
        )
        .await
        .expect("search"),
    );
    assert!(
        t.contains("<node_name>n8n-nodes-base.gmail</node_name>"),
        "{t}"
    );
    assert!(
        t.contains(&format!("<node_name>{LC}.toolCalculator</node_name>")),
        "{t}"
    );
}

#[tokio::test]
async fn get_node_details_shapes_and_errors() {
    let s = Session::new(builtin());
    let tool = GetNodeDetails::new(s.cat.clone());
    let t = text(
        &s.call(&tool, json!({"nodeName": "n8n-nodes-base.httpRequest"}))
            .await
            .expect("details"),
    );
    assert!(t.starts_with("<node_details>") && t.ends_with("</node_details>"));
    assert!(t.contains("<name>n8n-nodes-base.httpRequest</name>"));
    assert!(t.contains("<display_name>HTTP Request</display_name>"));
    assert!(t.contains("<input>main</input>") && t.contains("<output>main</output>"));
    assert!(!t.contains("<properties>"));
    let t = text(
        &s.call(
            &tool,
            json!({"nodeName": "n8n-nodes-base.httpRequest", "withParameters": true, "withConnections": false}),
        )
        .await
        .expect("details"),
    );
    assert!(
        t.contains("<properties>") && t.contains("\"name\": \"url\""),
        "{t}"
    );
    assert!(!t.contains("<connections>"));
    // Expression ports: note that they depend on parameters.
    let t = text(
        &s.call(
            &tool,
            json!({"nodeName": format!("{LC}.vectorStoreInMemory")}),
        )
        .await
        .expect("details"),
    );
    assert!(t.contains("depend on the parameters"), "{t}");
    let e = s
        .err(&tool, json!({"nodeName": "n8n-nodes-base.htpRequest"}))
        .await;
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
    assert!(e.message.contains("Did you mean"), "{e}");
    let e = s.err(&tool, json!({"nodeName": ""})).await;
    assert_eq!(e.code, codes::INVALID_INPUT);
}

#[tokio::test]
async fn get_node_details_real_caps_output() {
    let Some(cat) = real() else { return };
    let s = Session::new(cat);
    let tool = GetNodeDetails::new(s.cat.clone());
    for name in [
        "n8n-nodes-base.googleSheets",
        "n8n-nodes-base.salesforce",
        "n8n-nodes-base.httpRequest",
    ] {
        let t = text(
            &s.call(&tool, json!({"nodeName": name, "withParameters": true}))
                .await
                .expect("details"),
        );
        assert!(t.len() < 25_000, "{name}: {} chars", t.len());
    }
}

// ---------------------------------------------------------------------------------------------
// add_nodes
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn add_nodes_happy_path_positions_and_names() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let out = s
        .call(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "Fetch Weather Data",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await
        .expect("add");
    let msg = text(&out);
    assert!(
        msg.starts_with("Successfully added \"Fetch Weather Data\" (HTTP Request) with ID "),
        "{msg}"
    );
    let ops = ops_of(&out);
    let [Operation::AddNodes { nodes }] = ops.as_slice() else {
        panic!("{ops:?}")
    };
    assert_eq!(nodes[0].node_type, "n8n-nodes-base.httpRequest");
    assert_eq!(nodes[0].version(), 4.2);
    assert_eq!(nodes[0].xy(), (240.0, 300.0));
    assert_eq!(nodes[0].id.as_deref(), Some(id_of(&msg).as_str()));
    s.apply(&out);
    // Next main node to the right; a trigger to the left; a duplicate name made unique.
    let set = s
        .add("n8n-nodes-base.set", "Fetch Weather Data", json!({}))
        .await;
    assert_eq!(s.name(&set), "Fetch Weather Data1");
    assert_eq!(s.wf.node_by_id(&set).expect("set").xy(), (480.0, 300.0));
    let trig = s
        .add("n8n-nodes-base.scheduleTrigger", "Every Hour", json!({}))
        .await;
    assert_eq!(s.wf.node_by_id(&trig).expect("trigger").xy(), (0.0, 300.0));
    // A sub-node goes below its likely parent.
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let model = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    let (ax, ay) = s.wf.node_by_id(&agent).expect("agent").xy();
    assert_eq!(
        s.wf.node_by_id(&model).expect("model").xy(),
        (ax, ay + 200.0)
    );
    let mem = s
        .add(&format!("{LC}.memoryBufferWindow"), "Memory", json!({}))
        .await;
    assert_eq!(
        s.wf.node_by_id(&mem).expect("mem").xy(),
        (ax + 160.0, ay + 200.0)
    );
    // Connection parameters become the node's parameters.
    let vs = s
        .add(
            &format!("{LC}.vectorStoreInMemory"),
            "Store",
            json!({"mode": "insert"}),
        )
        .await;
    assert_eq!(
        s.wf.node_by_id(&vs).expect("vs").parameters["mode"],
        json!("insert")
    );
    // Empty name: the type's default name.
    let out = s
        .call(
            &tool,
            json!({"nodeType": "n8n-nodes-base.code", "name": "",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await
        .expect("add");
    assert!(text(&out).contains("\"Code\""), "{}", text(&out));
}

#[tokio::test]
async fn add_nodes_errors() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpReqest", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
    assert!(
        e.message.contains("Did you mean") && e.message.contains("httpRequest"),
        "{e}"
    );
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "x",
                   "connectionParametersReasoning": "  ", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::MISSING_REASONING);
    let e = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.httpRequest", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": [1]}),
            &s.ctx(),
        )
        .await
        .expect_err("array params");
    assert_eq!(e.code, codes::INVALID_INPUT);
    s.add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let e = s
        .err(
            &tool,
            json!({"nodeType": "n8n-nodes-base.manualTrigger", "name": "Again",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
        )
        .await;
    assert_eq!(e.code, codes::MAX_NODES_REACHED);
    // A workflow channel that is not a workflow.
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": {"nodes": 3}})));
    let e = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.set", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
            &ctx,
        )
        .await
        .expect_err("bad workflow");
    assert_eq!(e.code, codes::INVALID_WORKFLOW);
}

#[tokio::test]
async fn parallel_adds_with_the_same_name_get_unique_names() {
    let mut s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let args = json!({"nodeType": "n8n-nodes-base.set", "name": "Prepare",
                      "connectionParametersReasoning": "r", "connectionParameters": {}});
    // Both calls see the same state (one step), then both batches apply.
    let a = s.call(&tool, args.clone()).await.expect("a");
    let b = s.call(&tool, args).await.expect("b");
    s.apply(&a);
    s.apply(&b);
    let names: Vec<&str> = s.wf.node_names().collect();
    assert_eq!(names, vec!["Prepare", "Prepare1"]);
}

#[tokio::test]
async fn settings_choose_the_channels() {
    let s = Session::new(builtin());
    let tool = AddNodes::new(s.cat.clone());
    let ctx = ToolContext::detached(StateView::from_object(json!({"wf": null}))).with_settings(
        Arc::new(json!({"workflow_channel": "wf", "operations_channel": "ops"})),
    );
    let out = tool
        .call(
            json!({"nodeType": "n8n-nodes-base.set", "name": "x",
                   "connectionParametersReasoning": "r", "connectionParameters": {}}),
            &ctx,
        )
        .await
        .expect("add");
    assert_eq!(out.writes[0].0, "ops");
}

// ---------------------------------------------------------------------------------------------
// connect_nodes
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn connect_nodes_main_and_ai_with_swap() {
    let mut s = Session::new(builtin());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
    let agent = s.add(&format!("{LC}.agent"), "AI Agent", json!({})).await;
    let model = s
        .add(
            &format!("{LC}.lmChatOpenAi"),
            "OpenAI Chat Model",
            json!({}),
        )
        .await;
    let msg = s.connect(&trig, &http).await;
    assert_eq!(msg, "Connected \"Start\" to \"Fetch\" via main");
    // By name as a fallback.
    s.connect("Fetch", "AI Agent").await;
    // Agent → model is turned around.
    let tool = ConnectNodes::new(s.cat.clone());
    let out = s
        .call(&tool, json!({"sourceNodeId": agent, "targetNodeId": model}))
        .await
        .expect("connect");
    assert_eq!(
        text(&out).split(" (swapped").next(),
        Some("Connected \"OpenAI Chat Model\" to \"AI Agent\" via ai_languageModel")
    );
    assert!(text(&out).contains("swapped for correct direction"));
    let ops = ops_of(&out);
    assert_eq!(
        ops[0].to_value(),
        json!({"type": "mergeConnections", "connections": {"OpenAI Chat Model": {
            "ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]}}})
    );
    s.apply(&out);
    assert!(s.has_edge("Start", "main", "Fetch"));
    assert!(s.has_edge("Fetch", "main", "AI Agent"));
    assert!(s.has_edge("OpenAI Chat Model", "ai_languageModel", "AI Agent"));
}

#[tokio::test]
async fn connect_nodes_indexes_and_explicit_type() {
    let mut s = Session::new(builtin());
    let iff = s.add("n8n-nodes-base.if", "Check", json!({})).await;
    let a = s.add("n8n-nodes-base.set", "Yes", json!({})).await;
    let b = s.add("n8n-nodes-base.set", "No", json!({})).await;
    let merge = s
        .add("n8n-nodes-base.merge", "Merge", json!({"numberInputs": 3}))
        .await;
    let tool = ConnectNodes::new(s.cat.clone());
    s.run(
        &tool,
        json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 0}),
    )
    .await;
    let out = s
        .call(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": b, "sourceOutputIndex": 1}),
        )
        .await
        .expect("false branch");
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "mergeConnections", "connections": {"Check": {"main": [[], [{"node": "No", "type": "main", "index": 0}]]}}})
    );
    s.apply(&out);
    let msg = s
        .run(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": merge, "targetInputIndex": 2, "connectionType": "main"}),
        )
        .await;
    assert!(msg.contains("output 0 → input 2"), "{msg}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 2}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_OUTPUT_INDEX);
    assert!(e.message.contains("has 2 main output(s)"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": b, "targetNodeId": merge, "targetInputIndex": 3}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX);
    assert!(e.message.contains("has 3 main input(s)"), "{e}");
}

#[tokio::test]
async fn connect_nodes_errors() {
    let mut s = Session::new(builtin());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
    let set = s.add("n8n-nodes-base.set", "Set", json!({})).await;
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let model = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model", json!({}))
        .await;
    let model2 = s
        .add(&format!("{LC}.lmChatAnthropic"), "Claude", json!({}))
        .await;
    let memory = s
        .add(&format!("{LC}.memoryBufferWindow"), "Memory", json!({}))
        .await;
    let tool = ConnectNodes::new(s.cat.clone());
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"sourceNodeId": "nope", "targetNodeId": http}),
            codes::NODE_NOT_FOUND,
            "sourceNodeId \"nope\"",
        ),
        (
            json!({"sourceNodeId": trig, "targetNodeId": "nope"}),
            codes::NODE_NOT_FOUND,
            "targetNodeId \"nope\"",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": http}),
            codes::SAME_NODE,
            "itself",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": trig}),
            codes::INCOMPATIBLE_CONNECTION,
            "has no inputs",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": memory}),
            codes::INCOMPATIBLE_CONNECTION,
            "no compatible",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": http}),
            codes::INCOMPATIBLE_CONNECTION,
            "no compatible",
        ),
        (
            json!({"sourceNodeId": http, "targetNodeId": set, "connectionType": "ai_tool"}),
            codes::INVALID_CONNECTION_TYPE,
            "does not output ai_tool",
        ),
        (
            json!({"sourceNodeId": model, "targetNodeId": agent, "connectionType": "ai_memory"}),
            codes::INVALID_CONNECTION_TYPE,
            "does not output ai_memory",
        ),
        (
            json!({"sourceNodeId": "", "targetNodeId": http}),
            codes::INVALID_INPUT,
            "sourceNodeId",
        ),
    ];
    for (args, code, needle) in cases {
        let e = s.err(&tool, args.clone()).await;
        assert_eq!(e.code, code, "{args}: {e}");
        assert!(e.message.contains(needle), "{args}: {e}");
    }
    // Already connected; input full (one chat model per agent).
    s.connect(&http, &set).await;
    let e = s
        .err(&tool, json!({"sourceNodeId": http, "targetNodeId": set}))
        .await;
    assert_eq!(e.code, codes::ALREADY_CONNECTED);
    s.connect(&model, &agent).await;
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": model2, "targetNodeId": agent}),
        )
        .await;
    assert_eq!(e.code, codes::INPUT_FULL, "{e}");
    assert!(e.message.contains("\"Model\""), "{e}");
    // Port resolution of an unknown type.
    let mut wf = s.wf.clone();
    wf.add_node(WorkflowNode::new(
        "z",
        "Ghost",
        "n8n-nodes-base.ghost",
        1.0,
        [0.0, 0.0],
    ));
    let ctx = ToolContext::detached(StateView::from_object(json!({"workflow": wf.to_value()})));
    let e = tool
        .call(json!({"sourceNodeId": "z", "targetNodeId": set}), &ctx)
        .await
        .expect_err("ghost");
    assert_eq!(e.code, codes::NODE_TYPE_NOT_FOUND);
}

#[tokio::test]
async fn connect_nodes_ambiguous_and_sub_node_required() {
    // A hand-made catalogue: two main nodes with both main and ai_tool ports.
    let mut cat = Catalogue::builtin().expect("builtin");
    cat.add_json_str(
        r#"[{"name": "x.both", "displayName": "Both", "description": "", "version": 1,
             "group": ["transform"], "inputs": ["main", "ai_tool"], "outputs": ["main", "ai_tool"],
             "properties": []}]"#,
        std::path::Path::new("<test>"),
        None,
        false,
    )
    .expect("test types");
    let mut s = Session::new(Arc::new(cat));
    let a = s.add("x.both", "A", json!({})).await;
    let b = s.add("x.both", "B", json!({})).await;
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(&tool, json!({"sourceNodeId": a, "targetNodeId": b}))
        .await;
    assert_eq!(e.code, codes::AMBIGUOUS_CONNECTION_TYPE);
    assert!(e.message.contains("main, ai_tool"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": b, "connectionType": "ai_tool"}),
        )
        .await;
    assert_eq!(e.code, codes::SUB_NODE_REQUIRED);
    let msg = s
        .run(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": b, "connectionType": "main"}),
        )
        .await;
    assert_eq!(msg, "Connected \"A\" to \"B\" via main");
}

#[tokio::test]
async fn ports_that_cannot_be_resolved_are_coded_errors() {
    // Inputs computed from a parameter, not a list for one value (as a broken n8n description
    // would give; an expression that throws gives no inputs, as in n8n).
    let mut cat = Catalogue::builtin().expect("builtin");
    cat.add_json_str(
        r#"[{"name": "x.modal", "displayName": "Modal", "description": "", "version": 1,
             "group": ["transform"],
             "inputs": "={{ $parameter.mode === 'bad' ? 'not a list' : ['main'] }}",
             "outputs": ["main"],
             "properties": [{"name": "mode", "displayName": "Mode", "type": "string", "default": "ok"}]}]"#,
        std::path::Path::new("<test>"),
        None,
        false,
    )
    .expect("test types");
    let mut s = Session::new(Arc::new(cat));
    let add = AddNodes::new(s.cat.clone());
    let e = s
        .err(
            &add,
            json!({"nodeType": "x.modal", "name": "Broken",
                   "connectionParametersReasoning": "mode decides the inputs",
                   "connectionParameters": {"mode": "bad"}}),
        )
        .await;
    assert_eq!(e.code, codes::PORT_RESOLUTION_FAILED);
    assert!(e.message.contains("check the parameter values"), "{e}");
    // Added with a good mode, then changed to the bad one: connecting reports it.
    let a = s.add("x.modal", "A", json!({"mode": "ok"})).await;
    let b = s.add("x.modal", "B", json!({"mode": "ok"})).await;
    s.wf.node_mut("B")
        .expect("B")
        .parameters
        .insert("mode".into(), json!("bad"));
    let e = s
        .err(
            &ConnectNodes::new(s.cat.clone()),
            json!({"sourceNodeId": a, "targetNodeId": b}),
        )
        .await;
    assert_eq!(e.code, codes::PORT_RESOLUTION_FAILED);
    assert!(e.message.contains("\"B\""), "{e}");
}

// ---------------------------------------------------------------------------------------------
// connection inference on the real catalogue
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn real_chat_model_agent_both_directions() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let agent = s.add(&format!("{LC}.agent"), "AI Agent", json!({})).await;
    let model = s
        .add(
            &format!("{LC}.lmChatOpenAi"),
            "OpenAI Chat Model",
            json!({}),
        )
        .await;
    let model2 = s
        .add(&format!("{LC}.lmChatAnthropic"), "Claude", json!({}))
        .await;
    let msg = s.connect(&model, &agent).await;
    assert_eq!(
        msg,
        "Connected \"OpenAI Chat Model\" to \"AI Agent\" via ai_languageModel"
    );
    // Reversed: agent → chat model is swapped (fresh workflow state for the second model).
    s.wf.connections.clear();
    let msg = s.connect(&agent, &model2).await;
    assert!(
        msg.starts_with("Connected \"Claude\" to \"AI Agent\" via ai_languageModel (swapped"),
        "{msg}"
    );
    assert!(s.has_edge("Claude", "ai_languageModel", "AI Agent"));
}

#[tokio::test]
async fn real_vector_store_insert_vs_retrieve_as_tool() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let insert = s
        .add(
            &format!("{LC}.vectorStoreInMemory"),
            "Insert Docs",
            json!({"mode": "insert"}),
        )
        .await;
    let loader = s
        .add(
            &format!("{LC}.documentDefaultDataLoader"),
            "Loader",
            json!({}),
        )
        .await;
    let emb = s
        .add(&format!("{LC}.embeddingsOpenAi"), "Embeddings", json!({}))
        .await;
    s.connect(&trig, &insert).await;
    assert!(s
        .connect(&loader, &insert)
        .await
        .ends_with("via ai_document"));
    assert!(s.connect(&emb, &insert).await.ends_with("via ai_embedding"));
    // Reversed embedding connection on the insert store is swapped too.
    let emb2 = s
        .add(&format!("{LC}.embeddingsOpenAi"), "Embeddings 2", json!({}))
        .await;
    let insert2 = s
        .add(
            &format!("{LC}.vectorStoreInMemory"),
            "Insert 2",
            json!({"mode": "insert"}),
        )
        .await;
    let msg = s.connect(&insert2, &emb2).await;
    assert!(msg.contains("via ai_embedding (swapped"), "{msg}");
    // Retrieve-as-tool: the store is a sub-node feeding the agent's tools.
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let tool_store = s
        .add(
            &format!("{LC}.vectorStoreInMemory"),
            "Knowledge",
            json!({"mode": "retrieve-as-tool", "toolName": "kb", "toolDescription": "docs"}),
        )
        .await;
    assert_eq!(
        s.connect(&tool_store, &agent).await,
        "Connected \"Knowledge\" to \"Agent\" via ai_tool"
    );
    // In insert mode it cannot be an agent tool.
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": insert, "targetNodeId": agent, "connectionType": "ai_tool"}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_CONNECTION_TYPE, "{e}");
    assert!(s.has_edge("Knowledge", "ai_tool", "Agent"));
    assert!(s.has_edge("Loader", "ai_document", "Insert Docs"));
    assert!(s.has_edge("Embeddings", "ai_embedding", "Insert Docs"));
}

#[tokio::test]
async fn real_document_loader_custom_splitting() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let default_loader = s
        .add(
            &format!("{LC}.documentDefaultDataLoader"),
            "Simple Loader",
            json!({}),
        )
        .await;
    let custom = s
        .add(
            &format!("{LC}.documentDefaultDataLoader"),
            "Custom Loader",
            json!({"textSplittingMode": "custom"}),
        )
        .await;
    let splitter = s
        .add(
            &format!("{LC}.textSplitterRecursiveCharacterTextSplitter"),
            "Splitter",
            json!({}),
        )
        .await;
    assert_eq!(
        s.connect(&splitter, &custom).await,
        "Connected \"Splitter\" to \"Custom Loader\" via ai_textSplitter"
    );
    let tool = ConnectNodes::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": splitter, "targetNodeId": default_loader}),
        )
        .await;
    assert_eq!(e.code, codes::INCOMPATIBLE_CONNECTION, "{e}");
    assert!(e.message.contains("textSplittingMode"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// remove_node / remove_connection / get_node_parameter
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn remove_node_lists_connections() {
    let mut s = Session::new(builtin());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch", json!({}))
        .await;
    let set = s.add("n8n-nodes-base.set", "Set", json!({})).await;
    s.connect(&trig, &http).await;
    s.connect(&http, &set).await;
    let tool = RemoveNode::new(s.cat.clone());
    let out = s
        .call(&tool, json!({"nodeId": http}))
        .await
        .expect("remove");
    let msg = text(&out);
    assert!(
        msg.starts_with("Successfully removed node \"Fetch\" (HTTP Request) and 2 connection(s):"),
        "{msg}"
    );
    assert!(msg.contains("- \"Start\" → \"Fetch\" (main)"), "{msg}");
    assert!(msg.contains("- \"Fetch\" → \"Set\" (main)"), "{msg}");
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "removeNode", "nodeIds": [http]})
    );
    s.apply(&out);
    assert!(s.wf.node_by_id(&http).is_none());
    assert!(s.wf.edges().is_empty());
    let e = s.err(&tool, json!({"nodeId": http})).await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
    let e = s.err(&tool, json!({"nodeId": " "})).await;
    assert_eq!(e.code, codes::INVALID_INPUT);
}

#[tokio::test]
async fn remove_connection_happy_and_errors() {
    let mut s = Session::new(builtin());
    let iff = s.add("n8n-nodes-base.if", "Check", json!({})).await;
    let a = s.add("n8n-nodes-base.set", "A", json!({})).await;
    let tool_c = ConnectNodes::new(s.cat.clone());
    s.run(
        &tool_c,
        json!({"sourceNodeId": iff, "targetNodeId": a, "sourceOutputIndex": 1}),
    )
    .await;
    let tool = RemoveConnection::new(s.cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::CONNECTION_NOT_FOUND);
    assert!(e.message.contains("output 1 → input 0"), "{e}");
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": "x", "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": a, "targetNodeId": iff, "connectionType": "main"}),
        )
        .await;
    assert_eq!(e.code, codes::CONNECTION_NOT_FOUND);
    assert!(
        e.message.contains("there is no connection from \"A\""),
        "{e}"
    );
    let out = s
        .call(
            &tool,
            json!({"sourceNodeId": iff, "targetNodeId": a, "connectionType": "main", "sourceOutputIndex": 1}),
        )
        .await
        .expect("remove");
    assert_eq!(
        text(&out),
        "Successfully removed connection \"Check\" → \"A\" (main, output 1 → input 0)"
    );
    assert_eq!(
        ops_of(&out)[0].to_value(),
        json!({"type": "removeConnection", "sourceNode": "Check", "targetNode": "A",
               "connectionType": "main", "sourceOutputIndex": 1, "targetInputIndex": 0})
    );
    s.apply(&out);
    assert!(s.wf.edges().is_empty());
}

#[tokio::test]
async fn get_node_parameter_paths_and_errors() {
    let mut s = Session::new(builtin());
    let http = s
        .add(
            "n8n-nodes-base.httpRequest",
            "Fetch",
            json!({"url": "https://api.example.com",
                   "headerParameters": {"parameters": [{"name": "Content-Type", "value": "application/json"}]},
                   "options": {"a.b": true},
                   "body": "x".repeat(30_001)}),
        )
        .await;
    let tool = GetNodeParameter::new(s.cat.clone());
    let get = |path: &str| json!({"nodeId": http, "path": path});
    let t = text(&s.call(&tool, get("url")).await.expect("url"));
    assert_eq!(
        t,
        "Parameter \"url\" of node \"Fetch\":\nhttps://api.example.com"
    );
    let t = text(
        &s.call(&tool, get("headerParameters.parameters[0].value"))
            .await
            .expect("nested"),
    );
    assert!(t.ends_with("\napplication/json"), "{t}");
    let t = text(
        &s.call(&tool, get("parameters.headerParameters.parameters[0]"))
            .await
            .expect("prefix"),
    );
    assert!(t.contains("\"name\": \"Content-Type\""), "{t}");
    let t = text(
        &s.call(&tool, get("options[\"a.b\"]"))
            .await
            .expect("quoted"),
    );
    assert!(t.ends_with("\ntrue"), "{t}");
    let t = text(
        &s.call(&tool, get("headerParameters.parameters.0.name"))
            .await
            .expect("dotted index"),
    );
    assert!(t.ends_with("\nContent-Type"), "{t}");
    // By name too.
    s.call(&tool, json!({"nodeId": "Fetch", "path": "url"}))
        .await
        .expect("by name");
    for (path, code) in [
        (
            "headerParameters.parameters[3].value",
            codes::PARAMETER_NOT_FOUND,
        ),
        ("missing", codes::PARAMETER_NOT_FOUND),
        ("url.x", codes::PARAMETER_NOT_FOUND),
        ("a..b", codes::INVALID_PATH),
        ("a[", codes::INVALID_PATH),
        ("a[x]", codes::INVALID_PATH),
        ("a]", codes::INVALID_PATH),
        ("body", codes::PARAMETER_TOO_LARGE),
    ] {
        let e = s.err(&tool, get(path)).await;
        assert_eq!(e.code, code, "{path}: {e}");
    }
    let e = s
        .err(&tool, get("headerParameters.parameters[3].value"))
        .await;
    assert!(e.message.contains("an array of 1 item(s)"), "{e}");
    let e = s.err(&tool, get("body")).await;
    assert!(
        e.message
            .contains("exceeds maximum length of 30000 characters"),
        "{e}"
    );
    let e = s.err(&tool, json!({"nodeId": "nope", "path": "url"})).await;
    assert_eq!(e.code, codes::NODE_NOT_FOUND);
}

// ---------------------------------------------------------------------------------------------
// workflow_tools and an end-to-end build
// ---------------------------------------------------------------------------------------------

#[test]
fn workflow_tools_lists_nine_tools() {
    let tools = workflow_tools(builtin());
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        vec![
            "search_nodes",
            "get_node_details",
            "add_nodes",
            "connect_nodes",
            "remove_node",
            "remove_connection",
            "get_node_parameter",
            "get_best_practices",
            "submit_discovery_results"
        ]
    );
    for t in &tools {
        assert!(!t.description().is_empty());
        assert_eq!(t.input_schema()["type"], "object");
    }
}

async fn build_end_to_end(cat: Arc<Catalogue>) {
    let mut s = Session::new(cat);
    let tools = workflow_tools(s.cat.clone());
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name() == name)
            .expect("tool")
            .clone()
    };
    let search = text(
        &s.call(
            tool("search_nodes").as_ref(),
            json!({"queries": [{"queryType": "name", "query": "schedule"},
                               {"queryType": "subNodeSearch", "connectionType": "ai_languageModel", "query": "openai"}]}),
        )
        .await
        .expect("search"),
    );
    assert!(
        search.contains("n8n-nodes-base.scheduleTrigger"),
        "{search}"
    );
    let sched = s
        .add("n8n-nodes-base.scheduleTrigger", "Every Morning", json!({}))
        .await;
    let http = s
        .add("n8n-nodes-base.httpRequest", "Fetch News", json!({}))
        .await;
    let agent = s.add(&format!("{LC}.agent"), "Summarise", json!({})).await;
    let model = s
        .add(
            &format!("{LC}.lmChatOpenAi"),
            "OpenAI Chat Model",
            json!({}),
        )
        .await;
    let calc = s
        .add(&format!("{LC}.toolCalculator"), "Calculator", json!({}))
        .await;
    s.connect(&sched, &http).await;
    s.connect(&http, &agent).await;
    s.connect(&agent, &model).await; // swapped
    s.connect(&calc, &agent).await;
    let mut edges: Vec<(String, String, String)> =
        s.wf.edges()
            .into_iter()
            .map(|e| (e.source, e.kind, e.target.node))
            .collect();
    edges.sort();
    let e = |a: &str, k: &str, b: &str| (a.to_string(), k.to_string(), b.to_string());
    assert_eq!(
        edges,
        vec![
            e("Calculator", "ai_tool", "Summarise"),
            e("Every Morning", "main", "Fetch News"),
            e("Fetch News", "main", "Summarise"),
            e("OpenAI Chat Model", "ai_languageModel", "Summarise"),
        ]
    );
    assert_eq!(s.wf.nodes.len(), 5);
    // Positions: trigger left of the flow, sub-nodes below the agent.
    let x = |id: &str| s.wf.node_by_id(id).expect("node").xy();
    assert!(x(&sched).0 < x(&http).0 && x(&http).0 < x(&agent).0);
    assert!(x(&model).1 > x(&agent).1 && x(&calc).1 > x(&agent).1);
    assert_ne!(x(&model), x(&calc));
    assert_eq!(s.name(&model), "OpenAI Chat Model");
}

#[tokio::test]
async fn end_to_end_builtin() {
    build_end_to_end(builtin()).await;
}

#[tokio::test]
async fn end_to_end_real() {
    let Some(cat) = real() else { return };
    build_end_to_end(cat).await;
}

#[tokio::test]
#[ignore = "prints sample outputs"]
async fn print_samples() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat);
    let t = SearchNodes::new(s.cat.clone());
    println!("{}", text(&s.call(&t, json!({"queries": [{"queryType": "name", "query": "http"}, {"queryType": "subNodeSearch", "connectionType": "ai_memory"}]})).await.unwrap()));
    let t = GetNodeDetails::new(s.cat.clone());
    let d = text(
        &s.call(
            &t,
            json!({"nodeName": format!("{LC}.vectorStoreInMemory"), "withParameters": true}),
        )
        .await
        .unwrap(),
    );
    println!("{}", &d[..d.len().min(3000)]);
    let a = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    let tool = AddNodes::new(s.cat.clone());
    let out = s.call(&tool, json!({"nodeType": format!("{LC}.lmChatOpenAi"), "name": "Model", "connectionParametersReasoning": "r", "connectionParameters": {}})).await.unwrap();
    println!("{}", text(&out));
    s.apply(&out);
    println!("{}", s.connect(&a, "Model").await);
}

// ---------------------------------------------------------------------------------------------
// Review follow-ups: per-port summaries, node-type hints, sub-node search with a query
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn port_summaries_show_every_port() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat.clone());
    let tool = AddNodes::new(cat.clone());
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.if", "name": "Check",
                   "connectionParametersReasoning": "static", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains("Outputs: [\"main[0] (true)\",\"main[1] (false)\"]"),
        "{msg}"
    );
    let msg = s
        .run(
            &tool,
            json!({"nodeType": "n8n-nodes-base.merge", "name": "Merge",
                   "connectionParametersReasoning": "two inputs", "connectionParameters": {}}),
        )
        .await;
    assert!(
        msg.contains("Inputs: [\"main[0] (Input 1)\",\"main[1] (Input 2)\"]"),
        "{msg}"
    );
    let search = SearchNodes::new(cat.clone());
    let out = search
        .run(&json!({"queries": [{"queryType": "name", "query": "if"}]}))
        .expect("search");
    assert!(
        out.contains("<node_outputs>[\"main[0] (true)\",\"main[1] (false)\"]</node_outputs>"),
        "{out}"
    );
    let details = GetNodeDetails::new(cat);
    let out = details
        .run(&json!({"nodeName": "n8n-nodes-base.if"}))
        .expect("details");
    assert!(out.contains("<output>main \"true\"</output>"), "{out}");
    assert!(out.contains("<output>main \"false\"</output>"), "{out}");
}

#[tokio::test]
async fn index_hints_are_node_type_specific() {
    let Some(cat) = real() else { return };
    let mut s = Session::new(cat.clone());
    let trig = s
        .add("n8n-nodes-base.manualTrigger", "Start", json!({}))
        .await;
    let switch = s.add("n8n-nodes-base.switch", "Route", json!({})).await;
    let set = s.add("n8n-nodes-base.set", "Set", json!({})).await;
    let agent = s.add(&format!("{LC}.agent"), "Agent", json!({})).await;
    s.connect(&trig, &switch).await;
    let tool = ConnectNodes::new(cat.clone());
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": switch, "targetNodeId": set, "sourceOutputIndex": 1}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_OUTPUT_INDEX, "{e}");
    assert!(
        e.message.contains("rules") && e.message.contains("numberOutputs"),
        "{e}"
    );
    // An agent's input index error does not talk about Merge.
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": trig, "targetNodeId": agent, "targetInputIndex": 1}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX, "{e}");
    assert!(!e.message.contains("Merge"), "{e}");
    let merge = s.add("n8n-nodes-base.merge", "Merge", json!({})).await;
    let e = s
        .err(
            &tool,
            json!({"sourceNodeId": set, "targetNodeId": merge, "targetInputIndex": 2}),
        )
        .await;
    assert_eq!(e.code, codes::INVALID_INPUT_INDEX, "{e}");
    assert!(e.message.contains("numberInputs"), "{e}");
    // INPUT_FULL works for both tool sets.
    let m1 = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model 1", json!({}))
        .await;
    let m2 = s
        .add(&format!("{LC}.lmChatOpenAi"), "Model 2", json!({}))
        .await;
    s.connect(&m1, &agent).await;
    let e = s
        .err(&tool, json!({"sourceNodeId": m2, "targetNodeId": agent}))
        .await;
    assert_eq!(e.code, codes::INPUT_FULL, "{e}");
    assert!(e.message.contains("remove_node"), "{e}");
}

#[tokio::test]
async fn sub_node_search_with_a_query_keeps_matches() {
    let Some(cat) = real() else { return };
    let search = SearchNodes::new(cat);
    let out = search
        .run(&json!({"queries": [
            {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "vector"}
        ]}))
        .expect("search");
    for unrelated in ["s3Tool", "dhlTool", "gitTool", "jwtTool"] {
        assert!(!out.contains(unrelated), "{unrelated} in {out}");
    }
    assert!(out.contains("toolVectorStore"), "{out}");
    assert!(
        out.contains("<node_name>@n8n/n8n-nodes-langchain.vectorStore"),
        "{out}"
    );
    assert!(
        out.contains(
            "<connection_parameters>{\"mode\":\"retrieve-as-tool\"}</connection_parameters>"
        ),
        "{out}"
    );
    let out = search
        .run(&json!({"queries": [
            {"queryType": "subNodeSearch", "connectionType": "ai_tool", "query": "gmail"}
        ]}))
        .expect("search");
    assert!(out.contains("n8n-nodes-base.gmailTool"), "{out}");
    assert_eq!(out.matches("<node>").count(), 1, "{out}");
    // Without a query every tool still qualifies.
    let out = search
        .run(&json!({"queries": [{"queryType": "subNodeSearch", "connectionType": "ai_tool"}]}))
        .expect("search");
    assert_eq!(out.matches("<node>").count(), 5, "{out}");
}
