//! Canvas positions for new nodes, after the reference's `calculateNodePosition`: the first node
//! at `[240, 300]`; triggers at the left of the flow (stacked below earlier triggers); main nodes
//! to the right of the rightmost main node; sub-nodes below their likely parent (the most recent
//! main node that accepts what they output), side by side. A taken slot moves on to the next one.
//!
//! The `addNodes` operation applies the same rule ([`position_for_node`]) when it adds a node
//! whose position is already taken: the parallel `add_nodes` calls of one step all place their
//! node in the workflow as it was before the step.

use super::state::is_sub_node;
use crate::catalogue::{Catalogue, Ports};
use crate::workflow::{Workflow, WorkflowNode};
use serde_json::Value;

/// Position of the first node.
pub const FIRST_POSITION: [f64; 2] = [240.0, 300.0];
/// Horizontal distance between main nodes.
pub const HORIZONTAL_SPACING: f64 = 240.0;
/// Vertical distance between stacked triggers / between main row and sub-node row.
pub const VERTICAL_SPACING: f64 = 200.0;
/// Horizontal distance between sub-nodes of one parent.
pub const SUB_NODE_SPACING: f64 = 160.0;

/// What kind of node is being placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement<'a> {
    /// A trigger (group `trigger`).
    Trigger,
    /// A main node.
    Main,
    /// A sub-node with these output kinds (`ai_languageModel`, …).
    SubNode(&'a [&'a str]),
}

struct Placed<'a> {
    node: &'a WorkflowNode,
    ports: Option<Ports>,
    trigger: bool,
}

impl Placed<'_> {
    fn is_sub(&self) -> bool {
        self.ports.as_ref().is_some_and(is_sub_node)
    }
}

/// Whether a node of `wf` already sits at `[x, y]` (within one unit).
pub fn is_taken(wf: &Workflow, [x, y]: [f64; 2]) -> bool {
    taken(wf, x, y)
}

fn taken(wf: &Workflow, x: f64, y: f64) -> bool {
    wf.nodes.iter().any(|n| {
        let (nx, ny) = n.xy();
        (nx - x).abs() < 1.0 && (ny - y).abs() < 1.0
    })
}

/// The position for a new node of `placement` in `wf`.
pub fn position_for(catalogue: &Catalogue, wf: &Workflow, placement: Placement<'_>) -> [f64; 2] {
    let nodes: Vec<Placed<'_>> = wf
        .nodes
        .iter()
        .filter(|n| !n.is_sticky_note())
        .map(|n| {
            let params = Value::Object(n.parameters.clone());
            let ports = catalogue
                .ports(&n.node_type, Some(n.version()), &params)
                .and_then(Result::ok);
            let trigger = catalogue
                .get(&n.node_type, Some(n.version()))
                .is_some_and(|d| d.is_trigger());
            Placed {
                node: n,
                ports,
                trigger,
            }
        })
        .collect();
    if nodes.is_empty() {
        return FIRST_POSITION;
    }
    let main: Vec<&Placed<'_>> = nodes.iter().filter(|p| !p.is_sub()).collect();
    let (x, y, step_x, step_y) = match placement {
        Placement::Trigger => {
            let triggers: Vec<&&Placed<'_>> = main.iter().filter(|p| p.trigger).collect();
            if let Some(last) = triggers
                .iter()
                .max_by(|a, b| a.node.xy().1.total_cmp(&b.node.xy().1))
            {
                let (x, y) = last.node.xy();
                (x, y + VERTICAL_SPACING, 0.0, VERTICAL_SPACING)
            } else if let Some(left) = main
                .iter()
                .min_by(|a, b| a.node.xy().0.total_cmp(&b.node.xy().0))
            {
                let (x, y) = left.node.xy();
                (x - HORIZONTAL_SPACING, y, 0.0, VERTICAL_SPACING)
            } else {
                (FIRST_POSITION[0], FIRST_POSITION[1], 0.0, VERTICAL_SPACING)
            }
        }
        Placement::Main => {
            if let Some(right) = main
                .iter()
                .max_by(|a, b| a.node.xy().0.total_cmp(&b.node.xy().0))
            {
                let (x, y) = right.node.xy();
                (x + HORIZONTAL_SPACING, y, 0.0, VERTICAL_SPACING)
            } else {
                (FIRST_POSITION[0], FIRST_POSITION[1], 0.0, VERTICAL_SPACING)
            }
        }
        Placement::SubNode(kinds) => {
            // Likely parent: the last main node accepting one of the kinds; else the rightmost.
            let parent = main
                .iter()
                .rev()
                .find(|p| {
                    p.ports
                        .as_ref()
                        .is_some_and(|ports| kinds.iter().any(|k| ports.has_input(k)))
                })
                .or_else(|| {
                    main.iter()
                        .max_by(|a, b| a.node.xy().0.total_cmp(&b.node.xy().0))
                });
            match parent {
                Some(p) => {
                    let (x, y) = p.node.xy();
                    (x, y + VERTICAL_SPACING, SUB_NODE_SPACING, 0.0)
                }
                None => {
                    // Only sub-nodes so far: continue their row.
                    let (x, y) = nodes
                        .iter()
                        .map(|p| p.node.xy())
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                        .unwrap_or((FIRST_POSITION[0], FIRST_POSITION[1]));
                    (x, y, SUB_NODE_SPACING, 0.0)
                }
            }
        }
    };
    let (mut x, mut y) = (x, y);
    for _ in 0..1000 {
        if !taken(wf, x, y) {
            break;
        }
        x += step_x;
        y += step_y;
    }
    [x, y]
}

/// The position for `node` (not yet in `wf`), its [`Placement`] taken from the catalogue as
/// `add_nodes` does: a trigger, a sub-node (outputs without `main`, after its
/// `parameters`) or a main node (also for a type the catalogue does not know).
pub fn position_for_node(catalogue: &Catalogue, wf: &Workflow, node: &WorkflowNode) -> [f64; 2] {
    let desc = catalogue.get(&node.node_type, Some(node.version()));
    if desc.is_some_and(|d| d.is_trigger()) {
        return position_for(catalogue, wf, Placement::Trigger);
    }
    let params = Value::Object(node.parameters.clone());
    let ports = catalogue
        .ports(&node.node_type, Some(node.version()), &params)
        .and_then(Result::ok);
    match ports {
        Some(ports) if is_sub_node(&ports) => {
            let kinds = ports.output_kinds();
            position_for(catalogue, wf, Placement::SubNode(&kinds))
        }
        _ => position_for(catalogue, wf, Placement::Main),
    }
}

/// The first free slot from `start` going right by [`HORIZONTAL_SPACING`]: where a node lands
/// whose position is taken when its type cannot be looked up.
pub fn next_free_to_the_right(wf: &Workflow, start: [f64; 2]) -> [f64; 2] {
    let [mut x, y] = start;
    for _ in 0..1000 {
        if !taken(wf, x, y) {
            break;
        }
        x += HORIZONTAL_SPACING;
    }
    [x, y]
}
