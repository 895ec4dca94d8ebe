//! `fetch_url`: a GET through the `http_request` tool (its address policy: no private,
//! loopback or metadata addresses). Per-domain approval is not built yet.

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};
use std::sync::Arc;

/// Reads a public web page or API answer.
pub struct FetchUrlTool {
    /// The `http_request` tool it goes through.
    pub http: Arc<dyn Tool>,
}

#[async_trait::async_trait]
impl Tool for FetchUrlTool {
    fn name(&self) -> &str {
        "fetch_url"
    }
    fn description(&self) -> &str {
        "Read a public http(s) URL (documentation, an API's answer): status and body, long \
         bodies cut. Private and loopback addresses are refused."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}},
               "required": ["url"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.http
            .call(json!({"url": args["url"], "method": "GET"}), ctx)
            .await
    }
}
