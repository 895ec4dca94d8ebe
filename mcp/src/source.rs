//! An MCP server as a [`ToolSource`]: its tools are listed when a node first needs them.

use crate::config::ServerConfig;
use crate::pool::Pool;
use crate::tool::toolset;
use agentgraph_agents::tools::{Tool, ToolError, ToolSource};
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The tools of one configured MCP server, through a shared [`Pool`].
pub struct McpSource {
    pool: Arc<Pool>,
    config: ServerConfig,
    registered: Arc<BTreeSet<String>>,
}

impl McpSource {
    /// The server `config` through `pool`; a server tool named like one of `registered` (the
    /// application's tools) is refused.
    pub fn new(pool: Arc<Pool>, config: ServerConfig, registered: Arc<BTreeSet<String>>) -> Self {
        McpSource {
            pool,
            config,
            registered,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }
}

#[async_trait]
impl ToolSource for McpSource {
    fn label(&self) -> String {
        format!("MCP server `{}`", self.config.transport)
    }

    async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let registered = self.registered.clone();
        let taken = move |name: &str| {
            registered
                .contains(name)
                .then(|| "a registered tool".to_string())
        };
        Ok(toolset(&self.pool, &self.config, &taken).await?)
    }
}
