//! The registry builder graphs are compiled against: the agent kinds, every std-tools tool,
//! the `operations` reducer and the `apply_operations` kind, over a node-type catalogue that
//! is loaded on first use.
//!
//! Names, descriptions and argument schemas (but add_trigger's, which lists the catalogue's
//! trigger types) do not depend on the catalogue, so the registry is assembled over an empty
//! one; the catalogue (possibly the large real n8n one) is loaded the
//! first time a builder tool is called, an `apply_operations` node is built or a graph offering
//! add_trigger to a model is compiled. Graphs that use none of them (`graphs/examples/counter.ag`) never load it.

use crate::catalogue::{CatalogueLoadError, CatalogueSource};
use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::agents::ToolMap;
use agentgraph_dsl::registry::{NodeBuild, NodeFactory};
use agentgraph_dsl::Registry;
use agentgraph_runtime::Node;
use agentgraph_std_tools::builder::CATALOGUE_SHAPED_TOOLS;
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::dsl::{all_tools, register};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

pub use agentgraph_dsl::RegistryFactory;

/// Called when the configured catalogue cannot be loaded and the built-in one is used instead.
pub type FallbackHook = Arc<dyn Fn(&CatalogueLoadError) + Send + Sync>;

/// The builder's tools and kinds over one lazily loaded catalogue, shared by every registry
/// it builds.
pub struct N8n {
    source: CatalogueSource,
    on_fallback: Option<FallbackHook>,
    catalogue: OnceLock<Arc<Catalogue>>,
    /// The real tools, over the loaded catalogue.
    tools: OnceLock<ToolMap>,
    /// The std-tools registry over the loaded catalogue (for its `apply_operations` factory).
    loaded: OnceLock<Registry>,
}

impl N8n {
    /// The builder over the catalogue of `source` (not loaded yet).
    pub fn new(source: CatalogueSource) -> Arc<Self> {
        Self::with_fallback_hook(source, None)
    }

    /// [`N8n::new`], calling `hook` if the catalogue of `source` cannot be loaded (the
    /// built-in one is used then; without a hook the failure is logged with `tracing`).
    pub fn with_fallback_hook(source: CatalogueSource, hook: Option<FallbackHook>) -> Arc<Self> {
        Arc::new(N8n {
            source,
            on_fallback: hook,
            catalogue: OnceLock::new(),
            tools: OnceLock::new(),
            loaded: OnceLock::new(),
        })
    }

    /// Whether the catalogue has been loaded.
    pub fn catalogue_loaded(&self) -> bool {
        self.catalogue.get().is_some()
    }

    /// The catalogue, loaded on the first call.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.catalogue
            .get_or_init(|| match self.source.load() {
                Ok(c) => Arc::new(c.catalogue),
                Err(e) => {
                    match &self.on_fallback {
                        Some(hook) => hook(&e),
                        None => tracing::warn!("{e}; using the built-in node-type catalogue"),
                    }
                    Arc::new(Catalogue::builtin().unwrap_or_else(|_| Catalogue::new()))
                }
            })
            .clone()
    }

    fn tools(&self) -> &ToolMap {
        self.tools.get_or_init(|| all_tools(self.catalogue()))
    }

    fn loaded_registry(&self) -> &Registry {
        self.loaded.get_or_init(|| {
            let mut reg = Registry::default();
            register(&mut reg, self.catalogue());
            reg
        })
    }

    /// A registry with every builder name; the catalogue stays unloaded until a tool or an
    /// `apply_operations` node needs it.
    pub fn registry(self: &Arc<Self>) -> Registry {
        let mut reg = Registry::default();
        // Names, docs, reducers and kinds, over an empty catalogue (cheap) ...
        register(&mut reg, Arc::new(Catalogue::new()));
        // ... then the catalogue-bound parts are swapped for ones that load it on first use.
        agentgraph_dsl::agents::register(&mut reg, self.tool_map());
        let n8n = self.clone();
        reg.register_function(
            agentgraph_std_tools::dsl::STRUCTURE_PROBLEMS,
            agentgraph_std_tools::dsl::structure_problems_function(move || n8n.catalogue()),
        );
        if let Some(kind) = reg.kinds.get_mut(APPLY_OPERATIONS) {
            kind.factory = Some(Arc::new(LazyKind {
                kind: APPLY_OPERATIONS,
                n8n: self.clone(),
            }));
        }
        reg
    }

    /// Every tool a graph may name: the builder's (loading the catalogue on first use),
    /// `run_workflow`, and Instance AI's ([`N8n::add_instance_tools`]).
    pub fn tool_map(self: &Arc<Self>) -> ToolMap {
        let mut lazy: ToolMap = all_tools(Arc::new(Catalogue::new()))
            .into_iter()
            .map(|(name, t)| {
                // A schema made from the catalogue (add_trigger's trigger types) is read from
                // the real tool, which loads the catalogue when the graph is compiled.
                let schema =
                    (!CATALOGUE_SHAPED_TOOLS.contains(&name.as_str())).then(|| t.input_schema());
                let tool: Arc<dyn Tool> = Arc::new(LazyTool {
                    name: name.clone(),
                    description: t.description().to_string(),
                    schema,
                    n8n: self.clone(),
                });
                (name, tool)
            })
            .collect();
        // Needs no catalogue; asks the user before every run (graphs opt in by naming it).
        lazy.insert(
            crate::run_tool::RUN_WORKFLOW.to_string(),
            Arc::new(crate::run_tool::RunWorkflowTool),
        );
        self.add_instance_tools(&mut lazy);
        lazy
    }

    /// Instance AI's tools: the domain tools over a running n8n, `fetch_url`, the verify
    /// loop's `report_verdict`, and the orchestration tools (`delegate`, `plan`,
    /// `search_tools`, `load_tool`, `ask_user`, the background tasks' four) whose sub-agents
    /// may use the domain tools ([`INSTANCE_POOL`]).
    fn add_instance_tools(self: &Arc<Self>, tools: &mut ToolMap) {
        let n8n = self.clone();
        for t in crate::instance::tools(Arc::new(move || n8n.catalogue())) {
            tools.insert(t.name().to_string(), t);
        }
        let verdict: Arc<dyn Tool> = Arc::new(agentgraph_agents::orchestration::ReportVerdictTool);
        tools.insert(verdict.name().to_string(), verdict);
        if let Some(http) = tools.get("http_request").cloned() {
            let fetch: Arc<dyn Tool> = Arc::new(crate::instance::FetchUrlTool { http });
            tools.insert(fetch.name().to_string(), fetch);
        }
        let pool: ToolMap = INSTANCE_POOL
            .iter()
            .filter_map(|n| tools.get(*n).map(|t| (n.to_string(), t.clone())))
            .collect();
        let research = RESEARCH_TOOLS.iter().map(|n| n.to_string()).collect();
        let build: Arc<dyn agentgraph_agents::orchestration::TaskRunner> =
            Arc::new(crate::instance::BuildWorkflowRunner::new(self.clone()));
        let runners = vec![("build-workflow".to_string(), build)];
        for t in
            agentgraph_agents::orchestration::orchestration_tools(Arc::new(pool), research, runners)
        {
            tools.insert(t.name().to_string(), t);
        }
    }

    /// A factory of [`N8n::registry`], for the CLI and the server.
    pub fn registry_factory(self: &Arc<Self>) -> RegistryFactory {
        let n8n = self.clone();
        Arc::new(move || n8n.registry())
    }
}

