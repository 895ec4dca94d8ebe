//! Subgraph nodes: run another compiled graph as one node of this one.

use crate::graph::CompiledGraph;
use crate::node::{Node, NodeError, TaskContext};
use crate::update::Update;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Maps the parent task's context to the child's input object.
pub type MapIn = Arc<dyn Fn(&TaskContext) -> Result<Value, NodeError> + Send + Sync>;
/// Maps the child's final state to writes in the parent.
pub type MapOut = Arc<dyn Fn(&Value) -> Result<Vec<(String, Value)>, NodeError> + Send + Sync>;

/// A node that runs `graph` with its own channels, in the namespace `node:task_id` of the same
/// thread. By default the channels the two graphs share by name are passed in, and only the
/// shared channels the child *wrote* come back (its writes, not its whole state, so reducers do
/// not apply twice).
pub struct Subgraph {
    graph: CompiledGraph,
    map_in: Option<MapIn>,
    map_out: Option<MapOut>,
}

impl Subgraph {
    /// Runs `graph` with the default mapping (shared keys by name).
    pub fn new(graph: CompiledGraph) -> Self {
        Subgraph {
            graph,
            map_in: None,
            map_out: None,
        }
    }

    /// Builds the child's input from the parent task.
    pub fn map_in(
        mut self,
        f: impl Fn(&TaskContext) -> Result<Value, NodeError> + Send + Sync + 'static,
    ) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Builds the parent's writes from the child's final state.
    pub fn map_out(
        mut self,
        f: impl Fn(&Value) -> Result<Vec<(String, Value)>, NodeError> + Send + Sync + 'static,
    ) -> Self {
        self.map_out = Some(Arc::new(f));
        self
    }

    /// The graph this node runs.
    pub fn graph(&self) -> &CompiledGraph {
        &self.graph
    }

    pub(crate) fn output_map(&self) -> Option<&MapOut> {
        self.map_out.as_ref()
    }

    /// The child's input: the custom mapping, else the shared input keys (plus the payload's
    /// keys for a push task).
    pub(crate) fn input_for(&self, ctx: &TaskContext) -> Result<Value, NodeError> {
        if let Some(f) = &self.map_in {
            return f(ctx);
        }
        let mut out = Map::new();
        for key in self.graph.schema().input_keys() {
            if let Some(v) = ctx.state().get(key) {
                out.insert(key.to_string(), v.clone());
            }
        }
        if let Some(Value::Object(p)) = ctx.payload() {
            for (k, v) in p {
                if self.graph.schema().input_keys().contains(&k.as_str()) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[async_trait]
impl Node for Subgraph {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let host = match &ctx.host {
            Some(host) => host.clone(),
            None => CompiledGraph::detached_host(&ctx),
        };
        host.run_subgraph(self, ctx).await
    }
}
