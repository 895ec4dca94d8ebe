//! One MCP session: rmcp's [`ServerHandler`] over a [`ToolServer`], with the session's state.

use super::{ServedTool, ToolServer};
use agentgraph_agents::tools::{validate_args, ToolContext, ToolError, ToolOutput};
use agentgraph_runtime::{StateView, TaskContext};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool as McpToolSpec,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// One client's session: the server's tools and this session's state.
#[derive(Clone)]
pub struct Session {
    server: Arc<ToolServer>,
    state: Arc<Mutex<Map<String, Value>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server.name)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A new session, with the server's initial state.
    pub fn new(server: Arc<ToolServer>) -> Self {
        let state = server.initial_state.clone();
        Session {
            server,
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The session's state now.
    pub async fn state(&self) -> Map<String, Value> {
        self.state.lock().await.clone()
    }

    /// Calls the tool `name` with `args` as this session: the arguments checked, the tool run
    /// (over the session's state for session tools, whose writes are then applied), the
    /// outcome as an MCP result. `None` when there is no such tool.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> Option<CallToolResult> {
        let served = self.server.find(name)?;
        if let Err(problems) = validate_args(&served.tool.input_schema(), &args) {
            let e = ToolError::new("INVALID_INPUT", problems.join("; "));
            return Some(error_result(&e));
        }
        Some(self.run(served, args, cancel).await)
    }

    async fn run(
        &self,
        served: &ServedTool,
        args: Value,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let context = |state: Map<String, Value>| {
            let task = TaskContext::detached(StateView::from_object(Value::Object(state)), None)
                .with_cancellation(cancel.clone());
            ToolContext::new(task)
        };
        if !served.session {
            return result_of(
                served.tool.call(args, &context(Map::new())).await,
                Vec::new(),
            );
        }
        // Calls over the state run one at a time, each seeing the writes of the one before.
        let mut state = self.state.lock().await;
        let outcome = served.tool.call(args, &context(state.clone())).await;
        let notes = match &outcome {
            Ok(out) if !out.writes.is_empty() => {
                self.server.writes.apply(&mut state, out.writes.clone())
            }
            _ => Vec::new(),
        };
        result_of(outcome, notes)
    }
}

/// A tool's spec as MCP lists it.
fn spec(served: &ServedTool) -> McpToolSpec {
    let t = &served.tool;
    let object = |v: Value| match v {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let mut input = object(t.input_schema());
    // MCP requires an object schema at the top.
    input
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let mut tool = McpToolSpec::new(t.name().to_string(), t.description().to_string(), input);
    if let Some(out) = &served.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(object(out.clone())));
    }
    tool
}

/// A tool's outcome as an MCP result; `notes` are added as text.
pub(crate) fn result_of(
    outcome: Result<ToolOutput, ToolError>,
    notes: Vec<String>,
) -> CallToolResult {
    let mut result = match outcome {
        Ok(out) => success_result(out.content),
        Err(e) => error_result(&e),
    };
    result
        .content
        .extend(notes.into_iter().map(ContentBlock::text));
    result
}

fn success_result(content: Value) -> CallToolResult {
    match content {
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Value::Object(_) => {
            let text = serde_json::to_string_pretty(&content).unwrap_or_default();
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(content);
            result
        }
        other => CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string_pretty(&other).unwrap_or_default(),
        )]),
    }
}

/// A tool error as a result with `isError: true`: `CODE: message`, and the pending questions
/// of an interrupt, as JSON.
fn error_result(e: &ToolError) -> CallToolResult {
    let mut text = format!("{}: {}", e.code, e.message);
    if !e.interrupts.is_empty() {
        let questions = json!(e.interrupts);
        text.push_str(&format!("\ninterrupts: {questions}"));
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let s = &self.server;
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(s.name.clone(), s.version.clone()))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        if let Some(text) = &s.instructions {
            config = config.with_instructions(text.clone());
        }
        config
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Sessions hold the state; versions without `initialize` have none.
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.server.tools.iter().map(spec).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(json!({}));
        match self.call(&request.name, args, context.ct.clone()).await {
            Some(result) => Ok(result.into()),
            None => Err(ErrorData::invalid_params(
                format!(
                    "no tool `{}`; this server offers: {}",
                    request.name,
                    self.server.tool_names().join(", ")
                ),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_become_results() {
        let r = result_of(Ok(ToolOutput::text("done")), vec!["note".into()]);
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            v["content"],
            json!([{"type": "text", "text": "done"}, {"type": "text", "text": "note"}])
        );
        assert_eq!(v["isError"], json!(false));
        let r = result_of(
            Ok(ToolOutput {
                content: json!({"count": 3}),
                writes: Vec::new(),
            }),
            Vec::new(),
        );
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["structuredContent"], json!({"count": 3}));
        assert_eq!(v["content"][0]["text"], json!("{\n  \"count\": 3\n}"));
        let r = result_of(Err(ToolError::new("NOT_FOUND", "no such node")), Vec::new());
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["isError"], json!(true));
        assert_eq!(v["content"][0]["text"], json!("NOT_FOUND: no such node"));
    }
}
