//! The n8n AI workflow builder on agentgraph, in one place:
//!
//! - [`N8n`]: the registry builder graphs are compiled against (the agent kinds, every
//!   std-tools tool, the `operations` reducer and `apply_operations`), over a node-type
//!   catalogue ([`CatalogueSource`]: `--catalogue DIR`, `$AGENTGRAPH_N8N_CATALOGUE`, the one
//!   fetched from npm, the one saved from an instance, else the built-in one) loaded the first
//!   time a tool needs it;
//! - [`catalogue`]: that order ([`CatalogueSource::resolve`]), and storing real catalogues in
//!   the data folder ([`catalogue::fetch`] from npm, [`catalogue::instance`] from an n8n);
//! - [`builder_graph`]: the shipped builder graphs (`single`, `multi`);
//! - [`CHAT_PAGE`]: the builder's chat page, which `agentgraph serve` serves at `/chat`;
//! - [`validate_file`]: the `agentgraph validate` command's checks;
//! - [`client`]: a client for a running n8n (public API v1, and the node types);
//! - [`execute`]: running a workflow in n8n through a temporary webhook copy;
//! - [`run_tool`]: `run_workflow`, a builder tool that runs the workflow in n8n once the
//!   user confirms;
//! - [`instance`]: Instance AI's domain tools over a running n8n (workflows, executions,
//!   credential needs; destructive ones confirmed by the user), registered with the
//!   orchestration tools (`graphs/instance-ai/orchestrator.ag`);
//! - [`deploy`]: a builder thread's workflow deployed to n8n, its id kept in the thread;
//! - [`workflow_summary`]: a built workflow for people (`agentgraph chat`).
//!
//! ```
//! use agentgraph_n8n::{CatalogueSource, N8n};
//! let n8n = N8n::new(CatalogueSource::Builtin);
//! let registry = n8n.registry_factory()();
//! assert!(registry.tools.contains_key("search_nodes"));
//! assert!(!n8n.catalogue_loaded(), "loaded only when a tool needs it");
//! ```

mod builder;
pub mod catalogue;
pub mod client;
pub mod deploy;
pub mod execute;
pub mod instance;
mod registry;
pub mod run_tool;
mod validate;

pub use builder::{builder_graph, workflow_of, workflow_summary, BUILDER_GRAPHS};
pub use catalogue::{
    CatalogueLoadError, CatalogueSource, LoadedCatalogue, Origin, Resolution, CATALOGUE_ENV,
};
pub use registry::{FallbackHook, N8n, RegistryFactory, INSTANCE_POOL, RESEARCH_TOOLS};
pub use validate::{validate_file, ValidateError, Validation};

/// The builder's chat page (static HTML and JS, no build step), served at `/chat`.
pub const CHAT_PAGE: &str = include_str!("../static/index.html");
