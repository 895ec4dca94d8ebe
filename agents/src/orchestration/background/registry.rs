//! The background tasks alive in this process, by parent thread and task id: what cancels
//! them, what queues corrections to them, and how each one ended. One registry per process
//! ([`registry`]): the tools, the status sync and the server's routes all reach the same
//! tasks. What survives a restart is elsewhere (the parent's task list channel, each task's
//! checkpoints); see the module docs of [`super`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Where a background task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Its child run is running (or waits to be resumed after a restart).
    Running,
    /// It finished with a final answer.
    Done,
    /// It failed (the error is its result).
    Failed,
    /// It was cancelled.
    Cancelled,
}

impl TaskState {
    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        !matches!(self, TaskState::Running)
    }

    /// Its name, as in the task list and the status block.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Running => "running",
            TaskState::Done => "done",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }
}

/// Why an operation on a background task was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackgroundError {
    /// No task of that id runs in this thread (in this process).
    #[error("no background task `{id}` in this thread; tasks: {}", known_list(.known))]
    UnknownTask {
        /// The id asked for.
        id: String,
        /// The ids the thread has.
        known: Vec<String>,
    },
    /// The task is over: nothing to correct or cancel.
    #[error("background task `{id}` is already {}", .state.as_str())]
    Finished {
        /// The task.
        id: String,
        /// How it ended.
        state: TaskState,
    },
    /// The thread already runs its limit of tasks.
    #[error("{limit} background tasks already run in this thread ({}); wait until one \
             finishes (its status is in your context each turn) or cancel one with \
             cancel_task, then start this one again", .running.join(", "))]
    Limit {
        /// The limit.
        limit: usize,
        /// The running tasks.
        running: Vec<String>,
    },
}

impl BackgroundError {
    /// A stable code: `UNKNOWN_TASK`, `TASK_FINISHED`, `TASK_LIMIT`.
    pub fn code(&self) -> &'static str {
        match self {
            BackgroundError::UnknownTask { .. } => "UNKNOWN_TASK",
            BackgroundError::Finished { .. } => "TASK_FINISHED",
            BackgroundError::Limit { .. } => "TASK_LIMIT",
        }
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none".into()
    } else {
        known.join(", ")
    }
}

/// A task's live status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveStatus {
    /// The task's id (unique in its thread).
    pub id: String,
    /// The thread of its child run.
    pub thread: String,
    /// Where it stands.
    pub state: TaskState,
    /// The final answer, the error, or (running) a line on its last step.
    pub result: Option<String>,
    /// Corrections queued and not yet read by the task.
    pub pending_corrections: usize,
    /// Once it ended: its `usage` channel (its model calls), for the parent's usage.
    #[serde(skip)]
    pub usage: Value,
}

/// One task alive in this process.
pub(crate) struct Live {
    pub(crate) parent: String,
    pub(crate) id: String,
    pub(crate) thread: String,
    /// The idempotency key of the call that started it.
    pub(crate) call: String,
    pub(crate) cancel: CancellationToken,
    inbox: Mutex<Vec<String>>,
    /// `(state, result)`: running with its last step's line, or how it ended.
    status: Mutex<(TaskState, Option<String>)>,
    /// Its usage when it ended (`null` before).
    usage: Mutex<Value>,
    /// When it ended, in the registry's count of ends (0: running).
    ended: std::sync::atomic::AtomicU64,
}

/// Finished tasks kept per thread (the oldest beyond are forgotten; their threads and the
/// parent's task list keep them).
pub const FINISHED_KEPT: usize = 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind: keep using it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Live {
    /// The queued corrections, emptied.
    pub(crate) fn take_corrections(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.inbox))
    }

    /// Whether a correction waits.
    pub(crate) fn has_corrections(&self) -> bool {
        !lock(&self.inbox).is_empty()
    }

    /// Records the line on its last step while it runs.
    pub(crate) fn progress(&self, line: String) {
        let mut s = lock(&self.status);
        if s.0 == TaskState::Running {
            s.1 = Some(line);
        }
    }

    pub(crate) fn status(&self) -> LiveStatus {
        let (state, result) = lock(&self.status).clone();
        LiveStatus {
            id: self.id.clone(),
            thread: self.thread.clone(),
            state,
            result,
            pending_corrections: lock(&self.inbox).len(),
            usage: lock(&self.usage).clone(),
        }
    }
}

/// What [`Registry::claim`] found.
pub(crate) enum Claim {
    /// A new entry: start (or resume) its run.
    New(Arc<Live>),
    /// The task is already known here: do not start it twice.
    Exists(Arc<Live>),
}

