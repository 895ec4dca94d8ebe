//! Tools known only at run time: a [`ToolSource`] (an MCP server, say) lists its tools when a
//! node first needs them, and [`ListedTools`] keeps that list for the node's later calls.

use super::{Tool, ToolError};
use agentgraph_runtime::NodeError;
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// Where tools come from when they are not compiled in: listed at first use.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// What the source is, for messages (`MCP server "npx -y …"`).
    fn label(&self) -> String;

    /// Lists the tools. An error (the server cannot be reached, a tool name is taken), whose
    /// message names the source, is reported to the caller and the next use lists again.
    async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, ToolError>;
}

/// The tools of some sources, listed once — at the first use that succeeds — and kept.
///
/// Clones share the list. Names must be unique across the sources and must not shadow the
/// node's other tools (`fixed`): a clash fails the listing with `TOOL_NAME_TAKEN`, since a
/// model calling the name could not be told which tool it meant.
#[derive(Clone, Default)]
pub struct ListedTools {
    sources: Vec<Arc<dyn ToolSource>>,
    fixed: Arc<BTreeSet<String>>,
    cell: Arc<OnceCell<Vec<Arc<dyn Tool>>>>,
}

impl std::fmt::Debug for ListedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListedTools")
            .field(
                "sources",
                &self.sources.iter().map(|s| s.label()).collect::<Vec<_>>(),
            )
            .field("listed", &self.cell.get().map(Vec::len))
            .finish()
    }
}

impl ListedTools {
    /// Tools of `sources`, beside a node's `fixed` tool names.
    pub fn new(
        sources: impl IntoIterator<Item = Arc<dyn ToolSource>>,
        fixed: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ListedTools {
            sources: sources.into_iter().collect(),
            fixed: Arc::new(fixed.into_iter().map(Into::into).collect()),
            cell: Arc::default(),
        }
    }

    /// Whether there is no source.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The sources' tools, listed now unless a previous use listed them.
    pub async fn get(&self) -> Result<&[Arc<dyn Tool>], ToolError> {
        self.cell
            .get_or_try_init(|| self.list_all())
            .await
            .map(Vec::as_slice)
    }

    /// [`ListedTools::get`] for node `node`: a failure fails the node (fatal, with the
    /// listing's code).
    pub async fn for_node(&self, node: &str) -> Result<&[Arc<dyn Tool>], NodeError> {
        self.get().await.map_err(|e| {
            NodeError::fatal(format!("tools of node `{node}`: {}", e.message)).with_code(e.code)
        })
    }

    async fn list_all(&self) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let mut owners: std::collections::BTreeMap<String, String> = self
            .fixed
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    "a tool registered in the application".to_string(),
                )
            })
            .collect();
        let mut all = Vec::new();
        for source in &self.sources {
            let label = source.label();
            let tools = source.list().await?;
            for t in tools {
                if let Some(owner) = owners.get(t.name()) {
                    return Err(ToolError::new(
                        "TOOL_NAME_TAKEN",
                        format!(
                            "{label} offers a tool named `{}`, but that name is already {owner}; \
                             leave one out (`except: [\"{}\"]`)",
                            t.name(),
                            t.name()
                        ),
                    ));
                }
                owners.insert(t.name().to_string(), format!("a tool of {label}"));
                all.push(t);
            }
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolContext, ToolOutput};
    use serde_json::{json, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Named(String);

    #[async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            &self.0
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0.clone()))
        }
    }

    /// Fails its first `fail` listings, then offers `names`.
    struct Source {
        names: Vec<&'static str>,
        fail: usize,
        calls: AtomicUsize,
    }

    #[async_trait]
    impl ToolSource for Source {
        fn label(&self) -> String {
            format!("source {:?}", self.names)
        }
        async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < self.fail {
                return Err(ToolError::new("DOWN", "not reachable"));
            }
            Ok(self
                .names
                .iter()
                .map(|n| Arc::new(Named(n.to_string())) as Arc<dyn Tool>)
                .collect())
        }
    }

    fn source(names: Vec<&'static str>, fail: usize) -> Arc<Source> {
        Arc::new(Source {
            names,
            fail,
            calls: AtomicUsize::new(0),
        })
    }

    #[tokio::test]
    async fn a_failed_listing_is_retried_and_a_success_is_kept() {
        let s = source(vec!["a", "b"], 1);
        let listed = ListedTools::new([s.clone() as Arc<dyn ToolSource>], ["fixed"]);
        let Err(e) = listed.get().await else {
            panic!("the first listing fails")
        };
        assert_eq!(e.code, "DOWN");
        let names: Vec<&str> = listed
            .get()
            .await
            .expect("ok")
            .iter()
            .map(|t| t.name())
            .collect();
        assert_eq!(names, ["a", "b"]);
        listed.clone().get().await.expect("kept");
        assert_eq!(
            s.calls.load(Ordering::SeqCst),
            2,
            "listed once after the success"
        );
    }

    #[tokio::test]
    async fn names_may_not_clash() {
        let fixed = ListedTools::new([source(vec!["calc"], 0) as Arc<dyn ToolSource>], ["calc"]);
        let Err(e) = fixed.get().await else {
            panic!("calc shadows a registered tool")
        };
        assert_eq!(e.code, "TOOL_NAME_TAKEN");
        assert!(e.message.contains("registered"), "{}", e.message);
        let two = ListedTools::new(
            [
                source(vec!["x", "y"], 0) as Arc<dyn ToolSource>,
                source(vec!["y"], 0) as Arc<dyn ToolSource>,
            ],
            Vec::<String>::new(),
        );
        let Err(e) = two.get().await else {
            panic!("two sources offer y")
        };
        assert!(
            e.message.contains("`y`") && e.message.contains("except"),
            "{}",
            e.message
        );
    }
}
