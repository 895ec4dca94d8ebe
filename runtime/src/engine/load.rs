//! Starting a run: loading a thread from its checkpoint, applying input or resume values, and
//! running subgraphs in their own namespace.

use super::changes::ChangeLog;
use super::{interrupts_of, Input, Resume, Run, RunShared, RunStatus};
use crate::checkpoint::{special, ChannelEntry, Checkpoint, ListQuery, PendingTask, Source};
use crate::error::RunError;
use crate::graph::{GraphInner, Target};
use crate::ids::CheckpointId;
use crate::node::{NodeError, TaskContext};
use crate::reducer::Storage;
use crate::stream::{EventKind, Mode};
use crate::subgraph::Subgraph;
use crate::update::{Update, START};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

impl Run {
    /// Loads the thread's checkpoint (`id`, or the newest); a no-op for a new thread.
    pub async fn load(&mut self, id: Option<CheckpointId>) -> Result<Option<Checkpoint>, RunError> {
        let Some(cp) = self.shared.checkpointer.clone() else {
            return match id {
                Some(_) => Err(RunError::NoCheckpointer("loading a checkpoint")),
                None => Ok(None),
            };
        };
        let Some(tuple) = cp.get(&self.shared.thread, &self.ns_key, id).await? else {
            return match id {
                Some(id) => Err(RunError::CheckpointNotFound {
                    thread: self.shared.thread.to_string(),
                    id,
                }),
                None => Ok(None),
            };
        };
        let c = tuple.checkpoint;
        if c.schema_version != self.g.schema.version {
            return Err(RunError::SchemaMismatch {
                thread: self.shared.thread.to_string(),
                stored: c.schema_version.clone(),
                current: self.g.schema.version.clone(),
            });
        }
        let schema = self.g.schema.clone();
        for (name, version) in &c.channel_versions {
            let Some(ch) = schema.index_of(name) else {
                continue;
            };
            let spec = &schema.channels[ch];
            let entries = cp
                .channel_entries(&self.shared.thread, &self.ns_key, name, *version)
                .await?;
            let mut cur = spec.default.clone();
            let mut scratch = None;
            for (_, e) in entries {
                match e {
                    ChannelEntry::Set(v) => {
                        cur = Some(v);
                        scratch = None;
                    }
                    ChannelEntry::Clear => {
                        cur = None;
                        scratch = None;
                    }
                    ChannelEntry::Delta { writes, .. } => {
                        for w in writes {
                            spec.reducer
                                .apply_with(&mut cur, w, &mut scratch)
                                .map_err(|e| RunError::Reducer {
                                    node: "checkpoint".into(),
                                    channel: name.clone(),
                                    reducer: spec.reducer.name().into(),
                                    message: e.0,
                                })?;
                        }
                    }
                }
            }
            self.values[ch] = cur.map(Arc::new);
            self.scratch[ch] = scratch;
        }
        self.versions = c.channel_versions.clone();
        self.barriers = c.barriers.clone();
        self.next = c.next.clone();
        self.step = c.step;
        self.parent = Some(c.id);
        self.pending = tuple.pending_writes;
        self.event_seq = self
            .pending
            .iter()
            .filter(|w| w.channel == special::SEQ.0)
            .filter_map(|w| w.value.as_u64())
            .fold(c.event_seq, u64::max);
        Ok(Some(c))
    }

