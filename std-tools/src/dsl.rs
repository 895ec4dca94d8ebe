//! Registers std-tools with the `.ag` language (feature `dsl`): every tool, the `operations`
//! reducer, the `apply_operations` node kind, the `trim_workflow` template filter and the
//! `workflow_name`, `discovery_brief`, `searched_node`, `workflow_outline` and
//! `structure_problems` functions, next to
//! the agent kinds of [`agentgraph_dsl::agents`].
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
    reg.register_filter(
        "trim_workflow",
        "a large workflow with long node parameters replaced by a placeholder",
        |v| Ok(crate::workflow::trim::trim_workflow_json(v)),
    );
    reg.register_function(
        "workflow_name",
        agentgraph_dsl::extensions::Function {
            min: 2,
            max: 2,
            returns: agentgraph_dsl::types::Ty::String,
            doc: "workflow_name(answer, request): the naming model's answer when it is a usable \
                  name (one line, at most 60 characters and 8 words, not the request), else a short name \
                  derived from the request"
                .into(),
            call: Arc::new(|args| {
                let request = args.get(1).and_then(|v| v.as_str()).unwrap_or_default();
                let answer = args.first().and_then(|v| v.as_str());
                Ok(crate::workflow::name::workflow_name(answer, request).into())
            }),
        },
    );
    reg.register_function(
        "discovery_brief",
        agentgraph_dsl::extensions::Function {
            min: 1,
            max: 1,
            returns: agentgraph_dsl::types::Ty::String,
            doc: "discovery_brief(discovery_context): the discovery results as text for a phase's \
                  opening message (each node type with its version, reasoning and the parameters \
                  that change its connections, then the best practices); \"\" when there are none"
                .into(),
            call: Arc::new(|args| {
                let context = args.first().cloned().unwrap_or_default();
                Ok(crate::builder::discovery_brief(&context).into())
            }),
        },
    );
    reg.register_function(
        "searched_node",
        agentgraph_dsl::extensions::Function {
            min: 2,
            max: 2,
            returns: agentgraph_dsl::types::Ty::String,
            doc: "searched_node(messages, workflow): the first node type of the newest \
                  successful search_nodes result that the workflow does not hold yet (a trigger \
                  only while it has none), as \"`type` (Label)\"; \"\" when there is none"
                .into(),
            call: Arc::new(|args| {
                let messages = args
                    .first()
                    .and_then(|v| v.as_array())
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let picked = args
                    .get(1)
                    .and_then(|v| crate::workflow::Workflow::from_value_ref(v).ok())
                    .and_then(|wf| crate::builder::next_node::searched_node(messages, &wf));
                Ok(picked.unwrap_or_default().into())
            }),
        },
    );
    reg.register_function(
        "workflow_outline",
        agentgraph_dsl::extensions::Function {
            min: 1,
            max: 1,
            returns: agentgraph_dsl::types::Ty::String,
            doc: "workflow_outline(workflow): one line per node in flow order, with its type \
                  and where its output goes (\"- **Name** (type) → Next\"); \"\" for an empty \
                  workflow or a value that is not one"
                .into(),
            call: Arc::new(|args| {
                let outline = args
                    .first()
                    .and_then(|v| crate::workflow::Workflow::from_value_ref(v).ok())
                    .map(|wf| crate::workflow::outline::outline(&wf));
                Ok(outline.unwrap_or_default().into())
            }),
        },
    );
    reg.register_function(
        STRUCTURE_PROBLEMS,
        structure_problems_function({
            let catalogue = catalogue.clone();
            move || catalogue.clone()
        }),
    );
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

/// The name of the function [`structure_problems_function`] makes.
pub const STRUCTURE_PROBLEMS: &str = "structure_problems";