/// The tools Instance AI's sub-agents (`delegate`, planned tasks) may be given.
pub const INSTANCE_POOL: [&str; 13] = [
    "list_workflows",
    "get_workflow",
    "list_executions",
    "get_execution",
    "activate_workflow",
    "deactivate_workflow",
    "delete_workflow",
    "workflow_credentials",
    "run_workflow",
    "search_nodes",
    "get_node_details",
    "fetch_url",
    "report_verdict",
];

/// The tools of a planned `research` task.
pub const RESEARCH_TOOLS: [&str; 3] = ["fetch_url", "search_nodes", "get_node_details"];

/// The std-tools kind that needs the catalogue to build its node.
const APPLY_OPERATIONS: &str = "apply_operations";

/// A tool whose real implementation (over the catalogue) is made on its first call.
struct LazyTool {
    name: String,
    description: String,
    /// The argument schema; `None` when it comes from the catalogue (asked of the real tool).
    schema: Option<Value>,
    n8n: Arc<N8n>,
}

#[async_trait::async_trait]
impl Tool for LazyTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        match &self.schema {
            Some(schema) => schema.clone(),
            None => self
                .n8n
                .tools()
                .get(&self.name)
                .map(|t| t.input_schema())
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if self.n8n.tools.get().is_none() {
            // The first call may read a large catalogue from disk: off the async workers.
            let n8n = self.n8n.clone();
            let _ = tokio::task::spawn_blocking(move || {
                n8n.tools();
            })
            .await;
        }
        let tool = self.n8n.tools().get(&self.name).cloned().ok_or_else(|| {
            ToolError::new(
                "UNKNOWN_TOOL",
                format!("tool `{}` is not in std-tools", self.name),
            )
        })?;
        tool.call(args, ctx).await
    }

    // The real tool decides (a connect naming a node added earlier in the same answer runs
    // again after it); it exists once any tool was called, which a failed call was.
    fn rerun_after_batch(&self, error: &ToolError) -> bool {
        self.n8n
            .tools
            .get()
            .and_then(|tools| tools.get(&self.name))
            .is_some_and(|t| t.rerun_after_batch(error))
    }

    // The real tool decides too. Whether a call repeats an earlier success matters only once
    // a call succeeded, by which time the tools exist; before, nothing is pure.
    fn pure(&self) -> bool {
        self.n8n
            .tools
            .get()
            .and_then(|tools| tools.get(&self.name))
            .is_some_and(|t| t.pure())
    }
}

/// A node kind whose factory (over the catalogue) is made when its first node is built.
struct LazyKind {
    kind: &'static str,
    n8n: Arc<N8n>,
}

