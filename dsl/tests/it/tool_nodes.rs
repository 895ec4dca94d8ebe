//! `tool` nodes: one tool call with arguments from the state or a task's payload, no model; the
//! tool is found once, at the node's first run, through the registry's resolver.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::agents::ToolMap;
use agentgraph_dsl::code::{register_tool_kind, ResolveTool, ToolLookupError, ToolResolver};
use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::registry::NodeBuild;
use agentgraph_dsl::{Diagnostic, Registry};
use agentgraph_runtime::{CompiledGraph, Input, RunConfig, RunError};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Adds `a` and `b`; also appends a line to `log`.
struct Add {
    name: &'static str,
}

#[async_trait]
impl Tool for Add {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "adds two integers"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"]})
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (a, b) = (
            args["a"].as_i64().unwrap_or(0),
            args["b"].as_i64().unwrap_or(0),
        );
        Ok(ToolOutput {
            content: json!({ "sum": a + b }),
            writes: Vec::new(),
        }
        .write("log", json!([format!("{a}+{b}")])))
    }
}

/// Always fails with a code.
struct OutOfQuota;

#[async_trait]
impl Tool for OutOfQuota {
    fn name(&self) -> &str {
        "quota"
    }
    fn description(&self) -> &str {
        "fails"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("QUOTA", "no calls left today"))
    }
}

fn tools() -> ToolMap {
    let mut m = ToolMap::new();
    m.insert("add".into(), Arc::new(Add { name: "add" }) as Arc<dyn Tool>);
    m.insert(
        "get-sum".into(),
        Arc::new(Add { name: "get-sum" }) as Arc<dyn Tool>,
    );
    m.insert("quota".into(), Arc::new(OutOfQuota) as Arc<dyn Tool>);
    m
}

fn registry() -> Registry {
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, tools());
    reg
}

fn compile_with(text: &str, reg: &Registry) -> CompiledGraph {
    match crate::js_nodes::project("tools.ag", text).compile(reg) {
        Ok(g) => g,
        Err(ds) => panic!("does not compile: {ds:#?}"),
    }
}

fn diagnostics(text: &str) -> Vec<Diagnostic> {
    crate::js_nodes::project("tools.ag", text).check(&registry())
}

const SUMS: &str = r#"graph sums {
  state {
    x: int = 0
    pairs: list<json> = []
    sum: json?
    sums: list<json> = [] reduce append
    log: list<string> = [] reduce append
  }

  node direct: tool { tool: add, args: { a: x, b: 10 }, output: sum }
  node each: tool {
    tool: "get-sum"
    args: { a: pair[0], b: pair[1] }
    output: sums
  }

  START -> direct
  direct -> send each for p in pairs { pair: p }
  each -> END
}
"#;

