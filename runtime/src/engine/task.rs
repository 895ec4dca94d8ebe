//! One task: a node call with its timeout, retry policy, cancellation and tracing span.

use super::TaskEnd;
use crate::graph::NodeOptions;
use crate::node::{Node, NodeError, TaskContext};
use crate::retry::RetryOn;
use crate::stream::{DebugEvent, EventKind, Mode};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tracing::Instrument;

fn retryable(e: &NodeError, on: &RetryOn) -> bool {
    match (e, on) {
        (NodeError::Interrupted(_) | NodeError::Cancelled, _) => false,
        (NodeError::Timeout(_), RetryOn::Transient | RetryOn::Any) => true,
        (NodeError::Failed { retryable, .. }, RetryOn::Transient) => *retryable,
        (NodeError::Failed { .. }, RetryOn::Any) => true,
        (NodeError::Failed { code: Some(c), .. }, RetryOn::Codes(codes)) => codes.contains(c),
        _ => false,
    }
}

async fn attempt(
    node: &Arc<dyn Node>,
    ctx: TaskContext,
    options: &NodeOptions,
) -> Result<crate::Update, NodeError> {
    let cancel = ctx.cancel.clone();
    let call = AssertUnwindSafe(node.run(ctx)).catch_unwind();
    let timed = async {
        match options.timeout {
            Some(t) => match tokio::time::timeout(t, call).await {
                Ok(r) => r,
                Err(_) => Ok(Err(NodeError::Timeout(t))),
            },
            None => call.await,
        }
    };
    tokio::select! {
        r = timed => r.unwrap_or_else(|p| {
            let msg = p.downcast_ref::<&str>().map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            Err(NodeError::fatal(format!("node panicked: {msg}")))
        }),
        _ = cancel.cancelled() => Err(NodeError::Cancelled),
    }
}

/// Runs a task to its end, retrying as its policy says.
pub(crate) async fn run_task(
    node: Arc<dyn Node>,
    ctx: TaskContext,
    options: NodeOptions,
) -> TaskEnd {
    let span =
        tracing::info_span!("task", node = %ctx.node, task_id = %ctx.task_id, step = ctx.step);
    async move {
        let debug = ctx.emitter.enabled(Mode::Debug);
        if debug {
            let ev = DebugEvent::TaskStart {
                step: ctx.step,
                task_id: ctx.task_id.to_string(),
            };
            ctx.emitter
                .emit(Some(&ctx.node), EventKind::Debug(ev))
                .await;
        }
        let mut n = 1u32;
        let result = loop {
            let mut this = ctx.clone();
            this.interrupt_calls = Arc::new(AtomicUsize::new(0));
            let r = attempt(&node, this, &options).await;
            match (&r, &options.retry) {
                (Err(e), Some(policy))
                    if n < policy.max_attempts && retryable(e, &policy.retry_on) =>
                {
                    let wait = policy.backoff(n);
                    tracing::warn!(attempt = n, error = %e, ?wait, "task failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = ctx.cancel.cancelled() => break Err(NodeError::Cancelled),
                    }
                    n += 1;
                }
                _ => break r,
            }
        };
        if debug {
            let error = result.as_ref().err().map(|e| e.to_string());
            let ev = DebugEvent::TaskEnd {
                step: ctx.step,
                task_id: ctx.task_id.to_string(),
                error,
                cached: false,
            };
            ctx.emitter
                .emit(Some(&ctx.node), EventKind::Debug(ev))
                .await;
        }
        match result {
            Ok(update) => TaskEnd::Done {
                update,
                cached: false,
            },
            Err(NodeError::Interrupted(list)) => TaskEnd::Interrupted(list),
            Err(NodeError::Cancelled) => TaskEnd::Failed(NodeError::Cancelled),
            Err(e) => match &options.catch {
                Some(channel) => {
                    let code = match &e {
                        NodeError::Failed { code, .. } => code.clone(),
                        NodeError::Timeout(_) => Some("TIMEOUT".to_string()),
                        _ => None,
                    };
                    let message = match &e {
                        NodeError::Failed { message, .. } => message.clone(),
                        other => other.to_string(),
                    };
                    tracing::warn!(error = %e, channel = %channel, "task failed; error caught");
                    TaskEnd::Done {
                        update: crate::update::Update::new().set(
                            channel.clone(),
                            serde_json::json!({"node": &*ctx.node, "code": code, "message": message}),
                        ),
                        cached: false,
                    }
                }
                None => TaskEnd::Failed(e),
            },
        }
    }
    .instrument(span)
    .await
}
