//! Tools specific to the n8n workflow builder's agents (the multi-agent builder's discovery
//! phase and friends).
//!
//! * [`best_practices`]: `get_best_practices` and the technique documents written for it.
//! * [`discovery`]: `submit_discovery_results`, which ends the discovery phase.

pub mod add_nodes;
pub mod add_trigger;
pub mod best_practices;
pub mod connect_nodes;
pub mod discovery;
pub mod get_node_parameter;
pub mod main_flow;
pub mod model_chain;
pub mod next_node;
pub mod node_details;
pub mod positions;
pub mod remove_connection;
pub mod remove_node;
pub mod search_nodes;
pub mod state;
pub mod suggest;
pub mod update_parameters;

pub use best_practices::{
    document, render, render_all, technique_ids, techniques, GetBestPractices, Technique,
};
pub use discovery::{
    discovery_brief, looks_like_full_type, validate as validate_discovery,
    ConnectionChangingParameter, DiscoveredNode, DiscoveryResults, NodeTypeChecker, SubNodeChecker,
    SubmitDiscoveryResults, DEFAULT_COORDINATION_LOG_CHANNEL, DEFAULT_DISCOVERY_CHANNEL,
};
pub use update_parameters::{
    changed_keys, fix_expression_prefixes, ChangedKeys, UpdateNodeParameters,
};

pub use add_nodes::AddNodes;
pub use add_trigger::AddTrigger;
pub use connect_nodes::{ConnectNodes, PlannedConnection};
pub use get_node_parameter::{GetNodeParameter, MAX_PARAMETER_VALUE_LENGTH};
pub use node_details::GetNodeDetails;
pub use remove_connection::RemoveConnection;
pub use remove_node::RemoveNode;
pub use search_nodes::SearchNodes;

/// The tools whose argument schema depends on the catalogue (a registry that loads the
/// catalogue lazily must ask the real tool for it).
pub const CATALOGUE_SHAPED_TOOLS: &[&str] = &["add_trigger"];

/// The workflow-builder tools over `catalogue`: search_nodes, get_node_details, add_nodes,
/// add_trigger (its types from the catalogue), connect_nodes, remove_node, remove_connection, get_node_parameter, get_best_practices and
/// submit_discovery_results (its node types checked against the catalogue, a list of AI
/// sub-nodes alone refused).
pub fn workflow_tools(
    catalogue: std::sync::Arc<crate::catalogue::Catalogue>,
) -> Vec<std::sync::Arc<dyn agentgraph_agents::tools::Tool>> {
    use std::sync::Arc;
    let checker = catalogue.clone();
    vec![
        Arc::new(SearchNodes::new(catalogue.clone())),
        Arc::new(GetNodeDetails::new(catalogue.clone())),
        Arc::new(AddNodes::new(catalogue.clone())),
        Arc::new(AddTrigger::new(catalogue.clone())),
        Arc::new(ConnectNodes::new(catalogue.clone())),
        Arc::new(RemoveNode::new(catalogue.clone())),
        Arc::new(RemoveConnection::new(catalogue.clone())),
        Arc::new(GetNodeParameter::new(catalogue)),
        Arc::new(GetBestPractices::new()),
        Arc::new(SubmitDiscoveryResults::new().with_catalogue(checker)),
    ]
}
