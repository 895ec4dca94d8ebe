//! Executing a step's tasks and applying their writes in deterministic order.

use super::{decode_update, task, Run, TaskEnd, TaskPlan};
use crate::checkpoint::kv::writes_by_task;
use crate::checkpoint::{PendingTask, Source};
use crate::error::RunError;
use crate::graph::Target;
use crate::node::{NodeError, TaskContext};
use crate::reducer::as_overwrite;
use crate::stream::{DebugEvent, EventKind, Mode};
use crate::update::{Goto, Update};
use crate::value_type::preview;
use futures::StreamExt;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

impl Run {
    /// Runs the step's tasks concurrently; finished tasks saved as pending writes are reused.
    pub(super) async fn execute(&mut self, step: i64, plans: &mut [TaskPlan]) -> Vec<TaskEnd> {
        let cached: HashMap<&str, Update> = writes_by_task(&self.pending)
            .into_iter()
            .filter_map(|(task, writes)| decode_update(&writes).map(|u| (task, u)))
            .collect();
        let snapshot = self.view();
        let ns = Arc::new(self.ns.clone());
        let mut ends: Vec<Option<TaskEnd>> = Vec::with_capacity(plans.len());
        let mut jobs = Vec::new();
        if self.node_counts.len() < self.g.nodes.len() {
            self.node_counts.resize(self.g.nodes.len(), 0);
        }
        for (i, plan) in plans.iter_mut().enumerate() {
            if let Some(update) = cached.get(plan.id.as_str()) {
                ends.push(Some(TaskEnd::Done {
                    update: update.clone(),
                    cached: true,
                }));
                if self.emitter.enabled(Mode::Debug) {
                    let ev = DebugEvent::TaskEnd {
                        step,
                        task_id: plan.id.clone(),
                        error: None,
                        cached: true,
                    };
                    self.emitter
                        .emit(Some(&self.g.nodes[plan.node].name), EventKind::Debug(ev))
                        .await;
                }
                continue;
            }
            ends.push(None);
            self.node_counts[plan.node] += 1;
            self.stats.tasks += 1;
            let entry = &self.g.nodes[plan.node];
            let ctx = TaskContext {
                state: snapshot.clone(),
                payload: plan.payload.take(),
                node: entry.label.clone(),
                task_id: Arc::from(plan.id.as_str()),
                step,
                ns: ns.clone(),
                thread_id: self.shared.thread.clone(),
                emitter: self.emitter.clone(),
                cancel: self.shared.cancel.clone(),
                resume: self.resume.clone(),
                interrupt_calls: Arc::new(AtomicUsize::new(0)),
                run: Some(self.shared.clone()),
            };
            jobs.push((i, entry.node.clone(), ctx, entry.options.clone()));
        }
        drop(snapshot);
        if jobs.len() == 1 {
            if let Some((i, node, ctx, options)) = jobs.pop() {
                ends[i] = Some(task::run_task(node, ctx, options).await);
            }
        } else if jobs.len() <= spawn_limit() {
            let handles: Vec<(usize, tokio::task::JoinHandle<TaskEnd>)> = jobs
                .into_iter()
                .map(|(i, node, ctx, options)| {
                    (i, tokio::spawn(task::run_task(node, ctx, options)))
                })
                .collect();
            for (i, h) in handles {
                ends[i] = Some(h.await.unwrap_or_else(|e| {
                    TaskEnd::Failed(NodeError::fatal(format!("task panicked: {e}")))
                }));
            }
        } else {
            // A wide step (map-reduce over thousands of items): a few spawned groups, each
            // driving its share of the tasks concurrently (up to GROUP_CONCURRENCY at a time, so
            // the futures of a 10 000-task step are not all alive at once).
            let chunk = jobs.len().div_ceil(spawn_limit());
            let mut groups = Vec::new();
            let mut rest = jobs.into_iter();
            loop {
                let part: Vec<_> = rest.by_ref().take(chunk).collect();
                if part.is_empty() {
                    break;
                }
                groups.push(tokio::spawn(run_group(part)));
            }
            for g in groups {
                match g.await {
                    Ok(results) => {
                        for (i, r) in results {
                            ends[i] = Some(r);
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "a task group failed"),
                }
            }
        }
        ends.into_iter()
            .map(|e| {
                e.unwrap_or_else(|| TaskEnd::Failed(NodeError::fatal("task produced no result")))
            })
            .collect()
    }

    /// Applies a completed step: writes in task order, then the next tasks, then a checkpoint.
    pub(super) async fn apply_step(
        &mut self,
        step: i64,
        plans: &[TaskPlan],
        mut updates: Vec<(Update, bool)>,
    ) -> Result<(), RunError> {
        let mut replace_writers: HashMap<usize, String> = HashMap::new();
        let record = self.shared.checkpointer.is_some();
        let mut written_by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut wrote_this_step: BTreeSet<usize> = BTreeSet::new();
        let mut to_parent: Option<Update> = None;
        let streaming_updates = self.emitter.enabled(Mode::Updates);
        let mut update_events = Vec::new();
        for (plan, (update, cached)) in plans.iter().zip(updates.iter_mut()) {
            let name = self.g.nodes[plan.node].name.clone();
            let writes = std::mem::take(&mut update.writes);
            if update.to_parent {
                if self.ns.is_empty() {
                    return Err(RunError::UnknownTarget {
                        from: name,
                        target: "the parent graph".into(),
                        known: "none: this is the root graph".into(),
                    });
                }
                let merged = to_parent.get_or_insert_with(Update::new);
                merged.writes.extend(writes);
                merged.goto.extend(update.goto.iter().cloned());
                continue;
            }
            if streaming_updates {
                let mut obj = Map::new();
                for (k, v) in &writes {
                    obj.insert(k.clone(), v.clone());
                }
                if *cached {
                    obj.insert("__metadata__".into(), serde_json::json!({"cached": true}));
                }
                update_events.push((name.clone(), Value::Object(obj)));
            }
            let chans = self.apply_writes(&name, writes, &mut replace_writers, step)?;
            wrote_this_step.extend(chans.iter().copied());
            if record {
                let entry = written_by.entry(name).or_default();
                entry.extend(
                    chans
                        .iter()
                        .map(|&c| self.g.schema.channels[c].name.clone()),
                );
            }
        }
        self.clear_ephemeral(&wrote_this_step);
        self.plan_next(plans, &mut updates)?;
        if let Some(u) = to_parent {
            self.parent_command = Some(u);
        }
        self.step = step;
        let mut meta = Map::new();
        if record {
            meta.insert(
                "writes".into(),
                serde_json::to_value(&written_by).unwrap_or(Value::Null),
            );
        }
        for (node, data) in update_events {
            self.emitter
                .emit(
                    Some(&node),
                    EventKind::Updates(serde_json::json!({ node.clone(): data })),
                )
                .await;
        }
        if self.emitter.enabled(Mode::Values) {
            self.emitter
                .emit(None, EventKind::Values(self.output()))
                .await;
        }
        self.save(Source::Loop, None, meta).await
    }

    /// Applies one task's writes through the reducers. Returns the channels written.
    pub(crate) fn apply_writes(
        &mut self,
        node: &str,
        writes: Vec<(String, Value)>,
        replace_writers: &mut HashMap<usize, String>,
        step: i64,
    ) -> Result<Vec<usize>, RunError> {
        let schema = self.g.schema.clone();
        let keep_deltas = self.shared.checkpointer.is_some();
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
            let base = self.versions.get(&spec.name).copied();
            let type_err = |detail: String, value: &Value| RunError::TypeMismatch {
                node: node.into(),
                channel: spec.name.clone(),
                ty: spec.ty.to_string(),
                value: preview(value, 120),
                detail,
            };
            if let Some(v) = as_overwrite(&value) {
                spec.ty.check(v).map_err(|e| type_err(e.to_string(), v))?;
                self.values[ch] = Some(Arc::new(v.clone()));
                self.scratch[ch] = None;
                if keep_deltas {
                    self.changes.reset(ch, base);
                }
                if let Some(w) = &mut self.written {
                    w.reset(ch, None);
                }
                chans.push(ch);
                continue;
            }
            if spec.reducer.is_replace() {
                spec.ty
                    .check(&value)
                    .map_err(|e| type_err(e.to_string(), &value))?;
                if let Some(first) = replace_writers.get(&ch) {
                    // The first write of the step is the channel's value now.
                    let first_value = self.values[ch].as_deref().unwrap_or(&Value::Null);
                    return Err(RunError::ConflictingWrites {
                        channel: spec.name.clone(),
                        step,
                        first_writer: first.clone(),
                        first_value: preview(first_value, 120),
                        second_writer: node.into(),
                        second_value: preview(&value, 120),
                    });
                }
                replace_writers.insert(ch, node.to_string());
            } else {
                spec.reducer
                    .check_write(&spec.ty, &value)
                    .map_err(|e| type_err(e.to_string(), &value))?;
            }
            spec.reducer
                .prepare(&mut value)
                .map_err(|e| RunError::Reducer {
                    node: node.into(),
                    channel: spec.name.clone(),
                    reducer: spec.reducer.name().into(),
                    message: e.0,
                })?;
            let delta = spec.storage() == crate::reducer::Storage::Deltas;
            let log_write = (keep_deltas && delta).then(|| value.clone());
            let written_copy = self.written.as_ref().map(|_| value.clone());
            let mut current = self.values[ch]
                .take()
                .map(|a| Arc::try_unwrap(a).unwrap_or_else(|a| (*a).clone()));
            let res = spec
                .reducer
                .apply_with(&mut current, value, &mut self.scratch[ch]);
            self.values[ch] = current.map(Arc::new);
            res.map_err(|e| RunError::Reducer {
                node: node.into(),
                channel: spec.name.clone(),
                reducer: spec.reducer.name().into(),
                message: e.0,
            })?;
            if keep_deltas {
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
        for (ch, spec) in self.g.schema.channels.iter().enumerate() {
            if spec.ephemeral && !wrote.contains(&ch) && self.values[ch].is_some() {
                self.values[ch] = None;
                self.scratch[ch] = None;
                let base = self.versions.get(&spec.name).copied();
                self.changes.clear(ch, base);
            }
        }
    }

    /// Computes the next step's tasks from edges, commands, joins and routes.
    pub(crate) fn plan_next(
        &mut self,
        plans: &[TaskPlan],
        updates: &mut [(Update, bool)],
    ) -> Result<(), RunError> {
        let mut pull: BTreeSet<usize> = BTreeSet::new();
        let mut push: Vec<PendingTask> = Vec::new();
        let mut ran: Vec<usize> = Vec::new();
        let mut ran_set: BTreeSet<usize> = BTreeSet::new();
        for (plan, (update, _)) in plans.iter().zip(updates.iter_mut()) {
            let from = plan.node;
            for t in &self.g.edges[from] {
                if let Target::Node(i) = t {
                    pull.insert(*i);
                }
            }
            if !update.to_parent {
                for g in std::mem::take(&mut update.goto) {
                    self.add_goto(&self.g.nodes[from].name, g, &mut pull, &mut push)?;
                }
            }
            for &j in &self.g.joins_by_source[from] {
                let join = &self.g.joins[j];
                let arrived = self.barriers.entry(join.key.clone()).or_default();
                let name = &self.g.nodes[from].name;
                if !arrived.contains(name) {
                    arrived.push(name.clone());
                    arrived.sort();
                }
            }
            if ran_set.insert(from) {
                ran.push(from);
            }
        }
        let has_routes = ran.iter().any(|&n| !self.g.routes[n].is_empty());
        if has_routes {
            let view = self.view();
            let graph = self.g.clone();
            for &n in &ran {
                let from = &graph.nodes[n].name;
                for route in &graph.routes[n] {
                    let targets = (route.func)(&view).map_err(|e| RunError::NodeFailed {
                        node: from.clone(),
                        step: self.step + 1,
                        thread: self.shared.thread.to_string(),
                        ns: self.ns.clone(),
                        message: format!("route failed: {e}"),
                        code: None,
                    })?;
                    for g in targets.0 {
                        self.add_goto(from, g, &mut pull, &mut push)?;
                    }
                }
            }
        }
        let mut fired = Vec::new();
        for join in &self.g.joins {
            if let Some(arrived) = self.barriers.get(&join.key) {
                if join
                    .sources
                    .iter()
                    .all(|s| arrived.contains(&self.g.nodes[*s].name))
                {
                    fired.push(join.key.clone());
                    pull.insert(join.target);
                }
            }
        }
        for key in fired {
            self.barriers.remove(&key);
        }
        self.barriers.retain(|_, v| !v.is_empty());
        self.set_next(pull, push);
        Ok(())
    }

    pub(crate) fn set_next(&mut self, pull: BTreeSet<usize>, push: Vec<PendingTask>) {
        let mut names: Vec<&str> = pull
            .iter()
            .map(|&i| self.g.nodes[i].name.as_str())
            .collect();
        names.sort_unstable();
        let mut next: Vec<PendingTask> = names
            .into_iter()
            .map(|n| PendingTask {
                node: n.to_string(),
                payload: None,
            })
            .collect();
        next.extend(push);
        self.next = next;
    }

    pub(crate) fn add_goto(
        &self,
        from: &str,
        g: Goto,
        pull: &mut BTreeSet<usize>,
        push: &mut Vec<PendingTask>,
    ) -> Result<(), RunError> {
        let resolve = |name: &str| {
            self.g
                .node_index
                .get(name)
                .copied()
                .ok_or_else(|| RunError::UnknownTarget {
                    from: from.to_string(),
                    target: name.to_string(),
                    known: self.g.known_nodes(),
                })
        };
        match g {
            Goto::End => {}
            Goto::Node(n) => {
                pull.insert(resolve(&n)?);
            }
            Goto::Send(s) => {
                resolve(&s.node)?;
                push.push(PendingTask {
                    node: s.node,
                    payload: Some(s.payload),
                });
            }
        }
        Ok(())
    }
}

/// A task to run: its index in the step, node, context and options.
type Job = (
    usize,
    Arc<dyn crate::node::Node>,
    TaskContext,
    crate::graph::NodeOptions,
);

fn run_job(
    job: Job,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = (usize, TaskEnd)> + Send>> {
    let (i, node, ctx, options) = job;
    Box::pin(async move { (i, task::run_task(node, ctx, options).await) })
}

/// Runs a share of a wide step, a bounded number at a time.
async fn run_group(part: Vec<Job>) -> Vec<(usize, TaskEnd)> {
    let mut out = Vec::with_capacity(part.len());
    let mut rest = part.into_iter();
    let mut running: futures::stream::FuturesUnordered<_> =
        rest.by_ref().take(GROUP_CONCURRENCY).map(run_job).collect();
    while let Some(done) = running.next().await {
        out.push(done);
        if let Some(job) = rest.next() {
            running.push(run_job(job));
        }
    }
    out
}

/// Tasks of a wide step that one group drives at the same time.
const GROUP_CONCURRENCY: usize = 256;

/// How many tasks of one step get their own tokio task; wider steps are grouped.
fn spawn_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(2)
            * 8
    })
}
