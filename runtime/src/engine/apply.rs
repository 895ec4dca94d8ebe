//! Applying writes: the live channel values of a run, folded through their reducers.
//!
//! Every write — a task's, the run input's, `update_state`'s — passes the one write check
//! ([`check_write`]: type and reducer) and, within a step, the one conflict check
//! ([`WriteCheck`]: a `replace` channel takes one value per step).

use super::changes::ChangeLog;
use super::plan::TaskPlan;
use crate::checkpoint::ChannelEntry;
use crate::error::RunError;
use crate::graph::GraphInner;
use crate::ids::CheckpointId;
use crate::reducer::{as_overwrite, Scratch, Storage};
use crate::schema::{ChannelSpec, Schema};
use crate::state::StateView;
use crate::update::Update;
use crate::value_type::preview;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The one write check: an overwrite or a write to a `replace` channel must fit the channel's
/// type; any other write must suit its reducer. The error is the detail of the mismatch.
pub(super) fn check_write(spec: &ChannelSpec, value: &Value) -> Result<(), String> {
    match as_overwrite(value) {
        Some(v) => spec.ty.check(v).map_err(|e| e.to_string()),
        None if spec.reducer.is_replace() => spec.ty.check(value).map_err(|e| e.to_string()),
        None => spec
            .reducer
            .check_write(&spec.ty, value)
            .map_err(|e| e.to_string()),
    }
}

/// The writers of one step's `replace` channels, to refuse a second value.
pub(super) struct WriteCheck {
    step: i64,
    replace_writers: HashMap<usize, String>,
}

impl WriteCheck {
    /// A check for the writes of `step`.
    pub(super) fn new(step: i64) -> Self {
        WriteCheck {
            step,
            replace_writers: HashMap::new(),
        }
    }
}

/// What applying a step's writes produced besides the new values.
#[derive(Default)]
pub(super) struct Applied {
    /// The merged command of the tasks that addressed the parent graph.
    pub to_parent: Option<Update>,
    /// Channels written, by node (only recorded with a checkpointer).
    pub written_by: BTreeMap<String, BTreeSet<String>>,
    /// `updates` stream events, in task order (only when that mode is consumed).
    pub events: Vec<(String, Value)>,
}

/// The live values of one run's channels, their versions and what changed since the last
/// checkpoint.
pub(super) struct Channels {
    schema: Arc<Schema>,
    values: Vec<Option<Arc<Value>>>,
    /// Per-channel reducer scratch (indexes); emptied when a value changes another way.
    scratch: Vec<Scratch>,
    versions: BTreeMap<String, CheckpointId>,
    /// Changes since the last checkpoint (writes are kept only with a checkpointer).
    changes: ChangeLog,
    keep_deltas: bool,
    /// Everything the run wrote (a subgraph's hand-back), when tracked.
    written: Option<ChangeLog>,
}

impl Channels {
    /// The channels at their defaults.
    pub(super) fn new(schema: Arc<Schema>, keep_deltas: bool) -> Self {
        let values = schema
            .channels
            .iter()
            .map(|c| c.default.clone().map(Arc::new))
            .collect();
        let scratch = (0..schema.channels.len()).map(|_| None).collect();
        Channels {
            schema,
            values,
            scratch,
            versions: BTreeMap::new(),
            changes: ChangeLog::default(),
            keep_deltas,
            written: None,
        }
    }

    pub(super) fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    /// A snapshot for nodes and routes.
    pub(super) fn view(&self) -> StateView {
        StateView::new(self.schema.clone(), self.values.clone())
    }

    /// The output-schema state.
    pub(super) fn output(&self) -> Value {
        self.schema.output_object(&self.values)
    }

    /// The version of each channel in the latest checkpoint.
    pub(super) fn versions(&self) -> &BTreeMap<String, CheckpointId> {
        &self.versions
    }

    /// Sets a channel loaded from a checkpoint.
    pub(super) fn restore(&mut self, ch: usize, value: Option<Value>, scratch: Scratch) {
        self.values[ch] = value.map(Arc::new);
        self.scratch[ch] = scratch;
    }

    /// Sets the versions loaded from a checkpoint.
    pub(super) fn restore_versions(&mut self, versions: BTreeMap<String, CheckpointId>) {
        self.versions = versions;
    }

