//! Running a child graph as one task of its parent: in the namespace `node:task_id` of the
//! same thread, with the run's store, token and settings, resumed from its own checkpoint when
//! the parent step runs again, and handing back only the keys it wrote.
//!
//! Nodes reach this through [`TaskHost`], which the run's [`RunScope`] implements.
//!
//! With an output mapping, the mapped writes of the child's state after each finished step
//! (and as it is resumed from its checkpoint) are kept aside: when the task then fails (its
//! timeout, an error) and the failure is caught by the node's `catch`, the parent still gets
//! them, next to the error.

use super::r#loop::{Run, RunScope};
use super::{Durability, Input, RunStatus};
use crate::checkpoint::Source;
use crate::error::RunError;
use crate::graph::CompiledGraph;
use crate::node::{NodeError, TaskContext, TaskHost};
use crate::subgraph::Subgraph;
use crate::update::Update;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;

#[async_trait]
impl TaskHost for RunScope {
    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn configurable(&self) -> &Map<String, Value> {
        &self.configurable
    }

    fn checkpointer(&self) -> Option<Arc<dyn crate::checkpoint::Checkpointer>> {
        self.checkpointer.clone()
    }

    async fn run_subgraph(&self, sub: &Subgraph, ctx: TaskContext) -> Result<Update, NodeError> {
        // The child shares the run's checkpointer, store, cache, thread and token; the resume answers are the ones
        // its parent task received (the root's whole map: ids are unique across namespaces).
        let scope = RunScope {
            checkpointer: self.checkpointer.clone(),
            store: self.store.clone(),
            cache: self.cache.clone(),
            thread: self.thread.clone(),
            durability: self.durability,
            keep_checkpoints: self.keep_checkpoints,
            cancel: self.cancel.clone(),
            resume: ctx.resume.clone(),
            recursion_limit: self.recursion_limit,
            run_id: self.run_id.clone(),
            configurable: self.configurable.clone(),
        };
        run_child(Arc::new(scope), sub, ctx).await
    }
}

impl CompiledGraph {
    /// The host of a task that runs outside any graph run ([`TaskContext::detached`]): its
    /// subgraphs run without a store, in the task's thread, with its token.
    pub(crate) fn detached_host(ctx: &TaskContext) -> Arc<dyn TaskHost> {
        Arc::new(RunScope {
            checkpointer: None,
            store: ctx.store.clone(),
            cache: None,
            thread: ctx.thread_id.clone(),
            durability: Durability::Sync,
            keep_checkpoints: None,
            cancel: ctx.cancel.clone(),
            resume: ctx.resume.clone(),
            recursion_limit: None,
            run_id: Arc::from(""),
            configurable: Arc::default(),
        })
    }
}

/// A child run's error as its parent task's failure.
fn node_error(e: RunError) -> NodeError {
    match e {
        RunError::Cancelled(_) => NodeError::Cancelled,
        other => NodeError::fatal(other.to_string()),
    }
}

async fn run_child(
    scope: Arc<RunScope>,
    sub: &Subgraph,
    ctx: TaskContext,
) -> Result<Update, NodeError> {
    let segment = format!("{}:{}", ctx.node, ctx.task_id);
    let mut ns = ctx.ns.to_vec();
    ns.push(segment.clone());
    let mut run = Run::new(
        sub.graph().inner.clone(),
        scope,
        ns,
        ctx.emitter.child(segment),
    );
    // After each finished step, what the parent would get now: kept if the task fails and
    // its failure is caught (a timeout, a node error), so the work done is not lost.
    if let Some(f) = sub.output_map() {
        let (f, salvage) = (f.clone(), ctx.salvage.clone());
        run.on_step = Some(Box::new(move |view| {
            if let (Ok(writes), Ok(mut slot)) = (f(&view.to_object()), salvage.lock()) {
                *slot = Some(writes);
            }
        }));
    }
    let loaded = run.load(None).await.map_err(node_error)?;
    let status = match &loaded {
        Some(c) if c.next.is_empty() && c.source != Source::Input => RunStatus::Done,
        Some(c) => {
            run.begin(Input::Continue, Some(c), false)
                .await
                .map_err(node_error)?;
            // The steps finished before the resume count as progress too.
            if let Some(hook) = &run.on_step {
                hook(&run.view());
            }
            run.run_loop().await.map_err(node_error)?
        }
        None => {
            let input = sub.input_for(&ctx)?;
            run.begin(Input::Values(input), None, false)
                .await
                .map_err(node_error)?;
            run.track_written();
            run.run_loop().await.map_err(node_error)?
        }
    };
    run.finish_storage().await.map_err(node_error)?;
    if let RunStatus::Interrupted { interrupts, .. } = status {
        return Err(NodeError::Interrupted(interrupts));
    }
    let written = run.written().await.map_err(node_error)?;
    let mut update = Update::new();
    match sub.output_map() {
        Some(f) => update.writes = f(&run.view().to_object())?,
        None => {
            let parent = ctx.state().schema();
            update.writes = run
                .parent_writes(&written)
                .into_iter()
                .filter(|(k, _)| parent.index_of(k).is_some())
                .collect();
        }
    }
    if let Some(pc) = run.take_parent_command() {
        update.writes.extend(pc.writes);
        update.goto.extend(pc.goto);
    }
    Ok(update)
}
