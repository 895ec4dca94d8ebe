//! `fetch_url`: a GET through the `http_request` tool (its address policy: no private,
//! loopback or metadata addresses), once the user approved the host for this thread
//! ([`gate_url`]; the channel is the tool's setting `domains_channel`, default
//! `approved_domains`). An approval is remembered only when the fetch succeeds.

use agentgraph_agents::orchestration::{gate_url, APPROVED_DOMAINS};
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
         bodies cut. The user approves each new host once; private and loopback addresses are \
         refused."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}},
               "required": ["url"], "additionalProperties": false})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let url = args["url"].as_str().unwrap_or_default();
        let channel = ctx.settings()["domains_channel"]
            .as_str()
            .unwrap_or(APPROVED_DOMAINS)
            .to_string();
        let remember = gate_url(ctx, url, &channel)?;
        let mut out = self
            .http
            .call(json!({"url": url, "method": "GET"}), ctx)
            .await?;
        if let Some((channel, hosts)) = remember {
            out = out.write(channel, hosts);
        }
        Ok(out)
    }
}
