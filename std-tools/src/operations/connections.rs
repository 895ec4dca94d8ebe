//! Connection edits of a batch: merging new connections, and dropping those left pointing from
//! or to a missing node.

use super::apply::ApplyNote;
use crate::workflow::{Connections, Workflow};
use std::collections::HashSet;

/// Adds every connection of `new` to `wf` unless already present (per output slot).
pub(super) fn merge_connections(wf: &mut Workflow, new: &Connections) {
    for (source, by_type) in new {
        for (kind, outputs) in by_type {
            let existing = wf
                .connections
                .entry(source.clone())
                .or_default()
                .entry(kind.clone())
                .or_default();
            if existing.len() < outputs.len() {
                existing.resize_with(outputs.len(), || None);
            }
            for (i, slot) in outputs.iter().enumerate() {
                let Some(targets) = slot else { continue };
                let dest = existing[i].get_or_insert_with(Vec::new);
                for t in targets {
                    if !dest.contains(t) {
                        dest.push(t.clone());
                    }
                }
            }
        }
    }
}

/// Drops every connection whose source or target is not a node of `wf` (a connection queued in
/// the same batch as the removal of one of its ends), noting each. A missing source loses its
/// whole entry; a missing target is taken out of its slot (the slot stays, as on removeNode).
pub(super) fn drop_dangling_connections(wf: &mut Workflow, notes: &mut Vec<ApplyNote>) {
    let names: HashSet<&str> = wf.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut dropped = Vec::new();
    for (source, by_type) in &wf.connections {
        let source_missing = !names.contains(source.as_str());
        for (kind, outputs) in by_type {
            for (output, slot) in outputs.iter().enumerate() {
                for c in slot.iter().flatten() {
                    let missing = if source_missing {
                        source
                    } else if !names.contains(c.node.as_str()) {
                        &c.node
                    } else {
                        continue;
                    };
                    dropped.push(ApplyNote::DroppedConnection {
                        source: source.clone(),
                        connection_type: kind.clone(),
                        source_output: output,
                        target: c.node.clone(),
                        missing: missing.clone(),
                    });
                }
            }
        }
    }
    let missing_source = wf
        .connections
        .keys()
        .any(|source| !names.contains(source.as_str()));
    if dropped.is_empty() && !missing_source {
        return;
    }
    let names: HashSet<String> = names.into_iter().map(str::to_string).collect();
    wf.connections
        .retain(|source, _| names.contains(source.as_str()));
    for by_type in wf.connections.values_mut() {
        for slot in by_type.values_mut().flatten().flatten() {
            slot.retain(|c| names.contains(c.node.as_str()));
        }
    }
    notes.extend(dropped);
}
