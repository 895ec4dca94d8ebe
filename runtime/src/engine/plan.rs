//! Planning: which tasks the next step runs — from static edges, routes, waiting edges (joins),
//! sends and commands — and their deterministic task ids.

use super::apply::Channels;
use crate::checkpoint::PendingTask;
use crate::error::RunError;
use crate::graph::{GraphInner, Route, Target};
use crate::update::{Goto, Update, START};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// A planned task of the current step.
pub(super) struct TaskPlan {
    /// The node's index.
    pub node: usize,
    /// A push task's payload (taken when the task starts).
    pub payload: Option<Value>,
    /// The deterministic task id.
    pub id: String,
}

/// Where planning happens, for the errors of routes.
pub(super) struct Site<'a> {
    pub thread: &'a str,
    pub ns: &'a [String],
    /// The step the planned tasks belong to.
    pub step: i64,
}

/// The tasks of the next step and the joins waiting for more sources.
#[derive(Default)]
pub(super) struct Frontier {
    next: Vec<PendingTask>,
    /// Join key → the sources that arrived, sorted.
    barriers: BTreeMap<String, Vec<String>>,
}

impl Frontier {
    /// The frontier stored in a checkpoint.
    pub(super) fn restore(next: Vec<PendingTask>, barriers: BTreeMap<String, Vec<String>>) -> Self {
        Frontier { next, barriers }
    }

    pub(super) fn next(&self) -> &[PendingTask] {
        &self.next
    }

    pub(super) fn barriers(&self) -> &BTreeMap<String, Vec<String>> {
        &self.barriers
    }

    pub(super) fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    /// The nodes of the next step, in task order.
    pub(super) fn names(&self) -> Vec<String> {
        self.next.iter().map(|t| t.node.clone()).collect()
    }

    /// Only the input task is next (before the input is applied).
    pub(super) fn start_with_input(&mut self) {
        self.next = vec![PendingTask {
            node: START.into(),
            payload: None,
        }];
    }

    /// Nothing is next.
    pub(super) fn clear(&mut self) {
        self.next.clear();
    }

    /// Tasks of the next step with their ids: pull tasks by node name, then push tasks by send
    /// index, each id a hash of namespace, parent checkpoint, node and kind.
    pub(super) fn tasks(
        &self,
        g: &GraphInner,
        ns_key: &str,
        parent: &str,
    ) -> Result<Vec<TaskPlan>, RunError> {
        let mut push = 0usize;
        let mut kind = String::new();
        self.next
            .iter()
            .map(|t| {
                let node = *g
                    .node_index
                    .get(&t.node)
                    .ok_or_else(|| RunError::UnknownTarget {
                        from: "checkpoint".into(),
                        target: t.node.clone(),
                        known: g.known_nodes(),
                    })?;
                kind.clear();
                match &t.payload {
                    None => kind.push_str("pull"),
                    Some(_) => {
                        let _ = write!(kind, "push:{push}");
                        push += 1;
                    }
                }
                let id = crate::ids::stable_id(&[ns_key, parent, &t.node, &kind]);
                Ok(TaskPlan {
                    node,
                    payload: t.payload.clone(),
                    id,
                })
            })
            .collect()
    }

    /// Plans the step after `plans` ran: their edges, commands (`updates`' gotos, taken),
    /// arrivals at joins, and routes evaluated on the applied state.
    pub(super) fn after_step(
        &mut self,
        g: &GraphInner,
        channels: &Channels,
        plans: &[TaskPlan],
        updates: &mut [(Update, bool)],
        site: &Site<'_>,
    ) -> Result<(), RunError> {
        let mut pull: BTreeSet<usize> = BTreeSet::new();
        let mut push: Vec<PendingTask> = Vec::new();
        let mut ran: Vec<usize> = Vec::new();
        let mut ran_set: BTreeSet<usize> = BTreeSet::new();
        for (plan, (update, _)) in plans.iter().zip(updates.iter_mut()) {
            let from = plan.node;
            for t in &g.edges[from] {
                if let Target::Node(i) = t {
                    pull.insert(*i);
                }
            }
            if !update.to_parent {
                for goto in std::mem::take(&mut update.goto) {
                    add_goto(g, &g.nodes[from].name, goto, &mut pull, &mut push)?;
                }
            }
            for &j in &g.joins_by_source[from] {
                let join = &g.joins[j];
                let arrived = self.barriers.entry(join.key.clone()).or_default();
                let name = &g.nodes[from].name;
                if !arrived.contains(name) {
                    arrived.push(name.clone());
                    arrived.sort();
                }
            }
            if ran_set.insert(from) {
                ran.push(from);
            }
        }
        if ran.iter().any(|&n| !g.routes[n].is_empty()) {
            let view = channels.view();
            for &n in &ran {
                let from = &g.nodes[n].name;
                route(g, from, &g.routes[n], &view, site, &mut pull, &mut push)?;
            }
        }
        let mut fired = Vec::new();
        for join in &g.joins {
            if let Some(arrived) = self.barriers.get(&join.key) {
                if join
                    .sources
                    .iter()
                    .all(|s| arrived.contains(&g.nodes[*s].name))
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
        self.set(g, pull, push);
        Ok(())
    }

    /// Plans the nodes that START leads to.
    pub(super) fn after_start(
        &mut self,
        g: &GraphInner,
        channels: &Channels,
        site: &Site<'_>,
    ) -> Result<(), RunError> {
        let mut pull = BTreeSet::new();
        let mut push = Vec::new();
        for t in &g.start_edges {
            if let Target::Node(i) = t {
                pull.insert(*i);
            }
        }
        if !g.start_routes.is_empty() {
            let view = channels.view();
            route(g, START, &g.start_routes, &view, site, &mut pull, &mut push)?;
        }
        self.set(g, pull, push);
        Ok(())
    }

    fn set(&mut self, g: &GraphInner, pull: BTreeSet<usize>, push: Vec<PendingTask>) {
        let mut names: Vec<&str> = pull.iter().map(|&i| g.nodes[i].name.as_str()).collect();
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
}

/// Evaluates `from`'s routes and adds their targets.
fn route(
    g: &GraphInner,
    from: &str,
    routes: &[Route],
    view: &crate::state::StateView,
    site: &Site<'_>,
    pull: &mut BTreeSet<usize>,
    push: &mut Vec<PendingTask>,
) -> Result<(), RunError> {
    for r in routes {
        let targets = (r.func)(view).map_err(|e| RunError::NodeFailed {
            node: from.to_string(),
            step: site.step,
            thread: site.thread.to_string(),
            ns: site.ns.to_vec(),
            message: format!("route failed: {e}"),
            code: None,
        })?;
        for goto in targets.0 {
            add_goto(g, from, goto, pull, push)?;
        }
    }
    Ok(())
}

/// Adds a route or command target: a pull task, a push task, or nothing for END.
fn add_goto(
    g: &GraphInner,
    from: &str,
    goto: Goto,
    pull: &mut BTreeSet<usize>,
    push: &mut Vec<PendingTask>,
) -> Result<(), RunError> {
    let resolve = |name: &str| {
        g.node_index
            .get(name)
            .copied()
            .ok_or_else(|| RunError::UnknownTarget {
                from: from.to_string(),
                target: name.to_string(),
                known: g.known_nodes(),
            })
    };
    match goto {
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
