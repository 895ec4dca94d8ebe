//! The graph-builder API: channels, nodes, edges, routes, joins; compiled into a
//! [`CompiledGraph`] after checks.

use crate::error::GraphError;
use crate::node::{Node, NodeError};
use crate::retry::RetryPolicy;
use crate::schema::{ChannelSpec, Schema};
use crate::state::StateView;
use crate::update::{Goto, END, START};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// What a route returns: zero or more targets (nodes, sends, END).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Targets(pub Vec<Goto>);

impl From<&str> for Targets {
    fn from(s: &str) -> Self {
        Targets(vec![Goto::from(s)])
    }
}
impl From<String> for Targets {
    fn from(s: String) -> Self {
        Targets(vec![Goto::from(s)])
    }
}
impl From<Goto> for Targets {
    fn from(g: Goto) -> Self {
        Targets(vec![g])
    }
}
impl From<Vec<Goto>> for Targets {
    fn from(v: Vec<Goto>) -> Self {
        Targets(v)
    }
}
impl From<Vec<&str>> for Targets {
    fn from(v: Vec<&str>) -> Self {
        Targets(v.into_iter().map(Goto::from).collect())
    }
}
impl From<Vec<crate::update::Send>> for Targets {
    fn from(v: Vec<crate::update::Send>) -> Self {
        Targets(v.into_iter().map(Goto::Send).collect())
    }
}

/// A conditional route: a function of the state after the step.
pub type RouteFn = Arc<dyn Fn(&StateView) -> Result<Targets, NodeError> + Send + Sync>;

/// A route with the targets it may return (used by checks and diagrams, not enforced).
#[derive(Clone)]
pub struct Route {
    pub(crate) func: RouteFn,
    pub(crate) targets: Vec<String>,
}

/// Per-node options.
#[derive(Clone, Default)]
pub struct NodeOptions {
    /// Retry policy (none: a failure fails the run at once).
    pub retry: Option<RetryPolicy>,
    /// Limit on one attempt.
    pub timeout: Option<Duration>,
    /// An error boundary: when the node fails for good (after its retries), write
    /// `{"node", "code", "message"}` to this channel and carry on along the node's edges and
    /// routes instead of failing the run (a route can then send the error to a node that
    /// explains it). Interrupts and cancellation are not caught.
    pub catch: Option<String>,
    /// Reuse the node's update for an input seen before (needs a cache on the graph:
    /// [`CompiledGraph::with_cache`]).
    pub cache: Option<crate::cache::CachePolicy>,
}

pub(crate) struct NodeEntry {
    pub name: String,
    /// The name, shared with every task context (no allocation per task).
    pub label: Arc<str>,
    pub node: Arc<dyn Node>,
    pub options: NodeOptions,
    pub subgraph: Option<CompiledGraph>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Node(usize),
    End,
}

pub(crate) struct Join {
    pub key: String,
    pub sources: Vec<usize>,
    pub target: usize,
}

pub(crate) struct GraphInner {
    pub name: String,
    pub schema: Arc<Schema>,
    pub nodes: Vec<NodeEntry>,
    pub node_index: HashMap<String, usize>,
    pub start_edges: Vec<Target>,
    pub start_routes: Vec<Route>,
    pub edges: Vec<Vec<Target>>,
    pub routes: Vec<Vec<Route>>,
    pub joins: Vec<Join>,
    pub joins_by_source: Vec<Vec<usize>>,
    pub interrupt_before: HashSet<usize>,
    pub interrupt_after: HashSet<usize>,
    pub recursion_limit: usize,
    /// The graph's default for [`crate::RunConfig::keep_checkpoints`].
    pub keep_checkpoints: Option<usize>,
}

impl GraphInner {
    pub fn known_nodes(&self) -> String {
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        names.join(", ")
    }
}

/// A compiled graph, ready to run. Cheap to clone.
#[derive(Clone)]
pub struct CompiledGraph {
    pub(crate) inner: Arc<GraphInner>,
    pub(crate) checkpointer: Option<Arc<dyn crate::checkpoint::Checkpointer>>,
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    pub(crate) cache: Option<Arc<dyn crate::cache::NodeCache>>,
}

