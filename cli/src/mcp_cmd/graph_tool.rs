//! A graph as an MCP tool: its input channels as the input schema, a call as a run on a new
//! thread, its output channels as the result; and `resume`, which answers a thread's interrupt.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::{CompiledGraph, Resume, RunConfig, RunError, RunStatus, ValueType};
use agentgraph_server::{open_run, OpenError, Opening};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The JSON schema of values of a channel type.
pub fn type_schema(ty: &ValueType) -> Value {
    match ty {
        ValueType::String => json!({"type": "string"}),
        ValueType::Int => json!({"type": "integer"}),
        ValueType::Float => json!({"type": "number"}),
        ValueType::Bool => json!({"type": "boolean"}),
        ValueType::Json => json!({}),
        ValueType::Messages => json!({
            "type": "array",
            "items": {
                "type": "object",
                "description": "a chat message: `type` (human, ai, system, tool) or `role`, and `content`",
                "properties": {
                    "type": {"type": "string"},
                    "role": {"type": "string"},
                    "content": {}
                }
            }
        }),
        ValueType::List(item) => json!({"type": "array", "items": type_schema(item)}),
        ValueType::Map(item) => {
            json!({"type": "object", "additionalProperties": type_schema(item)})
        }
        ValueType::Optional(inner) => {
            let mut schema = type_schema(inner);
            if let Some(Value::String(t)) = schema.get("type").cloned() {
                schema["type"] = json!([t, "null"]);
            }
            schema
        }
    }
}

/// The schema of a graph's channels `keys`: one property each (its type and a description
/// naming the channel type); for `input`, each default, no other property, and as required
/// the channels a run cannot start without (neither optional nor defaulted).
fn channels_schema(graph: &CompiledGraph, keys: &[&str], input: bool) -> Value {
    let mut properties = Map::new();
    let mut needed = Vec::new();
    for key in keys {
        let Some(spec) = graph.schema().channel(key) else {
            continue;
        };
        let mut p = type_schema(&spec.ty);
        p["description"] = json!(format!("channel `{key}` ({})", spec.ty));
        if let Some(d) = spec.default.as_ref().filter(|_| input) {
            p["default"] = d.clone();
        }
        if spec.default.is_none() && !matches!(spec.ty, ValueType::Optional(_)) {
            needed.push(json!(key));
        }
        properties.insert(key.to_string(), p);
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if input {
        schema["additionalProperties"] = json!(false);
        if !needed.is_empty() {
            schema["required"] = Value::Array(needed);
        }
    }
    schema
}

/// The input schema of a graph: its input channels.
pub fn input_schema(graph: &CompiledGraph) -> Value {
    channels_schema(graph, &graph.schema().input_keys(), true)
}

/// The schema of a graph's results: its output channels, none required (a channel without a
/// value is left out).
pub fn output_schema(graph: &CompiledGraph) -> Value {
    channels_schema(graph, &graph.schema().output_keys(), false)
}

/// The leading `#` comment of a graph file, without the lines that show commands
/// (`agentgraph run …`).
pub fn leading_comment(source: &str) -> String {
    source
        .lines()
        .map(str::trim)
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .filter(|l| !l.starts_with("agentgraph "))
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}

/// A graph served as a tool: each call runs it on a new thread.
pub struct GraphTool {
    name: String,
    description: String,
    graph: CompiledGraph,
}

impl GraphTool {
    /// The tool `name` running `graph`; `comment` is the file's leading comment.
    pub fn new(name: String, graph: CompiledGraph, comment: &str) -> Self {
        let outputs = graph.schema().output_keys().join(", ");
        let what = if comment.is_empty() {
            format!("Runs the agentgraph graph `{}`.", graph.name())
        } else {
            comment.to_string()
        };
        let description = format!(
            "{what} Each call runs the graph on a new thread and returns its output channels \
             ({outputs}). When it stops at an interrupt, the error names the thread: answer \
             with the `resume` tool."
        );
        GraphTool {
            name,
            description,
            graph,
        }
    }

    /// The graph.
    pub fn graph(&self) -> &CompiledGraph {
        &self.graph
    }
}

#[async_trait]
impl Tool for GraphTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        input_schema(&self.graph)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let thread = new_thread_id();
        run(&self.name, &self.graph, Opening::Input(args), thread, ctx).await
    }
}

fn new_thread_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("mcp-{}", &id[..12])
}

