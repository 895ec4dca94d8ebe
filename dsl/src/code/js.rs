//! The `js` node kind: a JavaScript function body run in the sandbox on a blocking thread, with
//! the state's channels and the task's payload keys in scope; what it returns is the update.

use super::code_offset;
use super::sandbox::{self, JsError, Limits};
use crate::ast::{ExprKind, StrLit};
use crate::registry::{NodeBuild, NodeFactory};
use agentgraph_runtime::{Node, NodeError, TaskContext, Update};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time a call may take without `time_limit`.
pub(crate) const DEFAULT_TIME: Duration = Duration::from_secs(5);
/// Bytes a call may allocate without `memory_limit`.
pub(crate) const DEFAULT_MEMORY: usize = 64 * 1024 * 1024;

/// Builds `js` nodes.
pub(crate) struct JsFactory;

impl NodeFactory for JsFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let lit = match b.expr("code").map(|e| &e.kind) {
            Some(ExprKind::Str { lit }) => lit,
            _ => return Err("`code` is a string literal holding a function body".into()),
        };
        let limits = Limits {
            time: match b.constant("time_limit")? {
                None => DEFAULT_TIME,
                Some(v) => Duration::from_millis(positive(&v, "time_limit", "a duration")?),
            },
            memory: match b.constant("memory_limit")? {
                None => DEFAULT_MEMORY,
                Some(v) => usize::try_from(positive(&v, "memory_limit", "a number of bytes")?)
                    .map_err(|_| "`memory_limit` is too large".to_string())?,
            },
        };
        Ok(Arc::new(JsNode {
            name: b.name().to_string(),
            code: lit.value.clone(),
            limits,
            place: Place::of(lit, b),
        }))
    }
}

/// A positive integer entry.
fn positive(v: &Value, key: &str, what: &str) -> Result<u64, String> {
    v.as_u64()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{key}` is {what} greater than zero, got {v}"))
}

/// Where the code is in the graph file, to turn lines of the code into lines of the file.
struct Place {
    file: String,
    /// The file's line of the code's first line.
    first: usize,
    /// Whether the code's lines are the file's (a `"""` string).
    multiline: bool,
}

impl Place {
    fn of(lit: &StrLit, b: &NodeBuild<'_>) -> Place {
        Place {
            file: b.source.file_name().to_string(),
            first: b.source.line(code_offset(lit, 1, 1)),
            multiline: lit.triple,
        }
    }

    /// `graph.ag line 14` for line `line` of the code (or where the code starts).
    fn describe(&self, line: Option<usize>) -> String {
        match line {
            Some(l) if self.multiline => format!("{} line {}", self.file, self.first + l - 1),
            Some(_) => format!("{} line {}", self.file, self.first),
            None => format!("{}, code from line {}", self.file, self.first),
        }
    }
}

struct JsNode {
    name: String,
    code: String,
    limits: Limits,
    place: Place,
}

/// Tells the sandbox to stop when the task's future is dropped (a node timeout, a cancelled
/// run) while the blocking call still runs.
struct GiveUp(Arc<AtomicBool>);

impl Drop for GiveUp {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl JsNode {
    fn fail(&self, code: &str, message: impl std::fmt::Display) -> NodeError {
        NodeError::fatal(format!("js node \"{}\": {message}", self.name)).with_code(code)
    }

    fn error(&self, e: JsError, ctx: &TaskContext) -> NodeError {
        match e {
            JsError::Timeout(_) => self.fail("JS_TIMEOUT", format!("{e} (`time_limit`)")),
            JsError::Memory(_) => self.fail("JS_MEMORY", format!("{e} (`memory_limit`)")),
            JsError::Cancelled if ctx.cancellation().is_cancelled() => NodeError::Cancelled,
            JsError::Cancelled => self.fail("JS_ERROR", "stopped before it finished"),
            JsError::Thrown { message, line, .. } => self.fail(
                "JS_ERROR",
                format!("{message} ({})", self.place.describe(line)),
            ),
            JsError::BadReturn(m) => self.fail("JS_BAD_RETURN", m),
            JsError::Engine(m) => self.fail("JS_ERROR", m),
        }
    }
}

/// The code's arguments: every channel (null when empty) and the payload's keys over them.
fn arguments(ctx: &TaskContext) -> (Value, Vec<(String, Value)>) {
    let state = ctx.state();
    let mut all = Map::new();
    let mut names: Vec<(String, Value)> = Vec::new();
    for c in state.schema().channels() {
        let v = state.get(&c.name).cloned().unwrap_or(Value::Null);
        all.insert(c.name.clone(), v.clone());
        if sandbox::usable_name(&c.name) {
            names.push((c.name.clone(), v));
        }
    }
    if let Some(Value::Object(p)) = ctx.payload() {
        for (k, v) in p {
            if !sandbox::usable_name(k) {
                continue;
            }
            match names.iter_mut().find(|(n, _)| n == k) {
                Some(slot) => slot.1 = v.clone(),
                None => names.push((k.clone(), v.clone())),
            }
        }
    }
    (Value::Object(all), names)
}

#[async_trait]
impl Node for JsNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let (state, names) = arguments(&ctx);
        let given_up = Arc::new(AtomicBool::new(false));
        let _guard = GiveUp(given_up.clone());
        let cancel = ctx.cancellation().clone();
        let stop = Arc::new(move || cancel.is_cancelled() || given_up.load(Ordering::SeqCst));
        let code = self.code.clone();
        let limits = self.limits;
        let outcome =
            tokio::task::spawn_blocking(move || sandbox::run(&code, &state, &names, limits, stop))
                .await
                .map_err(|e| self.fail("JS_ERROR", format!("the JavaScript call failed: {e}")))?;
        let Some(writes) = outcome.map_err(|e| self.error(e, &ctx))? else {
            return Ok(Update::new());
        };
        let schema = ctx.state().schema();
        let unknown: Vec<&str> = writes
            .keys()
            .filter(|k| schema.channel(k).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let channels: Vec<&str> = schema.channels().iter().map(|c| c.name.as_str()).collect();
            return Err(self.fail(
                "JS_BAD_RETURN",
                format!(
                    "returned {} that {} not a channel: `{}` (channels: {})",
                    if unknown.len() == 1 { "a key" } else { "keys" },
                    if unknown.len() == 1 { "is" } else { "are" },
                    unknown.join("`, `"),
                    channels.join(", ")
                ),
            ));
        }
        Ok(Update {
            writes: writes.into_iter().collect(),
            ..Update::new()
        })
    }
}
