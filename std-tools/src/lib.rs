//! The standard tool library of agentgraph: everything the n8n workflow-builder graphs use.
//!
//! * [`workflow`]: the n8n workflow JSON model (unknown fields kept verbatim).
//! * [`operations`]: the queued edits tools return, their reducer and the `apply_operations`
//!   node.
//! * [`catalogue`]: node-type descriptions (a compact built-in set and the real n8n
//!   `nodes.json`), port resolution (expression ports evaluated in embedded JavaScript) and
//!   search scoring.
//! * [`general`]: general agent tools (calculator, safe HTTP request, knowledge-base search).
//! * [`builder`]: the workflow-builder tools (search_nodes, get_node_details, add_nodes,
//!   connect_nodes, update_node_parameters, remove_node, remove_connection,
//!   get_node_parameter, get_best_practices, submit_discovery_results).
//! * `dsl` (feature `dsl`): registration of all of the above with the `.ag` language.
//! * [`validate`]: workflow validators (coded structure and configuration rules) and the
//!   `validate_structure` / `validate_configuration` tools.

pub mod builder;
pub mod catalogue;
#[cfg(feature = "dsl")]
pub mod dsl;
pub mod general;
pub mod operations;
pub mod validate;
pub mod workflow;