/// `structure_problems(workflow)`: the structure check's findings that leave a workflow
/// unfinished ([`crate::validate::unfinished`]: its errors, a trigger or a node that is not
/// connected, each as `"CODE: node \"Name\": message"`); `[]` for a workflow with no such problem or a value that is not a
/// workflow. `catalogue` is asked on each call (the product loads it on first use).
pub fn structure_problems_function(
    catalogue: impl Fn() -> Arc<Catalogue> + Send + Sync + 'static,
) -> agentgraph_dsl::extensions::Function {
    agentgraph_dsl::extensions::Function {
        min: 1,
        max: 1,
        returns: agentgraph_dsl::types::Ty::List(Box::new(agentgraph_dsl::types::Ty::String)),
        doc: "structure_problems(workflow): what the structure check finds unfinished (errors, \
              unconnected trigger or nodes), as \"CODE: message\" strings"
            .into(),
        call: Arc::new(move |args| {
            let Some(workflow) = args
                .first()
                .and_then(|v| crate::workflow::Workflow::from_value_ref(v).ok())
            else {
                return Ok(serde_json::Value::Array(Vec::new()));
            };
            let problems = crate::validate::unfinished(&workflow, &catalogue())
                .into_iter()
                .map(serde_json::Value::String)
                .collect();
            Ok(serde_json::Value::Array(problems))
        }),
    }
}

struct ApplyOperationsFactory {
    catalogue: Arc<Catalogue>,
}

impl NodeFactory for ApplyOperationsFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let mut node = ApplyOperationsNode::with_channels(
            b.channel("workflow").unwrap_or("workflow"),
            b.channel("operations").unwrap_or("operations"),
        )
        .with_catalogue(self.catalogue.clone());
        if let Some(messages) = b.channel("messages") {
            node = node.with_messages(messages);
        }
        Ok(Arc::new(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentgraph_dsl::diagnostic::codes::BAD_TEMPLATE;
    use agentgraph_dsl::Project;
    use agentgraph_runtime::{Input, RunConfig};
    use serde_json::{json, Value};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    const GRAPH: &str = r#"graph show {
  state {
    workflow: json = {}
    shown: string = ""
  }
  node show { set { shown: "{{ workflow | trim_workflow | json }}" } }
  START -> show -> END
}
"#;

    fn project() -> Project {
        let root = PathBuf::from("/virtual/show.ag");
        let files = BTreeMap::from([(root.clone(), GRAPH.to_string())]);
        Project::from_files(&root, &files).expect("the snapshot has its root")
    }

    fn registry() -> Registry {
        let mut reg = Registry::default();
        let catalogue = Catalogue::builtin().expect("the built-in catalogue loads");
        register(&mut reg, Arc::new(catalogue));
        reg
    }

    #[test]
    fn trim_workflow_is_a_filter_of_this_registration_only() {
        let codes: Vec<&str> = project()
            .check(&Registry::default())
            .iter()
            .map(|d| d.code)
            .collect();
        assert_eq!(codes, [BAD_TEMPLATE.id], "unknown to the language core");
        assert_eq!(project().check(&registry()), Vec::new());
    }

    #[tokio::test]
    async fn trim_workflow_trims_large_workflows_in_templates() {
        let graph = project().compile(&registry()).expect("compiles");
        let long = "x".repeat(200_000);
        let big = json!({"nodes": [{"name": "Code", "parameters": {"code": long, "mode": "all"}}]});
        let out = graph
            .invoke(
                Input::values(json!({ "workflow": big })),
                RunConfig::default(),
            )
            .await
            .expect("runs");
        let shown = out.values["shown"].as_str().unwrap_or_default();
        assert!(
            shown.contains(crate::workflow::trim::OMITTED),
            "{shown:.200}"
        );
        assert!(shown.contains("\"mode\": \"all\""), "{shown:.200}");

        let small = json!({"nodes": [{"name": "Set", "parameters": {"value": "short"}}]});
        let out = graph
            .invoke(
                Input::values(json!({ "workflow": small })),
                RunConfig::default(),
            )
            .await
            .expect("runs");
        let shown: Value =
            serde_json::from_str(out.values["shown"].as_str().unwrap_or("null")).expect("json");
        assert_eq!(shown, small, "a small workflow is shown whole");
    }
}
