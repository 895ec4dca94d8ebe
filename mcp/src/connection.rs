//! One live MCP session: started (a child process or a streamable HTTP session), asked for its
//! tools, called.

use crate::config::Transport;
use crate::error::McpError;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A tool as the server lists it (name, description, input schema as given).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// Its description (empty when none).
    pub description: String,
    /// Its input schema, unchanged.
    pub input_schema: Value,
}

/// A started session.
pub struct Connection {
    server: String,
    service: RunningService<RoleClient, ()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts the process or opens the HTTP session, and does the MCP handshake.
    pub async fn open(transport: &Transport) -> Result<Connection, McpError> {
        let server = transport.to_string();
        let connect_error = |message: String| McpError::Connect {
            server: server.clone(),
            message,
        };
        let service = match transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                if command.trim().is_empty() {
                    return Err(McpError::Config {
                        server,
                        message: "the command is empty".into(),
                    });
                }
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                // The server's log lines go to our stderr, as a child's would.
                let (process, _stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| {
                        let place = match cwd {
                            Some(dir) if !std::path::Path::new(dir).is_dir() => {
                                format!(" (its working directory `{dir}` does not exist)")
                            }
                            _ => String::new(),
                        };
                        connect_error(format!("could not start `{command}`{place}: {e}"))
                    })?;
                ().serve(process)
                    .await
                    .map_err(|e| connect_error(e.to_string()))?
            }
            Transport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| {
                        McpError::Config {
                            server: server.clone(),
                            message: format!("header name `{k}` is not valid: {e}"),
                        }
                    })?;
                    let value = http::HeaderValue::from_str(v).map_err(|e| McpError::Config {
                        server: server.clone(),
                        message: format!("the value of header `{k}` is not valid: {e}"),
                    })?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                ().serve(StreamableHttpClientTransport::from_config(config))
                    .await
                    .map_err(|e| connect_error(e.to_string()))?
            }
        };
        Ok(Connection { server, service })
    }

    /// The server as shown in messages.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Whether the session has ended (the process exited, the transport closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.is_transport_closed()
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, McpError> {
        let tools = self
            .service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| self.service_error("tools/list", e))?;
        Ok(tools
            .into_iter()
            .map(|t| RemoteTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool`; the result as the server sent it (`content`, `structuredContent`,
    /// `isError`), as JSON. Dropping the call (cancel, timeout) tells the server it was
    /// cancelled.
    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let arguments: Option<Map<String, Value>> = match args {
            Value::Object(o) => Some(o),
            Value::Null => None,
            other => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                Some(m)
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let call = self.service.peer().call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(limit, call) => r,
            () = cancel.cancelled() => return Err(McpError::Cancelled),
        };
        let result = result.map_err(|_| McpError::Timeout {
            server: self.server.clone(),
            tool: tool.to_string(),
            limit,
        })?;
        let result = result.map_err(|e| self.service_error(&format!("tools/call {tool}"), e))?;
        serde_json::to_value(&result).map_err(|e| McpError::Protocol {
            server: self.server.clone(),
            method: format!("tools/call {tool}"),
            message: format!("the result could not be read: {e}"),
        })
    }

    /// Ends the session (the child process is stopped).
    pub async fn close(mut self) {
        let _ = self
            .service
            .close_with_timeout(Duration::from_secs(5))
            .await;
    }

    fn service_error(&self, method: &str, e: ServiceError) -> McpError {
        match e {
            ServiceError::McpError(data) => McpError::Protocol {
                server: self.server.clone(),
                method: method.to_string(),
                message: data.message.to_string(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Closed {
                server: self.server.clone(),
                message: e.to_string(),
            },
            ServiceError::Cancelled { .. } => McpError::Cancelled,
            other => McpError::Protocol {
                server: self.server.clone(),
                method: method.to_string(),
                message: other.to_string(),
            },
        }
    }
}
