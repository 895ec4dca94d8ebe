//! agentgraph [`Tool`]s served as an MCP server (rmcp's server side), over stdio or streamable
//! HTTP.
//!
//! A [`ToolServer`] is the set of tools and what each session starts with; every MCP session
//! (the one stdio connection, or each HTTP session) gets a [`Session`] with its own state, a
//! JSON object of channels. A tool added with [`ServedTool::session`] sees that state as its
//! [`ToolContext`] state, and the writes it returns ([`ToolOutput::writes`]) are folded into it
//! by the server's [`SessionWrites`] before the next call of the session, which runs after it
//! (calls of session tools are serialised per session). Other tools see an empty state and
//! run concurrently.
//!
//! Results: text content as a text block; a JSON object as structured content plus its JSON
//! text; a [`ToolError`] as a result with `isError: true` and the error's code and message.
//! Arguments are checked against the tool's input schema first (a mismatch is a tool error
//! the caller can correct). A cancelled request cancels the call's context.
//!
//! Only protocol versions with an `initialize` handshake are offered: later ones have no
//! sessions, and the state lives in the session.
//!
//! [`ToolContext`]: agentgraph_agents::tools::ToolContext
//! [`ToolOutput::writes`]: agentgraph_agents::tools::ToolOutput::writes
//! [`ToolError`]: agentgraph_agents::tools::ToolError

mod handler;
mod transport;

pub use handler::Session;
pub use transport::{serve_http, serve_io, serve_stdio, HTTP_PATH};

use agentgraph_agents::tools::Tool;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The longest tool name handed out by [`tool_name`] (the MCP limit is 128; several clients
/// refuse names longer than 64).
pub const MAX_TOOL_NAME: usize = 64;

/// Why a server could not be assembled or served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Two tools with one name.
    #[error("two tools are named `{0}`; MCP tool names must be unique")]
    DuplicateTool(String),
    /// A name MCP does not allow.
    #[error("`{0}` is not a valid MCP tool name (1 to 128 of A-Z a-z 0-9 _ - .)")]
    InvalidToolName(String),
    /// The session could not start (the handshake failed, the transport closed first).
    #[error("the MCP session could not start: {0}")]
    Start(String),
    /// Listening or serving failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// One tool as the server offers it.
#[derive(Clone)]
pub struct ServedTool {
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// The JSON schema of its structured results (MCP `outputSchema`), if it has one.
    pub output_schema: Option<Value>,
    /// Whether it reads and writes the session's state.
    pub session: bool,
}

impl ServedTool {
    /// A tool that needs no session state.
    pub fn new(tool: Arc<dyn Tool>) -> Self {
        ServedTool {
            tool,
            output_schema: None,
            session: false,
        }
    }

    /// A tool over the session's state.
    pub fn session(tool: Arc<dyn Tool>) -> Self {
        ServedTool {
            session: true,
            ..ServedTool::new(tool)
        }
    }

    /// Declares the schema of its structured results.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

impl std::fmt::Debug for ServedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedTool")
            .field("name", &self.tool.name())
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// How a call's writes change the session's state.
pub trait SessionWrites: Send + Sync + 'static {
    /// Folds `writes` (channel, value), in order, into `state`. Returns notes for the caller,
    /// added to the call's result as text (e.g. that part of the writes could not be applied).
    fn apply(&self, state: &mut Map<String, Value>, writes: Vec<(String, Value)>) -> Vec<String>;
}

/// Each write replaces its channel's value.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplaceWrites;

impl SessionWrites for ReplaceWrites {
    fn apply(&self, state: &mut Map<String, Value>, writes: Vec<(String, Value)>) -> Vec<String> {
        for (channel, value) in writes {
            state.insert(channel, value);
        }
        Vec::new()
    }
}

/// The tools a server offers and what its sessions start with.
pub struct ToolServer {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<ServedTool>,
    pub(crate) initial_state: Map<String, Value>,
    pub(crate) writes: Arc<dyn SessionWrites>,
}

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl ToolServer {
    /// A server without tools, named `name` (`version`) in the handshake; sessions start
    /// with an empty state and writes replace values ([`ReplaceWrites`]).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ToolServer {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: Vec::new(),
            initial_state: Map::new(),
            writes: Arc::new(ReplaceWrites),
        }
    }

    /// Instructions sent to clients in the handshake.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The state every new session starts with.
    pub fn initial_state(mut self, state: Map<String, Value>) -> Self {
        self.initial_state = state;
        self
    }

    /// How writes change a session's state.
    pub fn writes(mut self, writes: Arc<dyn SessionWrites>) -> Self {
        self.writes = writes;
        self
    }

    /// Adds a tool; its name must be a valid MCP tool name not taken yet.
    pub fn add(&mut self, tool: ServedTool) -> Result<(), ServeError> {
        let name = tool.tool.name();
        if !is_tool_name(name) {
            return Err(ServeError::InvalidToolName(name.to_string()));
        }
        if self.has_tool(name) {
            return Err(ServeError::DuplicateTool(name.to_string()));
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Whether a tool has this name.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.tool.name() == name)
    }

    /// The tools' names, in the order they were added.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.tool.name()).collect()
    }

    pub(crate) fn find(&self, name: &str) -> Option<&ServedTool> {
        self.tools.iter().find(|t| t.tool.name() == name)
    }
}

/// Whether MCP accepts `name` as a tool name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
pub fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `raw` made a valid tool name: other characters become `_`, at most [`MAX_TOOL_NAME`]
/// characters, `tool` when nothing is left.
pub fn tool_name(raw: &str) -> String {
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect();
    if name.is_empty() {
        "tool".to_string()
    } else {
        name
    }
}

/// Names not taken yet: `name`, else `name_2`, `name_3`, … (within [`MAX_TOOL_NAME`]).
pub fn unique_name(name: &str, taken: &BTreeSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_string();
    }
    (2..)
        .map(|i| {
            let suffix = format!("_{i}");
            let keep = MAX_TOOL_NAME.saturating_sub(suffix.len());
            format!("{}{suffix}", name.chars().take(keep).collect::<String>())
        })
        .find(|n| !taken.contains(n))
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_made_unique() {
        assert_eq!(tool_name("my graph/v2"), "my_graph_v2");
        assert_eq!(tool_name("  "), "tool");
        assert_eq!(tool_name(&"x".repeat(80)).len(), 64);
        assert!(is_tool_name("get-sum.v1_2"));
        assert!(!is_tool_name("a b"));
        assert!(!is_tool_name(""));
        let taken: BTreeSet<String> = ["echo".to_string(), "echo_2".to_string()].into();
        assert_eq!(unique_name("echo", &taken), "echo_3");
        assert_eq!(unique_name("other", &taken), "other");
    }
}
