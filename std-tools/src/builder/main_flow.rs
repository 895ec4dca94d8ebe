//! Tool variants in the main flow. `n8n-nodes-base.gmailTool` is the Gmail node as a tool an AI
//! Agent calls (one `ai_tool` output, no main input); a workflow without an agent can never run
//! it. A small model picked the Gmail Tool to send the result of a main-flow step, was told that
//! the connection is impossible and that `n8n-nodes-base.gmail` belongs there, and connected
//! the same two nodes again until the turn ended on the repeat guard.
//!
//! The same holds for a trigger used as a step: discovery listed the Google Sheets *Trigger* to
//! read rows, the builder added it after the schedule trigger and connected the schedule to it
//! three times (a trigger takes no input).
//!
//! The multi-agent builder also *added* an app's trigger as each step after a webhook (three
//! Form.io Triggers): `add_nodes` adds its action node instead when there is one
//! ([`action_type`]) and refuses it otherwise, while the workflow has a trigger.
//!
//! [`main_flow_variant`] names the main-flow type; [`as_main_flow_node`] is the recovery
//! `connect_nodes` makes when a main connection to or from such a node is asked for: a tool
//! variant in a workflow without an agent, or a trigger as the target while the workflow has
//! another trigger, becomes its main-flow type (name, position and shared parameters kept),
//! and the connection is made.

use super::state::node_key;
use crate::catalogue::Catalogue;
use crate::operations::Operation;
use crate::workflow::{number, Workflow, WorkflowNode};
use serde_json::{Map, Value};

/// Parameters only a tool variant has (the description an agent reads).
const TOOL_ONLY_PARAMETERS: [&str; 2] = ["toolDescription", "descriptionType"];

/// The main-flow node type of a `…Tool` variant (`n8n-nodes-base.gmail` for `…gmailTool`) when
/// the workflow has no node taking `ai_tool` inputs: a small model picked the Gmail Tool to
/// read mail in a workflow without an agent, and it can never run there.
pub fn main_flow_variant(catalogue: &Catalogue, wf: &Workflow, node_type: &str) -> Option<String> {
    let base = node_type.strip_suffix("Tool")?;
    let desc = catalogue.get(base, None)?;
    if desc.is_hidden() {
        return None;
    }
    let takes_tools = wf
        .nodes
        .iter()
        .any(|n| super::state::node_ports(catalogue, n).is_ok_and(|p| p.has_input("ai_tool")));
    (!takes_tools).then(|| desc.name.clone())
}

/// A tool-variant node turned into its main-flow type: the workflow with the node changed (to
/// plan the connection on), the operation that makes the change, and a sentence for the model.
#[derive(Debug, Clone)]
pub struct MainFlowNode {
    /// `wf` with the node's type changed.
    pub workflow: Workflow,
    /// The `updateNode` operation changing it.
    pub operation: Operation,
    /// What was done, for the tool message.
    pub note: String,
}

/// `node` (a tool variant of `wf` without an agent, with no `ai_tool` connection of its own) as
/// its main-flow type; `None` when it is not such a node.
pub fn as_main_flow_node(
    catalogue: &Catalogue,
    wf: &Workflow,
    node: &WorkflowNode,
) -> Option<MainFlowNode> {
    let main = main_flow_variant(catalogue, wf, &node.node_type)?;
    let used_as_tool = wf
        .connections
        .get(&node.name)
        .is_some_and(|by_type| by_type.contains_key("ai_tool"));
    if used_as_tool {
        return None;
    }
    convert(
        catalogue,
        wf,
        node,
        main,
        "the tool variant that only an AI Agent calls, and this workflow has no agent",
    )
}

/// The action node of a `…Trigger` type (`n8n-nodes-base.googleSheets` for
/// `…googleSheetsTrigger`) when `node` is that trigger and the workflow has another trigger
/// to start it: a node connected *into* it is a step, not a second start.
pub fn as_action_node(
    catalogue: &Catalogue,
    wf: &Workflow,
    node: &WorkflowNode,
) -> Option<MainFlowNode> {
    let main = action_type(catalogue, &node.node_type)?;
    other_trigger(catalogue, wf, &node.name)?;
    convert(catalogue, wf, node, main, "a trigger, which starts a workflow and takes no input, and this workflow already has its trigger")
}

/// The visible action node of a `…Trigger` type (`n8n-nodes-base.googleSheets` for
/// `…googleSheetsTrigger`), when the catalogue has one.
pub fn action_type(catalogue: &Catalogue, trigger_type: &str) -> Option<String> {
    let base = trigger_type.strip_suffix("Trigger")?;
    let desc = catalogue.get(base, None)?;
    (!desc.is_hidden() && !desc.is_trigger()).then(|| desc.name.clone())
}

/// The first enabled trigger of `wf` other than the node named `except`.
pub fn other_trigger<'a>(
    catalogue: &Catalogue,
    wf: &'a Workflow,
    except: &str,
) -> Option<&'a WorkflowNode> {
    wf.nodes
        .iter()
        .find(|n| {
            n.name != except
                && !n.is_disabled()
                && catalogue
                    .get(&n.node_type, None)
                    .is_some_and(|d| d.is_trigger())
        })
        .map(|n| n.as_ref())
}

/// `node` changed to `main`, its default version and its parameters without the tool-only
/// ones; `what` says what it was, for the note.
fn convert(
    catalogue: &Catalogue,
    wf: &Workflow,
    node: &WorkflowNode,
    main: String,
    what: &str,
) -> Option<MainFlowNode> {
    let version = catalogue.default_version(&main)?;
    let parameters: Map<String, Value> = node
        .parameters
        .iter()
        .filter(|(k, _)| !TOOL_ONLY_PARAMETERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut updates = Map::new();
    updates.insert("type".into(), Value::String(main.clone()));
    updates.insert("typeVersion".into(), Value::Number(number(version)));
    updates.insert("parameters".into(), Value::Object(parameters.clone()));
    let mut workflow = wf.clone();
    let changed =
        std::sync::Arc::make_mut(workflow.nodes.iter_mut().find(|n| n.name == node.name)?);
    changed.node_type = main.clone();
    changed.type_version = number(version);
    changed.parameters = parameters;
    let note = format!(
        "\"{}\" was `{}`, {what}: it is now `{main}`, the node for a step of the main flow \
         (name and parameters kept). ",
        node.name, node.node_type
    );
    Some(MainFlowNode {
        workflow,
        operation: Operation::UpdateNode {
            node_id: node_key(node),
            updates,
        },
        note,
    })
}
