//! Change logs: which channels a step (or a run) changed, and how, so that checkpoints store
//! only what changed and subgraphs hand back only what they wrote.

use crate::checkpoint::ChannelEntry;
use crate::ids::CheckpointId;
use crate::reducer::{overwrite, Storage};
use crate::schema::Schema;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub(crate) struct Change {
    /// The channel's version before the first change logged.
    pub base: Option<CheckpointId>,
    /// Writes since the base (or since the last reset).
    pub writes: Vec<Value>,
    /// The value was replaced wholesale (overwrite) at some point.
    pub reset: bool,
    /// The channel was emptied.
    pub cleared: bool,
}

/// Channel index → change.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChangeLog {
    pub map: BTreeMap<usize, Change>,
}

impl ChangeLog {
    fn entry(&mut self, ch: usize, base: Option<CheckpointId>) -> &mut Change {
        self.map.entry(ch).or_insert_with(|| Change {
            base,
            ..Change::default()
        })
    }

    /// Logs a write folded through the reducer (`keep` = remember the write itself).
    pub fn write(&mut self, ch: usize, base: Option<CheckpointId>, write: Option<Value>) {
        let e = self.entry(ch, base);
        e.cleared = false;
        if let Some(w) = write {
            e.writes.push(w);
        }
    }

    /// Logs a wholesale replacement.
    pub fn reset(&mut self, ch: usize, base: Option<CheckpointId>) {
        let e = self.entry(ch, base);
        e.reset = true;
        e.cleared = false;
        e.writes.clear();
    }

    /// Logs that the channel became empty.
    pub fn clear(&mut self, ch: usize, base: Option<CheckpointId>) {
        let e = self.entry(ch, base);
        e.cleared = true;
        e.reset = true;
        e.writes.clear();
    }

    /// The blobs to store for these changes (cleared channels get none: they leave the version
    /// map), with the channel indexes.
    pub fn entries(
        &self,
        schema: &Schema,
        values: &[Option<Arc<Value>>],
    ) -> Vec<(usize, Option<ChannelEntry>)> {
        self.map
            .iter()
            .map(|(&ch, c)| {
                let entry = match &values[ch] {
                    None => None,
                    Some(v) if c.reset || schema.channels[ch].storage() == Storage::Value => {
                        Some(ChannelEntry::Set((**v).clone()))
                    }
                    Some(_) => Some(ChannelEntry::Delta {
                        prev: c.base,
                        writes: c.writes.clone(),
                    }),
                };
                (ch, entry)
            })
            .collect()
    }

    /// The writes a subgraph hands back to its parent for these changes: replace channels give
    /// their final value, reset channels an overwrite of it, the others the writes themselves.
    pub fn parent_writes(
        &self,
        schema: &Schema,
        values: &[Option<Arc<Value>>],
    ) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for (&ch, c) in &self.map {
            let spec = &schema.channels[ch];
            let final_value = values[ch].as_deref().cloned().unwrap_or(Value::Null);
            if spec.reducer.is_replace() {
                out.push((spec.name.clone(), final_value));
            } else if c.reset {
                out.push((spec.name.clone(), overwrite(final_value)));
            } else {
                out.extend(c.writes.iter().map(|w| (spec.name.clone(), w.clone())));
            }
        }
        out
    }
}