impl NodeFactory for LazyKind {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let factory = self
            .n8n
            .loaded_registry()
            .kinds
            .get(self.kind)
            .and_then(|k| k.factory.clone())
            .ok_or_else(|| format!("node kind `{}` is not in std-tools", self.kind))?;
        factory.build(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_runtime::StateView;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A builder over a catalogue directory that does not exist, counting fallbacks.
    fn missing_catalogue() -> (Arc<N8n>, Arc<AtomicUsize>) {
        let fallbacks = Arc::new(AtomicUsize::new(0));
        let count = fallbacks.clone();
        let hook: FallbackHook = Arc::new(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let dir = std::env::temp_dir().join("agentgraph-n8n-no-such-catalogue");
        let n8n = N8n::with_fallback_hook(CatalogueSource::Dir(dir), Some(hook));
        (n8n, fallbacks)
    }

    fn graph(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../graphs")
            .join(rel)
    }

    fn compiles(n8n: &Arc<N8n>, rel: &str) {
        // No model provider here: model errors wait for a call, none is made.
        agentgraph_dsl::agents::defer_model_errors();
        let project = agentgraph_dsl::Project::load(graph(rel)).expect("the graph loads");
        if let Err(d) = project.compile(&n8n.registry()) {
            let text: Vec<String> = d.iter().map(|x| project.render(x, false, 100)).collect();
            panic!("{rel} does not compile: {}", text.join("\n"));
        }
    }

    #[test]
    fn graphs_without_builder_tools_never_load_the_catalogue() {
        let (n8n, fallbacks) = missing_catalogue();
        let reg = n8n.registry_factory()();
        assert!(reg.tools.contains_key("search_nodes"));
        assert!(reg.kinds.contains_key("apply_operations"));
        compiles(&n8n, "examples/counter.ag");
        compiles(&n8n, "agents/react-agent.ag");
        compiles(&n8n, "instance-ai/orchestrator.ag");
        assert!(!n8n.catalogue_loaded());
        assert_eq!(fallbacks.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn sub_agents_may_use_the_domain_tools_and_nothing_that_delegates() {
        let n8n = N8n::new(CatalogueSource::Builtin);
        let tools = n8n.tool_map();
        for name in INSTANCE_POOL.iter().chain(RESEARCH_TOOLS.iter()) {
            assert!(tools.contains_key(*name), "{name} is registered");
        }
        for name in agentgraph_agents::orchestration::ORCHESTRATION_TOOLS {
            assert!(tools.contains_key(name), "{name} is registered");
            assert!(!INSTANCE_POOL.contains(&name), "{name} is not in the pool");
        }
    }

    #[test]
    fn an_apply_operations_node_loads_the_catalogue_once() {
        let (n8n, fallbacks) = missing_catalogue();
        compiles(&n8n, "workflow-builder/single-agent.ag");
        assert!(n8n.catalogue_loaded());
        compiles(&n8n, "workflow-builder/multi-agent.ag");
        // The directory is missing: the built-in catalogue serves, said once.
        assert_eq!(fallbacks.load(Ordering::SeqCst), 1);
        assert!(n8n.catalogue().len() > 10);
    }

    #[test]
    fn add_trigger_offers_the_trigger_types_of_the_loaded_catalogue() {
        let n8n = N8n::new(CatalogueSource::Builtin);
        let tool = LazyTool {
            name: "add_trigger".into(),
            description: String::new(),
            schema: None,
            n8n: n8n.clone(),
        };
        assert!(!n8n.catalogue_loaded());
        let schema = tool.input_schema();
        assert!(n8n.catalogue_loaded());
        let want = agentgraph_std_tools::builder::add_trigger::trigger_types(&n8n.catalogue());
        assert_eq!(
            schema["properties"]["nodeType"]["enum"],
            serde_json::json!(want)
        );
        assert!(CATALOGUE_SHAPED_TOOLS.contains(&"add_trigger"));
    }

    #[tokio::test]
    async fn a_builder_tool_loads_the_catalogue_on_its_first_call() {
        let n8n = N8n::new(CatalogueSource::Builtin);
        let real = all_tools(Arc::new(Catalogue::new()));
        let search = &real["search_nodes"];
        let tool = LazyTool {
            name: "search_nodes".into(),
            description: search.description().into(),
            schema: Some(search.input_schema()),
            n8n: n8n.clone(),
        };
        assert!(!n8n.catalogue_loaded());
        let ctx = ToolContext::detached(StateView::from_object(serde_json::json!({})));
        let out = tool
            .call(
                serde_json::json!({"queries": [{"queryType": "name", "query": "gmail"}]}),
                &ctx,
            )
            .await;
        assert!(n8n.catalogue_loaded());
        let text = format!("{out:?}");
        assert!(text.to_lowercase().contains("gmail"), "{text}");
        // The real tool's answers pass through: the search is pure (a repeat of an earlier
        // success is answered from the conversation), adding a node is not.
        assert!(tool.pure());
        let add = LazyTool {
            name: "add_nodes".into(),
            description: String::new(),
            schema: Some(serde_json::json!({"type": "object"})),
            n8n: n8n.clone(),
        };
        assert!(!add.pure());
    }
}
