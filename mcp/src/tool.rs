//! An MCP server's tools as agentgraph [`Tool`]s.

use crate::config::{ServerConfig, Transport};
use crate::error::McpError;
use crate::pool::Pool;
use crate::schema::sanitize;
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// One tool of an MCP server.
pub struct McpTool {
    pool: Arc<Pool>,
    transport: Transport,
    name: String,
    description: String,
    schema: Value,
    limit: Duration,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.transport.to_string())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Connects to the server (or reuses the pool's connection), lists its tools and keeps those
/// the configuration picks. `taken` holds the names already in use with what owns them ("a
/// registered tool"); a server tool with one of those names is refused ([`McpError::Shadowed`]).
pub async fn toolset(
    pool: &Arc<Pool>,
    config: &ServerConfig,
    taken: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Vec<Arc<dyn Tool>>, McpError> {
    let listed = pool.list_tools(&config.transport).await?;
    let server = config.transport.to_string();
    for wanted in &config.only {
        if !listed.iter().any(|t| &t.name == wanted) {
            return Err(McpError::UnknownTool {
                server,
                name: wanted.clone(),
                offered: listed
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for t in listed.into_iter().filter(|t| config.keeps(&t.name)) {
        if let Some(existing) = taken(&t.name) {
            return Err(McpError::Shadowed {
                server,
                name: t.name,
                existing,
            });
        }
        tools.push(Arc::new(McpTool {
            pool: pool.clone(),
            transport: config.transport.clone(),
            description: if t.description.is_empty() {
                format!("Tool `{}` of MCP server `{server}`.", t.name)
            } else {
                t.description
            },
            schema: sanitize(&t.input_schema),
            name: t.name,
            limit: config.call_timeout,
        }));
    }
    Ok(tools)
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let cancel = ctx.task().cancellation().clone();
        let result = self
            .pool
            .call(&self.transport, &self.name, args, self.limit, &cancel)
            .await
            .map_err(|e| ToolError::new(e.code(), e.to_string()))?;
        result_output(&result)
    }
}

/// A `tools/call` result as a tool message: text parts joined; structured content as JSON when
/// there is no text; images, audio and resources summarised in a line each. `isError: true`
/// becomes a tool error (code `MCP_TOOL_ERROR`) with the same text, so the model can act on it.
pub fn result_output(result: &Value) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str().unwrap_or("") {
            "text" => parts.push(block["text"].as_str().unwrap_or("").to_string()),
            kind @ ("image" | "audio") => parts.push(format!(
                "[{kind}: {}, {} bytes of base64]",
                block["mimeType"].as_str().unwrap_or("unknown type"),
                block["data"].as_str().map(str::len).unwrap_or(0)
            )),
            "resource" => {
                let r = &block["resource"];
                let uri = r["uri"].as_str().unwrap_or("?");
                match r["text"].as_str() {
                    Some(text) => parts.push(format!("[resource {uri}]\n{text}")),
                    None => parts.push(format!(
                        "[resource {uri}: {}]",
                        r["mimeType"].as_str().unwrap_or("binary")
                    )),
                }
            }
            "resource_link" => parts.push(format!(
                "[resource link {}: {}]",
                block["uri"].as_str().unwrap_or("?"),
                block["name"].as_str().unwrap_or("")
            )),
            other => parts.push(format!("[{other} content]")),
        }
    }
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if is_error {
        let text = if parts.is_empty() {
            structured
                .map(Value::to_string)
                .unwrap_or_else(|| "the tool failed".into())
        } else {
            parts.join("\n")
        };
        return Err(ToolError::new("MCP_TOOL_ERROR", text));
    }
    let content = match (parts.is_empty(), structured) {
        (true, Some(s)) => s.clone(),
        (true, None) => json!(""),
        (false, _) => Value::String(parts.join("\n")),
    };
    Ok(ToolOutput {
        content,
        writes: Vec::new(),
    })
}

impl From<McpError> for ToolError {
    fn from(e: McpError) -> Self {
        ToolError::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_tool_messages() {
        let r = json!({"content": [{"type": "text", "text": "3"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://1", "text": "hello"}}]});
        let out = result_output(&r).expect("ok");
        assert_eq!(
            out.content,
            json!("3\n[image: image/png, 4 bytes of base64]\n[resource test://1]\nhello")
        );
        let r = json!({"content": [], "structuredContent": {"sum": 3}});
        assert_eq!(result_output(&r).expect("ok").content, json!({"sum": 3}));
        let r = json!({"content": [{"type": "text", "text": "no such file"}], "isError": true});
        let e = result_output(&r).expect_err("error");
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("MCP_TOOL_ERROR", "no such file")
        );
    }
}
