//! The uninterrupted run to compare against, and what a crashed store holds.

use super::*;

/// A state at a checkpoint: step, values, next nodes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct At {
    pub(crate) step: i64,
    pub(crate) values: Value,
    pub(crate) next: Vec<String>,
}

/// The uninterrupted in-process run, to compare against.
pub(crate) struct Expected {
    pub(crate) graph: CompiledGraph,
    pub(crate) by_step: HashMap<i64, CheckpointId>,
    pub(crate) cache: BTreeMap<i64, At>,
    pub(crate) final_state: At,
}

impl Expected {
    pub(crate) fn compute(rt: &tokio::runtime::Runtime, steps: i64) -> Self {
        let graph = crash_graph(Duration::ZERO, None)
            .with_checkpointer(Arc::new(MemoryCheckpointer::new()));
        rt.block_on(async {
            graph
                .invoke(
                    Input::values(input(steps)),
                    RunConfig::thread(THREAD).durability(Durability::Sync),
                )
                .await
                .expect("uninterrupted in-process run");
            let history = graph
                .history(THREAD, ListQuery::default())
                .await
                .expect("history");
            let by_step: HashMap<i64, CheckpointId> =
                history.iter().map(|e| (e.step, e.checkpoint_id)).collect();
            assert_eq!(
                by_step.len(),
                history.len(),
                "the uninterrupted run has one checkpoint per step"
            );
            let s = graph
                .get_state(THREAD, None)
                .await
                .expect("state")
                .expect("a checkpoint");
            let final_state = At {
                step: s.step,
                values: s.values,
                next: s.next,
            };
            assert_eq!(final_state.step, steps, "the run ends at step N");
            assert_eq!(
                final_state.values,
                expected_final(steps),
                "the uninterrupted in-process run agrees with the closed form"
            );
            assert!(final_state.next.is_empty());
            Expected {
                graph,
                by_step,
                cache: BTreeMap::new(),
                final_state,
            }
        })
    }

    pub(crate) fn at(&mut self, rt: &tokio::runtime::Runtime, step: i64) -> At {
        if let Some(a) = self.cache.get(&step) {
            return a.clone();
        }
        let id = *self
            .by_step
            .get(&step)
            .unwrap_or_else(|| panic!("the uninterrupted run has no checkpoint at step {step}"));
        let s = rt
            .block_on(self.graph.get_state(THREAD, Some(id)))
            .expect("state")
            .expect("checkpoint");
        let a = At {
            step: s.step,
            values: s.values,
            next: s.next,
        };
        self.cache.insert(step, a.clone());
        a
    }
}

/// The sled graph of a db folder (opened in this process while no worker runs).
pub(crate) fn sled_graph(db: &Path) -> CompiledGraph {
    let cp = SledCheckpointer::open(db).expect("open sled in the test process");
    crash_graph(Duration::ZERO, None).with_checkpointer(Arc::new(cp))
}

/// The thread's newest checkpoint in the sled folder, `None` when it has none (or no folder).
pub(crate) fn latest(rt: &tokio::runtime::Runtime, db: &Path) -> Option<At> {
    if !db.exists() {
        return None;
    }
    let graph = sled_graph(db);
    let s = rt
        .block_on(graph.get_state(THREAD, None))
        .expect("get_state on the crashed store")?;
    Some(At {
        step: s.step,
        values: s.values,
        next: s.next,
    })
}

/// Checks the finished thread's history: one linear chain -1, 0, 1, …, N.
pub(crate) fn check_history(
    rt: &tokio::runtime::Runtime,
    db: &Path,
    steps: i64,
) -> Result<(), String> {
    let graph = sled_graph(db);
    let history = rt
        .block_on(graph.history(THREAD, ListQuery::default()))
        .map_err(|e| format!("history: {e}"))?;
    let ids: HashSet<CheckpointId> = history.iter().map(|e| e.checkpoint_id).collect();
    if ids.len() != history.len() {
        return Err("duplicate checkpoint ids in the history".into());
    }
    let by_id: HashMap<CheckpointId, &agentgraph_runtime::HistoryEntry> =
        history.iter().map(|e| (e.checkpoint_id, e)).collect();
    for e in &history {
        match e.parent_id {
            Some(p) if !ids.contains(&p) => {
                return Err(format!(
                    "checkpoint {} (step {}) has a parent {p} that does not exist",
                    e.checkpoint_id, e.step
                ))
            }
            None if e.step != -1 || e.source != Source::Input => {
                return Err(format!(
                    "checkpoint {} (step {}, {:?}) has no parent but is not the first input",
                    e.checkpoint_id, e.step, e.source
                ))
            }
            _ if e.step >= 0 && e.source != Source::Loop => {
                return Err(format!(
                    "checkpoint {} (step {}) has source {:?}, expected loop",
                    e.checkpoint_id, e.step, e.source
                ))
            }
            _ => {}
        }
    }
    // Walk the parent chain from the newest checkpoint.
    let newest = history.first().ok_or("empty history")?;
    let mut chain = vec![newest.step];
    let mut at = newest;
    while let Some(p) = at.parent_id {
        let parent = by_id[&p];
        if parent.step >= at.step {
            return Err(format!(
                "steps do not increase along the chain: {} (step {}) has parent step {}",
                at.checkpoint_id, at.step, parent.step
            ));
        }
        if parent.checkpoint_id >= at.checkpoint_id {
            return Err(format!(
                "checkpoint ids do not increase along the chain at step {}",
                at.step
            ));
        }
        chain.push(parent.step);
        at = parent;
    }
    chain.reverse();
    let want: Vec<i64> = (-1..=steps).collect();
    if chain != want {
        return Err(format!(
            "the chain of the final checkpoint is not -1..={steps}: {chain:?}"
        ));
    }
    if chain.len() != history.len() {
        return Err(format!(
            "{} checkpoints are not on the final chain",
            history.len() - chain.len()
        ));
    }
    Ok(())
}
