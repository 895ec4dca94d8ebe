//! Tools specific to the n8n workflow builder's agents (the multi-agent builder's discovery
//! phase and friends).
//!
//! * [`best_practices`]: `get_best_practices` and the technique documents written for it.
//! * [`discovery`]: `submit_discovery_results`, which ends the discovery phase.

pub mod best_practices;
pub mod discovery;

pub use best_practices::{
    document, render, render_all, technique_ids, techniques, GetBestPractices, Technique,
};
pub use discovery::{
    looks_like_full_type, validate as validate_discovery, ConnectionChangingParameter,
    DiscoveredNode, DiscoveryResults, NodeTypeChecker, SubmitDiscoveryResults,
    DEFAULT_COORDINATION_LOG_CHANNEL, DEFAULT_DISCOVERY_CHANNEL,
};
