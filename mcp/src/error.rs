//! What can go wrong talking to an MCP server.

use std::time::Duration;

/// An MCP failure. Each message names the server (its command line or URL, never its
/// environment or headers) and says what to check.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The process could not be started or the HTTP endpoint not reached, or the MCP
    /// handshake failed.
    #[error("MCP server `{server}` could not be started or reached: {message}")]
    Connect {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// The connection broke (the process exited, the HTTP session ended).
    #[error(
        "MCP server `{server}` closed the connection: {message}; it is restarted on the next call"
    )]
    Closed {
        /// The server.
        server: String,
        /// Why.
        message: String,
    },
    /// A request failed at the protocol level (an MCP error response).
    #[error("MCP server `{server}` refused `{method}`: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// The request (`tools/list`, `tools/call get-sum`).
        method: String,
        /// The server's message.
        message: String,
    },
    /// A call took longer than its limit.
    #[error("MCP server `{server}`: `{tool}` did not answer within {:.0?}", .limit)]
    Timeout {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The limit.
        limit: Duration,
    },
    /// Two tools would answer to one name.
    #[error("MCP server `{server}` offers a tool named `{name}`, which is already {existing}; leave it out with `except: [\"{name}\"]`")]
    Shadowed {
        /// The server.
        server: String,
        /// The tool name.
        name: String,
        /// What already has it ("a registered tool", "a tool of MCP server `…`").
        existing: String,
    },
    /// `only` names a tool the server does not offer.
    #[error("MCP server `{server}` has no tool `{name}` (named in `only`); it offers: {offered}")]
    UnknownTool {
        /// The server.
        server: String,
        /// The missing tool.
        name: String,
        /// What it offers, comma-separated.
        offered: String,
    },
    /// The configuration cannot work (an invalid header, an empty command).
    #[error("MCP server `{server}`: {message}")]
    Config {
        /// The server.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The call was cancelled (the run was cancelled).
    #[error("cancelled")]
    Cancelled,
}

impl McpError {
    /// A stable code for tool messages and node errors.
    pub fn code(&self) -> &'static str {
        match self {
            McpError::Connect { .. } => "MCP_CONNECT",
            McpError::Closed { .. } => "MCP_CLOSED",
            McpError::Protocol { .. } => "MCP_PROTOCOL",
            McpError::Timeout { .. } => "MCP_TIMEOUT",
            McpError::Shadowed { .. } => "MCP_SHADOWED",
            McpError::UnknownTool { .. } => "MCP_UNKNOWN_TOOL",
            McpError::Config { .. } => "MCP_CONFIG",
            McpError::Cancelled => "CANCELLED",
        }
    }
}