/// Opens and runs `graph` on `thread`; the outputs, or an error naming the thread when the
/// run stopped at an interrupt.
async fn run(
    tool: &str,
    graph: &CompiledGraph,
    opening: Opening,
    thread: String,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut config = RunConfig::thread(thread.clone());
    config.cancel = ctx.cancellation().clone();
    let opened = open_run(graph, opening, config)
        .await
        .map_err(|e| match e {
            OpenError::Input(e) | OpenError::Run(e) => run_error(&e),
            other => ToolError::new("CANNOT_RESUME", other.to_string()),
        })?;
    let out = graph
        .invoke(opened.input, opened.config)
        .await
        .map_err(|e| run_error(&e))?;
    match out.status {
        RunStatus::Done => Ok(ToolOutput {
            content: out.values,
            writes: Vec::new(),
        }),
        RunStatus::Interrupted { interrupts, next } => {
            let asks = if interrupts.is_empty() {
                format!("before {} (a breakpoint)", next.join(", "))
            } else {
                let list: Vec<Value> = interrupts
                    .iter()
                    .map(|i| json!({"id": i.id, "node": i.node, "value": i.value}))
                    .collect();
                format!("waiting for an answer to {}", Value::Array(list))
            };
            Err(ToolError::new(
                "INTERRUPTED",
                format!(
                    "graph `{tool}` stopped on thread `{thread}`, {asks}. Answer with the \
                     `resume` tool: {}",
                    json!({"graph": tool, "thread": thread, "value": "<your answer>"})
                ),
            ))
        }
    }
}

fn run_error(e: &RunError) -> ToolError {
    let code = match e.kind() {
        agentgraph_runtime::RunErrorKind::Caller => "INVALID_INPUT",
        agentgraph_runtime::RunErrorKind::Conflict => "THREAD_CONFLICT",
        agentgraph_runtime::RunErrorKind::Cancelled => "CANCELLED",
        agentgraph_runtime::RunErrorKind::Failed => "RUN_FAILED",
    };
    ToolError::new(code, e.to_string())
}

/// `resume {graph, thread, value}`: answers the interrupt a graph tool stopped at (or
/// continues a thread a breakpoint or a failure stopped), and returns what the graph tool
/// would have.
pub struct ResumeTool {
    graphs: BTreeMap<String, Arc<GraphTool>>,
}

/// The name of the resume tool.
pub const RESUME: &str = "resume";

impl ResumeTool {
    /// Resumes threads of these graph tools.
    pub fn new(graphs: &[Arc<GraphTool>]) -> Self {
        ResumeTool {
            graphs: graphs.iter().map(|g| (g.name.clone(), g.clone())).collect(),
        }
    }
}

#[async_trait]
impl Tool for ResumeTool {
    fn name(&self) -> &str {
        RESUME
    }

    fn description(&self) -> &str {
        "Continues a graph's thread that stopped at an interrupt: `value` answers its pending \
         interrupt (with several pending, `by_id` maps each interrupt id to its answer). \
         Returns the graph's output channels, or stops again with an error naming the thread."
    }

    fn input_schema(&self) -> Value {
        let names: Vec<&String> = self.graphs.keys().collect();
        json!({
            "type": "object",
            "properties": {
                "graph": {"type": "string", "enum": names, "description": "the graph tool that stopped"},
                "thread": {"type": "string", "description": "the thread named in its error"},
                "value": {"description": "the answer to the pending interrupt"},
                "by_id": {"type": "object", "description": "answers by interrupt id, when several are pending"}
            },
            "required": ["graph", "thread"],
            "additionalProperties": false
        })
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args["graph"].as_str().unwrap_or_default();
        let tool = self
            .graphs
            .get(name)
            .ok_or_else(|| ToolError::new("INVALID_INPUT", format!("no graph tool `{name}`")))?;
        let thread = args["thread"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        if !agentgraph_runtime::is_valid_thread_id(&thread) {
            return Err(ToolError::new(
                "INVALID_INPUT",
                agentgraph_runtime::THREAD_ID_RULE,
            ));
        }
        let answer = match args.get("by_id").and_then(Value::as_object) {
            Some(map) => Resume::ById(map.clone().into_iter().collect()),
            None => Resume::Value(args.get("value").cloned().unwrap_or(Value::Null)),
        };
        run(
            &tool.name,
            &tool.graph,
            Opening::Resume(answer),
            thread,
            ctx,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_types_map_to_json_schema() {
        let ty = |s: &str| s.parse::<ValueType>().unwrap_or(ValueType::Json);
        assert_eq!(type_schema(&ty("int")), json!({"type": "integer"}));
        assert_eq!(
            type_schema(&ty("string?")),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            type_schema(&ty("list<float>")),
            json!({"type": "array", "items": {"type": "number"}})
        );
        assert_eq!(
            type_schema(&ty("map<bool>")),
            json!({"type": "object", "additionalProperties": {"type": "boolean"}})
        );
        assert_eq!(type_schema(&ty("json?")), json!({}));
    }

    #[test]
    fn the_leading_comment_without_command_lines() {
        let src = "# Adds one.\n# agentgraph run x.ag\n#   and again\ngraph x {}\n# later";
        assert_eq!(leading_comment(src), "Adds one. and again");
        assert_eq!(leading_comment("graph x {}"), "");
    }
}