    /// Starts tracking everything written from now on (see [`Channels::take_written`]).
    pub(super) fn track_written(&mut self) {
        self.written = Some(ChangeLog::default());
    }

    /// What was written since [`Channels::track_written`], if tracked.
    pub(super) fn take_written(&mut self) -> Option<ChangeLog> {
        self.written.take()
    }

    /// The writes a subgraph hands back for `log` (see [`ChangeLog::parent_writes`]).
    pub(super) fn parent_writes(&self, log: &ChangeLog) -> Vec<(String, Value)> {
        log.parent_writes(&self.schema, &self.values)
    }

    /// The blobs of the changes since the last checkpoint, stored as checkpoint `id`: the
    /// versions move to `id` (emptied channels leave the map) and the log starts over.
    pub(super) fn commit(&mut self, id: CheckpointId) -> Vec<(String, ChannelEntry)> {
        let entries = self.changes.entries(&self.schema, &self.values);
        self.changes = ChangeLog::default();
        let mut blobs = Vec::with_capacity(entries.len());
        for (ch, entry) in entries {
            let name = self.schema.channels[ch].name.clone();
            match entry {
                Some(e) => {
                    self.versions.insert(name.clone(), id);
                    blobs.push((name, e));
                }
                None => {
                    self.versions.remove(&name);
                }
            }
        }
        blobs
    }

    /// Forgets the changes since the last checkpoint (a run without a store).
    pub(super) fn discard_changes(&mut self) {
        self.changes = ChangeLog::default();
    }

    /// Applies a completed step's updates in task order; then empties the ephemeral channels
    /// the step did not write. Updates addressed to the parent are merged, not applied.
    pub(super) fn apply_step(
        &mut self,
        g: &GraphInner,
        root: bool,
        check: &mut WriteCheck,
        plans: &[TaskPlan],
        updates: &mut [(Update, bool)],
        stream_updates: bool,
    ) -> Result<Applied, RunError> {
        let mut out = Applied::default();
        let mut wrote: BTreeSet<usize> = BTreeSet::new();
        for (plan, (update, cached)) in plans.iter().zip(updates.iter_mut()) {
            let name = &g.nodes[plan.node].name;
            let writes = std::mem::take(&mut update.writes);
            if update.to_parent {
                if root {
                    return Err(RunError::UnknownTarget {
                        from: name.clone(),
                        target: "the parent graph".into(),
                        known: "none: this is the root graph".into(),
                    });
                }
                let merged = out.to_parent.get_or_insert_with(Update::new);
                merged.writes.extend(writes);
                merged.goto.extend(update.goto.iter().cloned());
                continue;
            }
            if stream_updates {
                let mut obj: Map<String, Value> = writes.iter().cloned().collect();
                if *cached {
                    obj.insert("__metadata__".into(), serde_json::json!({"cached": true}));
                }
                out.events.push((name.clone(), Value::Object(obj)));
            }
            let chans = self.apply(name, writes, check)?;
            wrote.extend(chans.iter().copied());
            if self.keep_deltas {
                out.written_by
                    .entry(name.clone())
                    .or_default()
                    .extend(chans.iter().map(|&c| self.schema.channels[c].name.clone()));
            }
        }
        self.clear_ephemeral(&wrote);
        Ok(out)
    }

