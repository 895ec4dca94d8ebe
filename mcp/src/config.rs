//! How to reach an MCP server, and which of its tools to use.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// How the server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// A child process speaking MCP on its stdin/stdout (`command` + `args`, extra `env`,
    /// optional working directory).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// The working directory (default: the current one).
        cwd: Option<String>,
    },
    /// Streamable HTTP at `url`, with extra request headers (`Authorization`, …).
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// One MCP server as a graph declares it.
///
/// Two equal configurations share one connection ([`crate::Pool`]); the tool filters and the
/// call timeout are not part of the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach it.
    pub transport: Transport,
    /// Only these tools (empty: all).
    pub only: Vec<String>,
    /// Not these tools.
    pub except: Vec<String>,
    /// The longest a call may take (default [`DEFAULT_CALL_TIMEOUT`]).
    pub call_timeout: Duration,
}

/// How long a tool call may take unless the configuration says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

impl ServerConfig {
    /// A server started as a child process.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ServerConfig::new(Transport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// A server reached over streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        ServerConfig::new(Transport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
        })
    }

    /// A server reached through `transport`, all its tools, the default time limit.
    pub fn new(transport: Transport) -> Self {
        ServerConfig {
            transport,
            only: Vec::new(),
            except: Vec::new(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// Adds an environment variable (stdio) or a header (HTTP).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.transport {
            Transport::Stdio { env, .. } => env.insert(key.into(), value.into()),
            Transport::Http { headers, .. } => headers.insert(key.into(), value.into()),
        };
        self
    }

    /// Keeps only these tools.
    pub fn only(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.only = names.into_iter().map(Into::into).collect();
        self
    }

    /// Leaves these tools out.
    pub fn except(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.except = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the per-call time limit.
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = limit;
        self
    }

    /// Whether the filters keep the tool `name`.
    pub fn keeps(&self, name: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|n| n == name))
            && !self.except.iter().any(|n| n == name)
    }
}

/// The server as one line for messages: the command line or the URL. Environment values and
/// header values are never shown (they hold tokens).
impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio { command, args, .. } => {
                write!(f, "{command}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                Ok(())
            }
            Transport::Http { url, .. } => write!(f, "{url}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_display() {
        let c = ServerConfig::stdio("npx", ["-y", "server"])
            .only(["a", "b"])
            .except(["b"]);
        assert!(c.keeps("a"));
        assert!(!c.keeps("b"));
        assert!(!c.keeps("c"));
        assert_eq!(c.transport.to_string(), "npx -y server");
        let h = ServerConfig::http("http://127.0.0.1:1/mcp").with("Authorization", "Bearer secret");
        assert_eq!(h.transport.to_string(), "http://127.0.0.1:1/mcp");
        assert!(!format!("{}", h.transport).contains("secret"));
        assert!(h.keeps("anything"));
    }
}
