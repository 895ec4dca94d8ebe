//! The node edits of a batch: adding (upsert, unique names, free positions), removing, updating
//! and renaming nodes, with renames followed by connections, expressions and `pinData`.

use super::apply::{ApplyNote, Cx};
use super::rename;
use super::OperationErrorKind;
use crate::builder::positions::{is_taken, next_free_to_the_right, position_for_node};
use crate::workflow::{Workflow, WorkflowNode};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

pub(super) fn add_nodes(
    wf: &mut Workflow,
    nodes: &[WorkflowNode],
    cx: &mut Cx<'_>,
) -> Result<(), OperationErrorKind> {
    for node in nodes {
        let Some(id) = node.id.as_deref() else {
            return Err(OperationErrorKind::MissingNodeId(node.name.clone()));
        };
        if node.name.is_empty() {
            return Err(OperationErrorKind::EmptyName);
        }
        let mut node = node.clone();
        if wf
            .nodes
            .iter()
            .any(|n| n.name == node.name && n.id.as_deref() != Some(id))
        {
            // Parallel add_nodes calls of one step may pick the same name: tools refer to
            // nodes by id, so the later node gets a unique n8n-style name instead.
            let others = Workflow {
                nodes: wf
                    .nodes
                    .iter()
                    .filter(|n| n.id.as_deref() != Some(id))
                    .cloned()
                    .collect(),
                ..Workflow::default()
            };
            let unique = others.unique_name(&node.name);
            cx.notes.push(ApplyNote::Renamed {
                id: id.to_string(),
                requested: std::mem::replace(&mut node.name, unique.clone()),
                name: unique,
            });
        }
        match wf.nodes.iter_mut().find(|n| n.id.as_deref() == Some(id)) {
            Some(existing) => *existing = Arc::new(node),
            None => {
                // Parallel add_nodes calls of one step all place their node in the workflow as
                // it was before the step, so they pick the same slot: move on to a free one.
                let (x, y) = node.xy();
                if !node.is_sticky_note() && is_taken(wf, [x, y]) {
                    let [x, y] = match cx.catalogue {
                        Some(catalogue) => position_for_node(catalogue, wf, &node),
                        None => next_free_to_the_right(wf, [x, y]),
                    };
                    node.set_xy(x, y);
                }
                wf.nodes.push(Arc::new(node));
            }
        }
    }
    Ok(())
}

pub(super) fn remove_nodes(wf: &mut Workflow, keys: &[String], cx: &mut Cx<'_>) {
    let mut names = HashSet::new();
    let mut indices = BTreeSet::new();
    for key in keys {
        match wf.position_of(key) {
            Some(i) => {
                indices.insert(i);
                names.insert(wf.nodes[i].name.clone());
            }
            None => cx.notes.push(ApplyNote::Skipped {
                index: cx.index,
                op: "removeNode",
                reason: OperationErrorKind::NodeNotFound(key.clone()),
            }),
        }
    }
    if indices.is_empty() {
        return;
    }
    let mut i = 0;
    wf.nodes.retain(|_| {
        let keep = !indices.contains(&i);
        i += 1;
        keep
    });
    wf.connections.retain(|source, _| !names.contains(source));
    for by_type in wf.connections.values_mut() {
        for slot in by_type.values_mut().flatten().flatten() {
            slot.retain(|c| !names.contains(&c.node));
        }
    }
}

pub(super) fn update_node(
    wf: &mut Workflow,
    i: usize,
    updates: &Map<String, Value>,
) -> Result<(), OperationErrorKind> {
    let old = &wf.nodes[i];
    let invalid = |message: String| OperationErrorKind::InvalidUpdate {
        node: old.name.clone(),
        message,
    };
    let Value::Object(mut merged) =
        serde_json::to_value(&**old).map_err(|e| invalid(e.to_string()))?
    else {
        return Err(invalid("the node is not an object".into()));
    };
    for (k, v) in updates {
        merged.insert(k.clone(), v.clone());
    }
    let mut updated: WorkflowNode =
        serde_json::from_value(Value::Object(merged)).map_err(|e| invalid(e.to_string()))?;
    let new_name = std::mem::replace(&mut updated.name, old.name.clone());
    if let Some(id) = updated.id.as_deref() {
        if wf
            .nodes
            .iter()
            .enumerate()
            .any(|(j, n)| j != i && n.id.as_deref() == Some(id))
        {
            return Err(invalid(format!("id `{id}` is used by another node")));
        }
    }
    wf.nodes[i] = Arc::new(updated);
    if new_name != wf.nodes[i].name {
        rename_node(wf, i, &new_name)?;
    }
    Ok(())
}

pub(super) fn rename_node(
    wf: &mut Workflow,
    i: usize,
    new_name: &str,
) -> Result<(), OperationErrorKind> {
    if new_name.is_empty() {
        return Err(OperationErrorKind::EmptyName);
    }
    let old = wf.nodes[i].name.clone();
    if old == new_name {
        return Ok(());
    }
    if wf.nodes.iter().any(|n| n.name == new_name) {
        return Err(OperationErrorKind::DuplicateNodeName(new_name.to_string()));
    }
    Arc::make_mut(&mut wf.nodes[i]).name = new_name.to_string();
    if let Some(by_type) = wf.connections.remove(&old) {
        wf.connections.insert(new_name.to_string(), by_type);
    }
    for by_type in wf.connections.values_mut() {
        for c in by_type.values_mut().flatten().flatten().flatten() {
            if c.node == old {
                c.node = new_name.to_string();
            }
        }
    }
    let renamer = rename::Renamer::new(&old, new_name);
    for node in &mut wf.nodes {
        if node.parameters.values().any(|v| renamer.value_needs(v)) {
            for v in Arc::make_mut(node).parameters.values_mut() {
                renamer.rewrite_value(v);
            }
        }
    }
    if let Some(Value::Object(pin)) = wf.extra.get_mut("pinData") {
        if let Some(v) = pin.remove(&old) {
            pin.insert(new_name.to_string(), v);
        }
    }
    Ok(())
}
