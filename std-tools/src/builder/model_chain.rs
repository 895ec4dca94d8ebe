//! A language model connected as a step of the main flow. `@n8n/n8n-nodes-langchain.lmCohere`
//! is a sub-node: it has no main input and runs only inside a chain or an agent that takes it
//! as its `ai_languageModel`. A small model asked to classify issues "using AI" added the
//! Cohere model as the step after the webhook and connected the webhook to it three times,
//! each refused (`INCOMPATIBLE_CONNECTION`), until the turn ended on the repeat guard.
//!
//! What it meant is unambiguous when nothing in the workflow waits for a model: an LLM step.
//! [`through_chain`] is the recovery `connect_nodes` makes then: a Basic LLM Chain is added
//! after the source, with the model as its `ai_languageModel`. When an agent or a chain
//! already waits for a model, the model belongs there, and [`waiting_for_model`] names it for
//! the refusal instead.

use super::add_nodes::plan_node;
use super::connect_nodes::ConnectNodes;
use super::state::{node_key, node_ports};
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::{Workflow, WorkflowNode, MAIN};
use agentgraph_agents::tools::ToolContext;
use serde_json::{json, Map};

/// The node type added to run a language model as a step.
pub const CHAIN_TYPE: &str = "@n8n/n8n-nodes-langchain.chainLlm";

/// The connection type of a language model.
const MODEL_INPUT: &str = "ai_languageModel";

/// Whether `node` is a language-model sub-node (its only outputs are `ai_languageModel`).
fn is_model(catalogue: &Catalogue, node: &WorkflowNode) -> bool {
    node_ports(catalogue, node).is_ok_and(|p| {
        let outs = p.output_kinds();
        !outs.is_empty() && outs.iter().all(|k| *k == MODEL_INPUT) && !p.has_input(MAIN)
    })
}

/// The nodes of `wf` that take a language model and have none connected yet.
pub fn waiting_for_model<'a>(catalogue: &Catalogue, wf: &'a Workflow) -> Vec<&'a WorkflowNode> {
    wf.nodes
        .iter()
        .filter(|n| node_ports(catalogue, n).is_ok_and(|p| p.has_input(MODEL_INPUT)))
        .filter(|n| wf.incoming(&n.name, Some(MODEL_INPUT)).is_empty())
        .map(|n| &**n)
        .collect()
}

/// The refused connection's hint when its target is a language model: where the model goes.
pub fn model_hint(catalogue: &Catalogue, wf: &Workflow, target: &WorkflowNode) -> Option<String> {
    if !is_model(catalogue, target) {
        return None;
    }
    let waiting = waiting_for_model(catalogue, wf);
    let place = match waiting.first() {
        Some(parent) => format!(
            "connect it to \"{}\" instead (connect_nodes with \"{}\" as the source)",
            parent.name, target.name
        ),
        None => format!(
            "for an LLM step, add a Basic LLM Chain (`{CHAIN_TYPE}`) or an AI Agent, connect the \
             flow to it, and connect \"{}\" to it",
            target.name
        ),
    };
    Some(format!(
        " \"{}\" is a language model: a sub-node with no main input that runs only inside a \
         chain or an agent; {place}.",
        target.name
    ))
}

/// The chain inserted for a model connected as a step: the operations (add the chain, connect
/// the source to it, the model to it) and a sentence for the model.
#[derive(Debug, Clone)]
pub struct ThroughChain {
    /// Add the chain, then the two connections.
    pub operations: Vec<Operation>,
    /// What was done.
    pub note: String,
}

/// The recovery for `source → target` when `target` is a language model, the source has a
/// main output and no node of `wf` waits for a model (see the module docs); `None` otherwise.
pub fn through_chain(
    connect: &ConnectNodes,
    catalogue: &Catalogue,
    ctx: &ToolContext,
    wf: &Workflow,
    source: &WorkflowNode,
    target: &WorkflowNode,
) -> Option<ThroughChain> {
    if !is_model(catalogue, target) || !waiting_for_model(catalogue, wf).is_empty() {
        return None;
    }
    let feeds_main = node_ports(catalogue, source).is_ok_and(|p| p.output_kinds().contains(&MAIN));
    if !feeds_main {
        return None;
    }
    let chain = plan_node(
        catalogue,
        ctx,
        wf,
        CHAIN_TYPE,
        Some("Basic LLM Chain"),
        Map::new(),
    )
    .ok()?
    .node;
    let mut with_chain = wf.clone();
    with_chain.add_node(chain.clone());
    let chain_key = node_key(&chain);
    // `from` → the chain, when the connection is possible and of type `kind`.
    let into_chain = |from: &WorkflowNode, kind: &str| {
        connect
            .plan(
                &with_chain,
                &json!({"sourceNodeId": node_key(from), "targetNodeId": chain_key}),
            )
            .ok()
            .filter(|p| p.kind == kind)
    };
    let step = into_chain(source, MAIN)?;
    let model = into_chain(target, MODEL_INPUT)?;
    let note = format!(
        "\"{model_name}\" is a language model: a sub-node with no main input that runs only \
         inside a chain or an agent. Added \"{chain_name}\" (`{CHAIN_TYPE}`) with ID {id} after \
         \"{source_name}\", with \"{model_name}\" as its model ({step}; {model_msg}). Next, set \
         the chain's prompt with update_node_parameters (what to ask the model about each item).",
        model_name = target.name,
        chain_name = chain.name,
        id = chain_key,
        source_name = source.name,
        step = step.message(),
        model_msg = model.message(),
    );
    Some(ThroughChain {
        operations: vec![
            Operation::AddNodes { nodes: vec![chain] },
            step.operation(),
            model.operation(),
        ],
        note,
    })
}
