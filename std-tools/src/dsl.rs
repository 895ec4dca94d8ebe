//! Registers std-tools with the `.ag` language (feature `dsl`): every tool, the `operations`
//! reducer and the `apply_operations` node kind, next to the agent kinds of
//! [`agentgraph_dsl::agents`].
//!
//! ```
//! use agentgraph_std_tools::catalogue::Catalogue;
//! use std::sync::Arc;
//! let mut registry = agentgraph_dsl::Registry::default();
//! let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
//! agentgraph_std_tools::dsl::register(&mut registry, Arc::new(catalogue));
//! assert!(registry.tools.contains_key("search_nodes"));
//! ```

use crate::builder::{workflow_tools, UpdateNodeParameters};
use crate::catalogue::Catalogue;
use crate::general::{Calculator, HttpRequest, KnowledgeBaseSearch};
use crate::operations::{self, ApplyOperationsNode};
use crate::validate::{ValidateConfiguration, ValidateStructure};
use agentgraph_agents::tools::Tool;
use agentgraph_dsl::agents::ToolMap;
use agentgraph_dsl::ast::{Entry, ExprKind};
use agentgraph_dsl::registry::{EntrySpec, NodeBuild, NodeFactory};
use agentgraph_dsl::Registry;
use agentgraph_runtime::Node;
use std::sync::Arc;

/// Every std-tools tool over `catalogue`, by name.
pub fn all_tools(catalogue: Arc<Catalogue>) -> ToolMap {
    let mut list: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Calculator),
        Arc::new(HttpRequest::new()),
        Arc::new(KnowledgeBaseSearch::from_settings()),
        Arc::new(UpdateNodeParameters::new(catalogue.clone())),
        Arc::new(ValidateStructure::new(catalogue.clone())),
        Arc::new(ValidateConfiguration::new(catalogue.clone())),
    ];
    list.extend(workflow_tools(catalogue));
    list.into_iter()
        .map(|t| (t.name().to_string(), t))
        .collect()
}

/// Registers the agent kinds with every std-tools tool, the `operations` reducer and the
/// `apply_operations` kind (`node apply: apply_operations { workflow: w, operations: ops,
/// messages: m }`, every entry optional; `messages` names the channel where a batch that could
/// not be applied, or was applied with notes, is reported to the agent — none by default).
pub fn register(reg: &mut Registry, catalogue: Arc<Catalogue>) {
    agentgraph_dsl::agents::register(reg, all_tools(catalogue.clone()));
    operations::register(&mut reg.reducers);
    reg.register_kind(
        "apply_operations",
        vec![
            EntrySpec::value("workflow"),
            EntrySpec::value("operations"),
            EntrySpec::value("messages"),
        ],
        "applies the queued workflow operations in order, atomically, and clears the queue; \
         failures and notes go to the `messages` channel, if given",
        Arc::new(ApplyOperationsFactory { catalogue }),
    );
}

struct ApplyOperationsFactory {
    catalogue: Arc<Catalogue>,
}

fn channel_entry(b: &NodeBuild<'_>, key: &str) -> Option<String> {
    b.node.body.iter().find_map(|e| match e {
        Entry::Value { key: k, value } if k.name == key => match &value.kind {
            ExprKind::Name { name } => Some(name.name.clone()),
            ExprKind::Str { lit } => Some(lit.value.clone()),
            _ => None,
        },
        _ => None,
    })
}

impl NodeFactory for ApplyOperationsFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let mut node = ApplyOperationsNode::with_channels(
            channel_entry(b, "workflow").unwrap_or_else(|| "workflow".into()),
            channel_entry(b, "operations").unwrap_or_else(|| "operations".into()),
        )
        .with_catalogue(self.catalogue.clone());
        if let Some(messages) = channel_entry(b, "messages") {
            node = node.with_messages(messages);
        }
        Ok(Arc::new(node))
    }
}