impl CompiledGraph {
    /// The same graph saving checkpoints to `checkpointer`.
    pub fn with_checkpointer(
        mut self,
        checkpointer: Arc<dyn crate::checkpoint::Checkpointer>,
    ) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// The checkpointer, if any.
    pub fn checkpointer(&self) -> Option<&Arc<dyn crate::checkpoint::Checkpointer>> {
        self.checkpointer.as_ref()
    }

    /// The same graph giving its tasks (and its subgraphs') `store`
    /// ([`crate::TaskContext::store`]): memory shared across threads.
    pub fn with_store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The store, if any.
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// The same graph caching the updates of its nodes that have a cache policy
    /// ([`NodeOptions::cache`]) in `cache`; its subgraphs share it.
    pub fn with_cache(mut self, cache: Arc<dyn crate::cache::NodeCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The node cache, if any.
    pub fn cache(&self) -> Option<&Arc<dyn crate::cache::NodeCache>> {
        self.cache.as_ref()
    }

    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The state schema.
    pub fn schema(&self) -> &Schema {
        &self.inner.schema
    }

    /// Node names in definition order.
    pub fn node_names(&self) -> Vec<&str> {
        self.inner.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// The graph run by node `name`, if it is a subgraph node.
    pub fn subgraph(&self, name: &str) -> Option<&CompiledGraph> {
        let i = *self.inner.node_index.get(name)?;
        self.inner.nodes[i].subgraph.as_ref()
    }

    /// Static edges as `(from, to)` pairs, `__start__`/`__end__` included.
    pub fn edges(&self) -> Vec<(String, String)> {
        let name = |t: &Target| match t {
            Target::Node(i) => self.inner.nodes[*i].name.clone(),
            Target::End => END.to_string(),
        };
        let mut out: Vec<(String, String)> = self
            .inner
            .start_edges
            .iter()
            .map(|t| (START.to_string(), name(t)))
            .collect();
        for (i, targets) in self.inner.edges.iter().enumerate() {
            for t in targets {
                out.push((self.inner.nodes[i].name.clone(), name(t)));
            }
        }
        out
    }

    /// Routes as `(from, declared targets)`.
    pub fn routes(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .inner
            .start_routes
            .iter()
            .map(|r| (START.to_string(), r.targets.clone()))
            .collect();
        for (i, routes) in self.inner.routes.iter().enumerate() {
            for r in routes {
                out.push((self.inner.nodes[i].name.clone(), r.targets.clone()));
            }
        }
        out
    }

    /// Waiting edges as `(sources, target)`.
    pub fn joins(&self) -> Vec<(Vec<String>, String)> {
        self.inner
            .joins
            .iter()
            .map(|j| {
                (
                    j.sources
                        .iter()
                        .map(|&s| self.inner.nodes[s].name.clone())
                        .collect(),
                    self.inner.nodes[j.target].name.clone(),
                )
            })
            .collect()
    }
}

/// Builds a graph.
///
/// ```
/// use agentgraph_runtime::{GraphBuilder, ChannelSpec, ValueType, node_fn, Update, END};
/// use serde_json::json;
/// let graph = GraphBuilder::new("counter")
///     .channel(ChannelSpec::new("count", ValueType::Int).default_value(json!(0)))
///     .node("bump", node_fn(|ctx| async move {
///         Ok(Update::new().set("count", json!(ctx.state().i64("count") + 1)))
///     }))
///     .edge("START", "bump")
///     .route("bump", |s| if s.i64("count") < 3 { "bump" } else { END })
///     .compile()
///     .unwrap();
/// # let _ = graph;
/// ```
pub struct GraphBuilder {
    name: String,
    channels: Vec<ChannelSpec>,
    nodes: Vec<NodeEntry>,
    edges: Vec<(String, String)>,
    joins: Vec<(Vec<String>, String)>,
    routes: Vec<(String, Route)>,
    interrupt_before: Vec<String>,
    interrupt_after: Vec<String>,
    recursion_limit: usize,
    keep_checkpoints: Option<usize>,
    input: Option<Vec<String>>,
    output: Option<Vec<String>>,
}

/// The default recursion limit (steps per run).
pub const DEFAULT_RECURSION_LIMIT: usize = 10_000;

fn is_start(s: &str) -> bool {
    s == START || s == "START"
}

fn is_end(s: &str) -> bool {
    s == END || s == "END"
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new(name: impl Into<String>) -> Self {
        GraphBuilder {
            name: name.into(),
            channels: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
            joins: Vec::new(),
            routes: Vec::new(),
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            keep_checkpoints: None,
            input: None,
            output: None,
        }
    }

    /// Adds a state channel.
    pub fn channel(mut self, spec: ChannelSpec) -> Self {
        self.channels.push(spec);
        self
    }

    /// Adds a node.
    pub fn node(self, name: impl Into<String>, node: Arc<dyn Node>) -> Self {
        self.node_with(name, node, NodeOptions::default())
    }

    /// Adds a node with a retry policy or timeout.
    pub fn node_with(
        mut self,
        name: impl Into<String>,
        node: Arc<dyn Node>,
        options: NodeOptions,
    ) -> Self {
        let name = name.into();
        self.nodes.push(NodeEntry {
            label: Arc::from(name.as_str()),
            name,
            node,
            options,
            subgraph: None,
        });
        self
    }

    /// Adds a node that runs another graph (see [`crate::subgraph::Subgraph`]).
    pub fn subgraph(self, name: impl Into<String>, sub: crate::subgraph::Subgraph) -> Self {
        self.subgraph_with(name, sub, NodeOptions::default())
    }

    /// [`GraphBuilder::subgraph`] with options (retry, timeout, an error boundary).
    pub fn subgraph_with(
        mut self,
        name: impl Into<String>,
        sub: crate::subgraph::Subgraph,
        options: NodeOptions,
    ) -> Self {
        let graph = sub.graph().clone();
        let name = name.into();
        self.nodes.push(NodeEntry {
            label: Arc::from(name.as_str()),
            name,
            node: Arc::new(sub),
            options,
            subgraph: Some(graph),
        });
        self
    }

    /// A static edge: `to` runs in the step after `from` (`START`/`END` allowed).
    pub fn edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// A chain of static edges.
    pub fn chain(mut self, nodes: &[&str]) -> Self {
        for w in nodes.windows(2) {
            self.edges.push((w[0].to_string(), w[1].to_string()));
        }
        self
    }

    /// A waiting edge: `target` runs once, after every source has run since it last ran.
    pub fn join(mut self, sources: &[&str], target: impl Into<String>) -> Self {
        self.joins.push((
            sources.iter().map(|s| s.to_string()).collect(),
            target.into(),
        ));
        self
    }

    /// A conditional route evaluated on the state after the step in which `from` ran.
    pub fn route<F, T>(self, from: impl Into<String>, f: F) -> Self
    where
        F: Fn(&StateView) -> T + Send + Sync + 'static,
        T: Into<Targets>,
    {
        self.route_to(from, &[], move |s| Ok(f(s).into()))
    }

    /// A fallible route with the targets it may return declared (for checks and diagrams).
    pub fn route_to<F>(mut self, from: impl Into<String>, targets: &[&str], f: F) -> Self
    where
        F: Fn(&StateView) -> Result<Targets, NodeError> + Send + Sync + 'static,
    {
        self.routes.push((
            from.into(),
            Route {
                func: Arc::new(f),
                targets: targets.iter().map(|s| s.to_string()).collect(),
            },
        ));
        self
    }

    /// Stop before `node` runs (a static breakpoint); `"*"` for every node.
    pub fn interrupt_before(mut self, node: impl Into<String>) -> Self {
        self.interrupt_before.push(node.into());
        self
    }

    /// Stop after `node` ran; `"*"` for every node.
    pub fn interrupt_after(mut self, node: impl Into<String>) -> Self {
        self.interrupt_after.push(node.into());
        self
    }

    /// The maximum number of steps of one run (default 10 000).
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Runs keep only the newest `keep` checkpoints of their thread unless their
    /// [`crate::RunConfig::keep_checkpoints`] says otherwise (default: every checkpoint).
    pub fn keep_checkpoints(mut self, keep: usize) -> Self {
        self.keep_checkpoints = Some(keep.max(1));
        self
    }

    /// The channels a run accepts as input (default: every public channel).
    pub fn input_keys(mut self, keys: &[&str]) -> Self {
        self.input = Some(keys.iter().map(|s| s.to_string()).collect());
        self
    }

    /// The channels a run returns (default: every public channel).
    pub fn output_keys(mut self, keys: &[&str]) -> Self {
        self.output = Some(keys.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Checks the graph and compiles it.
    pub fn compile(self) -> Result<CompiledGraph, GraphError> {
        if self.recursion_limit == 0 {
            return Err(GraphError::BadRecursionLimit);
        }
        for c in &self.channels {
            if let Some(d) = &c.default {
                c.ty.check(d).map_err(|e| GraphError::BadDefault {
                    channel: c.name.clone(),
                    detail: e.to_string(),
                })?;
            }
        }
        let schema = Schema::new(self.channels, self.input.as_deref(), self.output.as_deref())
            .map_err(GraphError::Schema)?;
        let mut node_index = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if is_start(&n.name) || is_end(&n.name) || n.name.starts_with("__") {
                return Err(GraphError::ReservedName(n.name.clone()));
            }
            if node_index.insert(n.name.clone(), i).is_some() {
                return Err(GraphError::DuplicateNode(n.name.clone()));
            }
        }
        let known = || {
            self.nodes
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let lookup = |name: &str, context: String| -> Result<usize, GraphError> {
            node_index
                .get(name)
                .copied()
                .ok_or_else(|| GraphError::UnknownNode {
                    context,
                    name: name.to_string(),
                    known: known(),
                })
        };
        let target = |name: &str, context: String| -> Result<Target, GraphError> {
            if is_end(name) {
                Ok(Target::End)
            } else {
                lookup(name, context).map(Target::Node)
            }
        };
        let n = self.nodes.len();
        let mut start_edges = Vec::new();
        let mut edges = vec![Vec::new(); n];
        for (from, to) in &self.edges {
            let t = target(to, format!("edge {from} -> {to}"))?;
            if is_start(from) {
                if !start_edges.contains(&t) {
                    start_edges.push(t);
                }
            } else {
                let f = lookup(from, format!("edge {from} -> {to}"))?;
                if !edges[f].contains(&t) {
                    edges[f].push(t);
                }
            }
        }
        let mut start_routes = Vec::new();
        let mut routes = vec![Vec::new(); n];
        for (from, route) in self.routes {
            for t in &route.targets {
                target(t, format!("route from {from}"))?;
            }
            if is_start(&from) {
                start_routes.push(route);
            } else {
                let f = lookup(&from, format!("route from {from}"))?;
                routes[f].push(route);
            }
        }
        let mut joins = Vec::new();
        let mut joins_by_source = vec![Vec::new(); n];
        for (sources, to) in &self.joins {
            let context = format!("waiting edge [{}] -> {to}", sources.join(", "));
            let t = lookup(to, context.clone())?;
            let mut idx = Vec::new();
            for s in sources {
                let si = lookup(s, context.clone())?;
                joins_by_source[si].push(joins.len());
                idx.push(si);
            }
            joins.push(Join {
                key: format!("join:{}:{}", sources.join("+"), to),
                sources: idx,
                target: t,
            });
        }
        if start_edges.is_empty() && start_routes.is_empty() {
            return Err(GraphError::NoEntry(self.name));
        }
        let resolve_set = |names: &[String], what: &str| -> Result<HashSet<usize>, GraphError> {
            if names.iter().any(|s| s == "*") {
                return Ok((0..n).collect());
            }
            names
                .iter()
                .map(|s| lookup(s, format!("interrupt {what}")))
                .collect()
        };
        let interrupt_before = resolve_set(&self.interrupt_before, "before")?;
        let interrupt_after = resolve_set(&self.interrupt_after, "after")?;
        Ok(CompiledGraph {
            inner: Arc::new(GraphInner {
                name: self.name,
                schema: Arc::new(schema),
                nodes: self.nodes,
                node_index,
                start_edges,
                start_routes,
                edges,
                routes,
                joins,
                joins_by_source,
                interrupt_before,
                interrupt_after,
                recursion_limit: self.recursion_limit,
                keep_checkpoints: self.keep_checkpoints,
            }),
            checkpointer: None,
            store: None,
            cache: None,
        })
    }
}