    /// Applies one writer's writes through the reducers. Returns the channels written.
    pub(super) fn apply(
        &mut self,
        node: &str,
        writes: Vec<(String, Value)>,
        check: &mut WriteCheck,
    ) -> Result<Vec<usize>, RunError> {
        let schema = self.schema.clone();
        let mut chans = Vec::with_capacity(writes.len());
        for (channel, mut value) in writes {
            let Some(ch) = schema.index_of(&channel) else {
                let known: Vec<&str> = schema.channels.iter().map(|c| c.name.as_str()).collect();
                return Err(RunError::UnknownChannel {
                    node: node.into(),
                    channel,
                    known: known.join(", "),
                });
            };
            let spec = &schema.channels[ch];
            check_write(spec, &value).map_err(|detail| RunError::TypeMismatch {
                node: node.into(),
                channel: spec.name.clone(),
                ty: spec.ty.to_string(),
                value: preview(as_overwrite(&value).unwrap_or(&value), 120),
                detail,
            })?;
            let base = self.versions.get(&spec.name).copied();
            if let Some(v) = as_overwrite(&value) {
                self.values[ch] = Some(Arc::new(v.clone()));
                self.scratch[ch] = None;
                if self.keep_deltas {
                    self.changes.reset(ch, base);
                }
                if let Some(w) = &mut self.written {
                    w.reset(ch, None);
                }
                chans.push(ch);
                continue;
            }
            if spec.reducer.is_replace() {
                if let Some(first) = check.replace_writers.get(&ch) {
                    // The first write of the step is the channel's value now.
                    let first_value = self.values[ch].as_deref().unwrap_or(&Value::Null);
                    return Err(RunError::ConflictingWrites {
                        channel: spec.name.clone(),
                        step: check.step,
                        first_writer: first.clone(),
                        first_value: preview(first_value, 120),
                        second_writer: node.into(),
                        second_value: preview(&value, 120),
                    });
                }
                check.replace_writers.insert(ch, node.to_string());
            }
            let reducer_err = |message: String| RunError::Reducer {
                node: node.into(),
                channel: spec.name.clone(),
                reducer: spec.reducer.name().into(),
                message,
            };
            spec.reducer
                .prepare(&mut value)
                .map_err(|e| reducer_err(e.0))?;
            let delta = spec.storage() == Storage::Deltas;
            let log_write = (self.keep_deltas && delta).then(|| value.clone());
            let written_copy = self.written.as_ref().map(|_| value.clone());
            let mut current = self.values[ch]
                .take()
                .map(|a| Arc::try_unwrap(a).unwrap_or_else(|a| (*a).clone()));
            let res = spec
                .reducer
                .apply_with(&mut current, value, &mut self.scratch[ch]);
            self.values[ch] = current.map(Arc::new);
            res.map_err(|e| reducer_err(e.0))?;
            if self.keep_deltas {
                self.changes.write(ch, base, log_write);
            }
            if let Some(w) = &mut self.written {
                w.write(ch, None, written_copy);
            }
            chans.push(ch);
        }
        Ok(chans)
    }

    /// Empties ephemeral channels that were not written in this step.
    fn clear_ephemeral(&mut self, wrote: &BTreeSet<usize>) {
        for (ch, spec) in self.schema.channels.iter().enumerate() {
            if spec.ephemeral && !wrote.contains(&ch) && self.values[ch].is_some() {
                self.values[ch] = None;
                self.scratch[ch] = None;
                let base = self.versions.get(&spec.name).copied();
                self.changes.clear(ch, base);
            }
        }
    }

    /// The names of channels by index.
    pub(super) fn names(&self, chans: &[usize]) -> Vec<String> {
        chans
            .iter()
            .map(|&c| self.schema.channels[c].name.clone())
            .collect()
    }
}

/// Whether `v` is a valid run input for `g`: an object (or null) of input channels whose values
/// pass the write check. Checked before anything is written.
pub(super) fn check_input(g: &GraphInner, v: &Value) -> Result<(), RunError> {
    let map = match v {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        other => {
            return Err(RunError::InvalidInput(format!(
                "the input must be a JSON object of channel values, got {}",
                preview(other, 60)
            )))
        }
    };
    let accepted = g.schema.input_keys();
    if let Some(bad) = map.keys().find(|k| !accepted.contains(&k.as_str())) {
        return Err(RunError::InvalidInput(format!(
            "`{bad}` is not an input of graph `{}`; it accepts: {}",
            g.name,
            accepted.join(", ")
        )));
    }
    // Types too, before the input checkpoint is written: a bad value must not leave a thread
    // whose next resume fails on it again.
    for (key, value) in map {
        let Some(ch) = g.schema.index_of(key) else {
            continue;
        };
        let spec = &g.schema.channels[ch];
        let checked = check_write(spec, value).and_then(|()| {
            if as_overwrite(value).is_some() || spec.reducer.is_replace() {
                return Ok(());
            }
            spec.reducer.prepare(&mut value.clone()).map_err(|e| e.0)
        });
        if let Err(detail) = checked {
            return Err(RunError::InvalidInput(format!(
                "input `{key}` of graph `{}` must be {}, got {}: {detail}",
                g.name,
                spec.ty,
                preview(value, 60)
            )));
        }
    }
    Ok(())
}