#[tokio::test]
async fn tool_nodes_call_with_arguments_from_the_state_and_the_payload() {
    let g = compile_with(SUMS, &registry());
    let out = g
        .invoke(
            Input::values(json!({"x": 5, "pairs": [[1, 2], [30, 4]]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.values["sum"], json!({"sum": 15}));
    // `sums` appends each task's content.
    assert_eq!(out.values["sums"], json!([{"sum": 3}, {"sum": 34}]));
    // The tool's own writes are applied too.
    assert_eq!(out.values["log"], json!(["5+10", "1+2", "30+4"]));
}

#[tokio::test]
async fn a_tool_error_fails_the_node_with_the_tools_code() {
    let text = "graph g {\n  state { r: json? }\n  node call: tool { tool: quota, output: r }\n  START -> call -> END\n}\n";
    let g = compile_with(text, &registry());
    match g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
    {
        Err(RunError::NodeFailed {
            code,
            message,
            node,
            ..
        }) => {
            assert_eq!(node, "call");
            assert_eq!(code.as_deref(), Some("QUOTA"));
            assert_eq!(message, "tool node \"call\": quota: no calls left today");
        }
        other => panic!("not a node failure: {other:?}"),
    }
}

#[tokio::test]
async fn arguments_are_checked_against_the_tools_schema() {
    let text = "graph g {\n  state { r: json? }\n  node call: tool { tool: add, args: { a: 1, b: \"two\" }, output: r }\n  START -> call -> END\n}\n";
    let g = compile_with(text, &registry());
    match g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
    {
        Err(RunError::NodeFailed { code, message, .. }) => {
            assert_eq!(code.as_deref(), Some("INVALID_ARGUMENTS"), "{message}");
            assert!(message.contains("invalid arguments for `add`"), "{message}");
        }
        other => panic!("not a node failure: {other:?}"),
    }
}

#[test]
fn the_check_knows_the_registered_tools_and_the_channels() {
    let ds = diagnostics(
        "graph g {\n  state { r: json? }\n  node call: tool { tool: ad, output: r }\n  START -> call -> END\n}\n",
    );
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert!(ds[0].is(codes::UNKNOWN_TOOL), "{ds:#?}");
    assert_eq!(ds[0].message, "tool `ad` is not registered");
    assert_eq!(ds[0].help.as_deref(), Some("did you mean `add`?"));

    let ds = diagnostics(
        "graph g {\n  state { r: json? }\n  node call: tool { tool: \"get-sun\", output: result }\n  START -> call -> END\n}\n",
    );
    let found: Vec<&str> = ds.iter().map(|d| d.code).collect();
    assert_eq!(
        found,
        [codes::UNKNOWN_TOOL.id, codes::UNKNOWN_CHANNEL.id],
        "{ds:#?}"
    );

    let ds = diagnostics(
        "graph g {\n  state { r: json? }\n  node call: tool { tool: 3, args: { a: nope }, output: \"r\" + \"\" }\n  START -> call -> END\n}\n",
    );
    let found: Vec<&str> = ds.iter().map(|d| d.code).collect();
    assert_eq!(
        found,
        [
            codes::BAD_ENTRY.id,
            codes::UNKNOWN_NAME.id,
            codes::BAD_ENTRY.id
        ],
        "{ds:#?}"
    );
}

#[test]
fn without_the_agent_kinds_the_check_says_how_to_get_them() {
    let text = "graph g {\n  state { r: json? }\n  node call: tool { tool: add, output: r }\n  START -> call -> END\n}\n";
    let ds = crate::js_nodes::project("tools.ag", text).check(&Registry::default());
    assert!(ds[0].is(codes::BAD_KIND), "{ds:#?}");
    let help = ds[0].help.as_deref().unwrap_or_default();
    assert!(help.contains("agentgraph_dsl::agents::register"), "{help}");
}

/// Counts lookups; knows one tool.
struct Counting {
    lookups: Arc<AtomicUsize>,
}

impl ToolResolver for Counting {
    fn resolver(&self, name: &str, b: &NodeBuild<'_>) -> Result<ResolveTool, String> {
        if b.name() == "refused" {
            return Err("not for this node".into());
        }
        let lookups = self.lookups.clone();
        let name = name.to_string();
        Ok(Arc::new(move || {
            lookups.fetch_add(1, Ordering::SeqCst);
            let found = if name == "add" {
                Ok(Arc::new(Add { name: "add" }) as Arc<dyn Tool>)
            } else {
                Err(ToolLookupError::NotFound {
                    name: name.clone(),
                    available: vec!["add".into()],
                })
            };
            Box::pin(async move { found })
        }))
    }
}

#[tokio::test]
async fn the_tool_is_resolved_once_at_the_first_run() {
    let lookups = Arc::new(AtomicUsize::new(0));
    let mut reg = Registry::default();
    for name in ["add", "gone"] {
        reg.register_tool(name, "a tool the resolver knows of");
    }
    register_tool_kind(
        &mut reg,
        Arc::new(Counting {
            lookups: lookups.clone(),
        }),
    );
    let g = compile_with(SUMS.replace("\"get-sum\"", "add").as_str(), &reg);
    assert_eq!(
        lookups.load(Ordering::SeqCst),
        0,
        "nothing is looked up at build"
    );
    for _ in 0..2 {
        g.invoke(
            Input::values(json!({"x": 1, "pairs": [[1, 2], [3, 4], [5, 6]]})),
            RunConfig::default(),
        )
        .await
        .unwrap();
    }
    assert_eq!(lookups.load(Ordering::SeqCst), 2, "once per node");

    // A tool the resolver does not find: the node fails, naming what there is.
    let text = "graph g {\n  state { r: json? }\n  node call: tool { tool: gone, output: r }\n  START -> call -> END\n}\n";
    let g = compile_with(text, &reg);
    match g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
    {
        Err(RunError::NodeFailed { code, message, .. }) => {
            assert_eq!(code.as_deref(), Some("TOOL_NOT_FOUND"));
            assert_eq!(
                message,
                "tool node \"call\": tool `gone` is not available (tools: add)"
            );
        }
        other => panic!("not a node failure: {other:?}"),
    }
    // A resolver may refuse a node when it is built.
    let text = "graph g {\n  state { r: json? }\n  node refused: tool { tool: add, output: r }\n  START -> refused -> END\n}\n";
    let Err(ds) = crate::js_nodes::project("tools.ag", text).compile(&reg) else {
        panic!("the node is refused")
    };
    assert!(ds[0].is(codes::NODE_NOT_BUILT), "{ds:#?}");
    assert!(ds[0].message.contains("not for this node"), "{ds:#?}");
}

/// A graph whose `tool` node calls `get-sum` of server-everything declared by `server` (the
/// inside of an `mcp { … }` block).
fn mcp_sum_graph(server: &str) -> String {
    format!(
        r#"graph sums {{
  state {{ a: int = 0, b: int = 0, total: json? }}
  input {{ a, b }}
  output {{ total }}
  tools everything = mcp {{ {server}, only: ["get-sum"] }}
  node add: tool {{ tool: "get-sum", args: {{ a: a, b: b }}, output: total }}
  START -> add -> END
}}
"#
    )
}

/// Checks, compiles and runs `text` with no registered tools (a registered `get-sum` would
/// shadow the server's): 19 + 23 comes back from the server; a name the server does not offer
/// is reported with what it offers.
async fn sums_through_mcp(text: &str) {
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, ToolMap::new());
    let found = crate::js_nodes::project("tools.ag", text).check(&reg);
    assert!(found.is_empty(), "{found:?}");
    let g = compile_with(text, &reg);
    let out = g
        .invoke(
            Input::values(json!({"a": 19, "b": 23})),
            RunConfig::default(),
        )
        .await
        .expect("the run succeeds");
    let total = out.values["total"].as_str().unwrap_or_default().to_string();
    assert!(total.contains("42"), "{}", out.values);
    let bad = text.replace(r#"tool: "get-sum""#, r#"tool: "get-product""#);
    let g = compile_with(&bad, &reg);
    let e = g
        .invoke(Input::values(json!({"a": 1, "b": 2})), RunConfig::default())
        .await
        .expect_err("no such tool");
    let shown = e.to_string();
    assert!(
        shown.contains("get-product") && shown.contains("get-sum"),
        "{shown}"
    );
}

/// A `tool` node calling a tool of a real MCP server (`@modelcontextprotocol/server-everything`,
/// `scripts/mcp-servers install`) over stdio, named as a string since `get-sum` is not an
/// identifier; the check accepts the name because the graph declares an MCP set.
#[tokio::test]
async fn a_tool_node_calls_an_mcp_servers_tool() {
    let Some(bin) = agentgraph_test_support::require_mcp_servers() else {
        return;
    };
    let server = bin.join("mcp-server-everything");
    let text = mcp_sum_graph(&format!(
        r#"command: "{}", args: ["stdio"]"#,
        server.display()
    ));
    sums_through_mcp(&text).await;
}

/// The same over streamable HTTP (`url:`).
#[tokio::test]
async fn a_tool_node_calls_an_mcp_tool_over_streamable_http() {
    let Some(bin) = agentgraph_test_support::require_mcp_servers() else {
        return;
    };
    let server = agentgraph_test_support::mcp::everything_http(&bin);
    let text = mcp_sum_graph(&format!(r#"url: "{}""#, server.url));
    sums_through_mcp(&text).await;
}