    /// Applies the run's input, or prepares a resume. `loaded` is what [`Run::load`] returned;
    /// `strict` checks resume values against the pending interrupts (off inside subgraphs, which
    /// receive the root's whole resume map).
    pub async fn begin(
        &mut self,
        input: Input,
        loaded: Option<&Checkpoint>,
        strict: bool,
    ) -> Result<(), RunError> {
        // A fork continuing from an input checkpoint re-applies that input (below).
        if let (Some(c), Input::Continue | Input::Resume(_)) = (loaded, &input) {
            if self.fork_requested {
                self.step = c.step + 1;
                self.pending.clear();
                self.save(Source::Fork, None, Map::new()).await?;
            }
        }
        match input {
            Input::Values(v) => {
                self.check_input(&v)?;
                self.step = if loaded.is_some() { self.step + 1 } else { -1 };
                self.next = vec![PendingTask {
                    node: START.into(),
                    payload: None,
                }];
                self.save(Source::Input, Some(v.clone()), Map::new())
                    .await?;
                self.apply_input(v).await
            }
            Input::Continue | Input::Resume(_) => {
                let Some(c) = loaded else {
                    return Err(match self.shared.checkpointer {
                        Some(_) => RunError::NothingToResume(self.shared.thread.to_string()),
                        None => RunError::NoCheckpointer("resuming"),
                    });
                };
                if c.source == Source::Input {
                    if let Some(v) = c.input.clone() {
                        return self.apply_input(v).await;
                    }
                }
                let mut merged: BTreeMap<String, Value> = self
                    .pending
                    .iter()
                    .filter(|w| w.channel == special::RESUME.0)
                    .filter_map(|w| {
                        serde_json::from_value::<BTreeMap<String, Value>>(w.value.clone()).ok()
                    })
                    .flatten()
                    .collect();
                merged.extend(
                    self.shared
                        .resume
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                if let Input::Resume(r) = input {
                    let fresh = self.resolve_resume(r, strict)?;
                    merged.extend(fresh);
                    if let (Some(cp), Some(parent)) =
                        (self.shared.checkpointer.clone(), self.parent)
                    {
                        let v = serde_json::to_value(&merged).unwrap_or(Value::Null);
                        cp.put_writes(
                            &self.shared.thread,
                            &self.ns_key,
                            parent,
                            special::RESUME.0,
                            &[(special::RESUME.0.into(), v)],
                        )
                        .await?;
                    }
                }
                self.resume = Arc::new(merged);
                self.skip_before_once = true;
                if self.emitter.enabled(Mode::Values) {
                    self.emitter
                        .emit(None, EventKind::Values(self.output()))
                        .await;
                }
                Ok(())
            }
        }
    }

    fn resolve_resume(&self, r: Resume, strict: bool) -> Result<BTreeMap<String, Value>, RunError> {
        let pending = interrupts_of(&self.pending);
        let ids = || {
            pending
                .iter()
                .map(|i| format!("{} ({})", i.id, i.node))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match r {
            Resume::Value(v) => match pending.len() {
                0 => Err(RunError::Resume(format!(
                    "thread {:?} has no pending interrupt to answer; resume without a value to continue",
                    &*self.shared.thread
                ))),
                1 => Ok(BTreeMap::from([(pending[0].id.clone(), v)])),
                n => Err(RunError::Resume(format!(
                    "{n} interrupts are pending; resume with a map from interrupt id to value. Pending: {}",
                    ids()
                ))),
            },
            Resume::ById(map) => {
                if strict {
                    if let Some(bad) = map.keys().find(|k| !pending.iter().any(|i| &&i.id == k)) {
                        return Err(RunError::Resume(format!(
                            "no pending interrupt has id {bad}; pending: {}",
                            if pending.is_empty() { "none".to_string() } else { ids() }
                        )));
                    }
                }
                Ok(map)
            }
        }
    }

    fn check_input(&self, v: &Value) -> Result<(), RunError> {
        check_input(&self.g, v)
    }

    /// Applies the input as the writes of `__start__` and plans the entry nodes.
    async fn apply_input(&mut self, v: Value) -> Result<(), RunError> {
        let writes: Vec<(String, Value)> = match v {
            Value::Object(m) => m.into_iter().collect(),
            _ => Vec::new(),
        };
        self.step += 1;
        let chans = self.apply_writes(START, writes, &mut HashMap::new(), self.step)?;
        self.plan_start()?;
        let names: BTreeSet<String> = chans
            .iter()
            .map(|&c| self.g.schema.channels[c].name.clone())
            .collect();
        let mut meta = Map::new();
        meta.insert("writes".into(), json!({ START: names }));
        if self.emitter.enabled(Mode::Values) {
            self.emitter
                .emit(None, EventKind::Values(self.output()))
                .await;
        }
        self.save(Source::Loop, None, meta).await
    }

    /// Plans the nodes that START leads to.
    pub(crate) fn plan_start(&mut self) -> Result<(), RunError> {
        let mut pull = BTreeSet::new();
        let mut push = Vec::new();
        for t in &self.g.start_edges {
            if let Target::Node(i) = t {
                pull.insert(*i);
            }
        }
        if !self.g.start_routes.is_empty() {
            let view = self.view();
            let graph = self.g.clone();
            for route in &graph.start_routes {
                let targets = (route.func)(&view).map_err(|e| RunError::NodeFailed {
                    node: START.into(),
                    step: self.step,
                    thread: self.shared.thread.to_string(),
                    ns: self.ns.clone(),
                    message: format!("route failed: {e}"),
                    code: None,
                })?;
                for g in targets.0 {
                    self.add_goto(START, g, &mut pull, &mut push)?;
                }
            }
        }
        self.set_next(pull, push);
        Ok(())
    }

    /// For a subgraph resumed across runs: what it wrote since its first step, rebuilt from its
    /// checkpoints.
    async fn written_since_start(&self) -> Result<ChangeLog, RunError> {
        let mut log = ChangeLog::default();
        let Some(cp) = self.shared.checkpointer.clone() else {
            return Ok(log);
        };
        let mut filter = Map::new();
        filter.insert("source".into(), json!("loop"));
        filter.insert("step".into(), json!(0));
        let q = ListQuery {
            ns: Some(self.ns_key.clone()),
            filter,
            before: None,
            limit: Some(1),
        };
        let base_versions = cp
            .list(&self.shared.thread, &q)
            .await?
            .pop()
            .map(|t| t.checkpoint.channel_versions)
            .unwrap_or_default();
        for (name, version) in &self.versions {
            let Some(ch) = self.g.schema.index_of(name) else {
                continue;
            };
            let base = base_versions.get(name).copied();
            if base == Some(*version) {
                continue;
            }
            let spec = &self.g.schema.channels[ch];
            let entries = cp
                .channel_entries(&self.shared.thread, &self.ns_key, name, *version)
                .await?;
            let newer: Vec<ChannelEntry> = entries
                .into_iter()
                .filter(|(id, _)| base.is_none_or(|b| *id > b))
                .map(|(_, e)| e)
                .collect();
            let reset = spec.reducer.is_replace()
                || spec.storage() == Storage::Value
                || newer
                    .iter()
                    .any(|e| !matches!(e, ChannelEntry::Delta { .. }));
            if reset {
                log.reset(ch, None);
            } else {
                for e in newer {
                    if let ChannelEntry::Delta { writes, .. } = e {
                        for w in writes {
                            log.write(ch, None, Some(w));
                        }
                    }
                }
            }
        }
        Ok(log)
    }
}

fn node_error(e: RunError) -> NodeError {
    match e {
        RunError::Cancelled(_) => NodeError::Cancelled,
        other => NodeError::fatal(other.to_string()),
    }
}

/// Runs a subgraph task: namespace `node:task_id`, state mapped in and out, resumed from its own
/// checkpoint when the parent step is re-run, and only the keys it wrote handed back.
pub(crate) async fn run_subgraph(sub: &Subgraph, ctx: TaskContext) -> Result<Update, NodeError> {
    // The child shares the run's store, thread and token; the resume answers are the ones its
    // parent task received (the root's whole map: ids are unique across namespaces).
    let shared = Arc::new(match &ctx.run {
        Some(s) => RunShared {
            checkpointer: s.checkpointer.clone(),
            thread: s.thread.clone(),
            durability: s.durability,
            cancel: s.cancel.clone(),
            resume: ctx.resume.clone(),
            recursion_limit: s.recursion_limit,
            run_id: s.run_id.clone(),
            configurable: s.configurable.clone(),
        },
        None => RunShared {
            checkpointer: None,
            thread: ctx.thread_id.clone(),
            durability: super::Durability::Sync,
            cancel: ctx.cancel.clone(),
            resume: ctx.resume.clone(),
            recursion_limit: None,
            run_id: Arc::from(""),
            configurable: Arc::default(),
        },
    });
    let segment = format!("{}:{}", ctx.node, ctx.task_id);
    let mut ns = ctx.ns.to_vec();
    ns.push(segment.clone());
    let mut run = Run::new(
        sub.graph().inner.clone(),
        shared,
        ns,
        ctx.emitter.child(segment),
    );
    let loaded = run.load(None).await.map_err(node_error)?;
    let status = match &loaded {
        Some(c) => {
            if c.next.is_empty() && c.source != Source::Input {
                RunStatus::Done
            } else {
                run.begin(Input::Continue, Some(c), false)
                    .await
                    .map_err(node_error)?;
                run.run_loop().await.map_err(node_error)?
            }
        }
        None => {
            let input = sub.input_for(&ctx)?;
            run.begin(Input::Values(input), None, false)
                .await
                .map_err(node_error)?;
            run.written = Some(ChangeLog::default());
            run.run_loop().await.map_err(node_error)?
        }
    };
    run.finish_storage().await.map_err(node_error)?;
    if let RunStatus::Interrupted { interrupts, .. } = status {
        return Err(NodeError::Interrupted(interrupts));
    }
    let written = match run.written.take() {
        Some(w) => w,
        None => run.written_since_start().await.map_err(node_error)?,
    };
    let mut update = Update::new();
    match sub.output_map() {
        Some(f) => update.writes = f(&run.view().to_object())?,
        None => {
            let parent = ctx.state().schema();
            update.writes = written
                .parent_writes(&run.g.schema, &run.values)
                .into_iter()
                .filter(|(k, _)| parent.index_of(k).is_some())
                .collect();
        }
    }
    if let Some(pc) = run.parent_command.take() {
        update.writes.extend(pc.writes);
        update.goto.extend(pc.goto);
    }
    Ok(update)
}

/// Whether `v` is a valid run input for `g`: an object (or null) of input channels with values
/// of the right types. Checked before anything is written.
fn check_input(g: &GraphInner, v: &Value) -> Result<(), RunError> {
    match v {
        Value::Null => Ok(()),
        Value::Object(map) => {
            let accepted = g.schema.input_keys();
            if let Some(bad) = map.keys().find(|k| !accepted.contains(&k.as_str())) {
                return Err(RunError::InvalidInput(format!(
                    "`{bad}` is not an input of graph `{}`; it accepts: {}",
                    g.name,
                    accepted.join(", ")
                )));
            }
            // Types too, before the input checkpoint is written: a bad value must not
            // leave a thread whose next resume fails on it again.
            for (key, value) in map {
                let Some(ch) = g.schema.index_of(key) else {
                    continue;
                };
                let spec = &g.schema.channels[ch];
                let checked = match crate::reducer::as_overwrite(value) {
                    Some(v) => spec.ty.check(v).map_err(|e| e.to_string()),
                    None if spec.reducer.is_replace() => {
                        spec.ty.check(value).map_err(|e| e.to_string())
                    }
                    None => spec
                        .reducer
                        .check_write(&spec.ty, value)
                        .map_err(|e| e.to_string())
                        .and_then(|()| spec.reducer.prepare(&mut value.clone()).map_err(|e| e.0)),
                };
                if let Err(detail) = checked {
                    return Err(RunError::InvalidInput(format!(
                        "input `{key}` of graph `{}` must be {}, got {}: {detail}",
                        g.name,
                        spec.ty,
                        crate::value_type::preview(value, 60)
                    )));
                }
            }
            Ok(())
        }
        other => Err(RunError::InvalidInput(format!(
            "the input must be a JSON object of channel values, got {}",
            crate::value_type::preview(other, 60)
        ))),
    }
}

impl crate::graph::CompiledGraph {
    /// Checks a run input as a run would, before anything is written: an object (or null)
    /// naming only input channels, each value of its channel's type (for servers that want to
    /// answer 400 instead of starting a run that fails).
    pub fn check_input(&self, input: &Value) -> Result<(), RunError> {
        check_input(&self.inner, input)
    }
}