/// The background tasks of this process.
#[derive(Default)]
pub struct Registry {
    tasks: Mutex<BTreeMap<(String, String), Arc<Live>>>,
    /// Signalled whenever a task ends.
    ended: Notify,
    /// Tasks ended so far (orders the finished ones).
    ends: std::sync::atomic::AtomicU64,
    /// `(parent, run id)` whose cancellation is watched.
    watched: Mutex<BTreeSet<(String, String)>>,
}

/// The registry of this process.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

impl Registry {
    fn live(&self, parent: &str, id: &str) -> Option<Arc<Live>> {
        lock(&self.tasks)
            .get(&(parent.to_string(), id.to_string()))
            .cloned()
    }

    fn of_thread(&self, parent: &str) -> Vec<Arc<Live>> {
        lock(&self.tasks)
            .iter()
            .filter(|((p, _), _)| p == parent)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Registers task `id` of `parent` (its child run on `thread`) unless it is known here;
    /// with `limit`, refuses when the thread already runs that many.
    pub(crate) fn claim(
        &self,
        parent: &str,
        id: &str,
        thread: &str,
        call: &str,
        limit: Option<usize>,
    ) -> Result<Claim, BackgroundError> {
        let mut tasks = lock(&self.tasks);
        let key = (parent.to_string(), id.to_string());
        if let Some(l) = tasks.get(&key) {
            return Ok(Claim::Exists(l.clone()));
        }
        if let Some(limit) = limit {
            let running: Vec<String> = tasks
                .iter()
                .filter(|((p, _), l)| p == parent && !lock(&l.status).0.is_terminal())
                .map(|((_, i), _)| i.clone())
                .collect();
            if running.len() >= limit {
                return Err(BackgroundError::Limit { limit, running });
            }
        }
        let live = Arc::new(Live {
            parent: parent.to_string(),
            id: id.to_string(),
            thread: thread.to_string(),
            call: call.to_string(),
            cancel: CancellationToken::new(),
            inbox: Mutex::new(Vec::new()),
            status: Mutex::new((TaskState::Running, None)),
            usage: Mutex::new(Value::Null),
            ended: std::sync::atomic::AtomicU64::new(0),
        });
        tasks.insert(key, live.clone());
        Ok(Claim::New(live))
    }

    /// Records how a task ended and its usage; forgets the thread's oldest finished tasks
    /// beyond [`FINISHED_KEPT`].
    pub(crate) fn finish(
        &self,
        live: &Live,
        state: TaskState,
        result: Option<String>,
        usage: Value,
    ) {
        use std::sync::atomic::Ordering;
        *lock(&live.usage) = usage;
        *lock(&live.status) = (state, result);
        let n = self.ends.fetch_add(1, Ordering::SeqCst) + 1;
        live.ended.store(n, Ordering::SeqCst);
        {
            let mut tasks = lock(&self.tasks);
            let mut finished: Vec<(u64, (String, String))> = tasks
                .iter()
                .filter(|((p, _), l)| *p == live.parent && l.ended.load(Ordering::SeqCst) > 0)
                .map(|(k, l)| (l.ended.load(Ordering::SeqCst), k.clone()))
                .collect();
            if finished.len() > FINISHED_KEPT {
                finished.sort();
                for (_, key) in &finished[..finished.len() - FINISHED_KEPT] {
                    tasks.remove(key);
                }
            }
        }
        self.ended.notify_waiters();
    }

    /// The status of task `id` of `parent`, if it is known in this process.
    pub fn get(&self, parent: &str, id: &str) -> Option<LiveStatus> {
        self.live(parent, id).map(|l| l.status())
    }

    /// The tasks of `parent` known in this process, by id.
    pub fn list(&self, parent: &str) -> Vec<LiveStatus> {
        self.of_thread(parent).iter().map(|l| l.status()).collect()
    }

    fn unknown(&self, parent: &str, id: &str) -> BackgroundError {
        BackgroundError::UnknownTask {
            id: id.to_string(),
            known: self
                .of_thread(parent)
                .iter()
                .map(|l| l.id.clone())
                .collect(),
        }
    }

    /// Cancels task `id` of `parent`: its run stops at once (its checkpoints stay).
    pub fn cancel(&self, parent: &str, id: &str) -> Result<LiveStatus, BackgroundError> {
        let live = self
            .live(parent, id)
            .ok_or_else(|| self.unknown(parent, id))?;
        let state = lock(&live.status).0;
        if state.is_terminal() {
            return Err(BackgroundError::Finished {
                id: id.to_string(),
                state,
            });
        }
        live.cancel.cancel();
        Ok(live.status())
    }

    /// Cancels every running task of `parent`; returns their ids.
    pub fn cancel_thread(&self, parent: &str) -> Vec<String> {
        let mut ids = Vec::new();
        for live in self.of_thread(parent) {
            if !lock(&live.status).0.is_terminal() {
                live.cancel.cancel();
                ids.push(live.id.clone());
            }
        }
        ids
    }

    /// Queues `message` to task `id` of `parent`: the task reads it before its next model
    /// call. Returns the task's status (with the queue's length).
    pub fn send(
        &self,
        parent: &str,
        id: &str,
        message: &str,
    ) -> Result<LiveStatus, BackgroundError> {
        let live = self
            .live(parent, id)
            .ok_or_else(|| self.unknown(parent, id))?;
        let state = lock(&live.status).0;
        if state.is_terminal() {
            return Err(BackgroundError::Finished {
                id: id.to_string(),
                state,
            });
        }
        lock(&live.inbox).push(message.to_string());
        Ok(live.status())
    }

    /// Waits until task `id` of `parent` is over (or is not known here); returns its status.
    pub async fn wait(&self, parent: &str, id: &str) -> Option<LiveStatus> {
        loop {
            let ended = self.ended.notified();
            let status = self.get(parent, id)?;
            if status.state.is_terminal() {
                return Some(status);
            }
            ended.await;
        }
    }

    /// Cancels the running tasks of `parent` when `token` (the token of a run on that thread)
    /// fires; the watch ends once the thread has no running task. One watch per run.
    pub(crate) fn watch_run(&'static self, parent: &str, run_id: &str, token: CancellationToken) {
        let key = (parent.to_string(), run_id.to_string());
        if run_id.is_empty() || !lock(&self.watched).insert(key.clone()) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            lock(&self.watched).remove(&key);
            return;
        };
        rt.spawn(async move {
            loop {
                let ended = self.ended.notified();
                let running = self
                    .of_thread(&key.0)
                    .iter()
                    .any(|l| !lock(&l.status).0.is_terminal());
                if !running {
                    break;
                }
                tokio::select! {
                    _ = token.cancelled() => {
                        self.cancel_thread(&key.0);
                        break;
                    }
                    _ = ended => {}
                }
            }
            lock(&self.watched).remove(&key);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(r: &Registry, parent: &str, id: &str, limit: Option<usize>) -> Arc<Live> {
        match r.claim(parent, id, &format!("{parent}:task:{id}"), "call", limit) {
            Ok(Claim::New(l)) => l,
            Ok(Claim::Exists(_)) => panic!("{id} exists"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_limit_counts_running_tasks_of_the_thread_only() {
        let r = Registry::default();
        let first = claimed(&r, "p", "t0", Some(2));
        claimed(&r, "p", "t1", Some(2));
        claimed(&r, "other", "t0", Some(2));
        let Err(e) = r.claim("p", "t2", "x", "call", Some(2)) else {
            panic!("a third task ran");
        };
        assert_eq!(e.code(), "TASK_LIMIT");
        assert_eq!(
            e.to_string(),
            "2 background tasks already run in this thread (t0, t1); wait until one finishes \
             (its status is in your context each turn) or cancel one with cancel_task, then \
             start this one again"
        );
        r.finish(&first, TaskState::Done, Some("ok".into()), Value::Null);
        claimed(&r, "p", "t2", Some(2));
    }

    #[test]
    fn only_the_newest_finished_tasks_of_a_thread_are_kept() {
        let r = Registry::default();
        for i in 0..FINISHED_KEPT + 2 {
            let l = claimed(&r, "p", &format!("t{i:02}"), None);
            r.finish(&l, TaskState::Done, None, Value::Null);
        }
        let running = claimed(&r, "p", "live", None);
        let ids: Vec<String> = r.list("p").into_iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), FINISHED_KEPT + 1);
        assert!(!ids.contains(&"t00".to_string()) && !ids.contains(&"t01".to_string()));
        assert!(ids.contains(&"t02".to_string()) && ids.contains(&"live".to_string()));
        assert_eq!(
            r.cancel("p", "live").map(|s| s.state),
            Ok(TaskState::Running)
        );
        assert!(running.cancel.is_cancelled());
        assert_eq!(
            r.cancel("p", "t00").map_err(|e| e.code()),
            Err("UNKNOWN_TASK")
        );
    }
}
