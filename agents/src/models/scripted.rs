//! A scripted chat model: answers come from a JSON script instead of a provider. Tests use it,
//! and so does the offline demo, whose output is labelled as scripted (the model's
//! [`ChatModel::name`] is `scripted/<file stem>`).
//!
//! # Script format
//!
//! ```json
//! {"responses": [
//!   {"node": "agent", "text": "Let me look that up.",
//!    "tool_calls": [{"name": "search", "args": {"query": "rust"}, "id": "call_1"}]},
//!   {"node": "agent", "ns": "research", "text": "Found it.",
//!    "usage": {"input_tokens": 120, "output_tokens": 8}}
//! ]}
//! ```
//!
//! Responses are consumed in order, one per call, whoever calls, with one cursor per thread
//! (a new thread starts the script from its first response). With
//! [`ScriptedModel::with_state_file`] the cursors are saved after every call, so a process
//! that resumes a thread after a crash between steps continues where the last one stopped.
//! Each response names the `node` it is meant for; a call from another node fails with [`ModelError::Script`] naming both. `ns`
//! (optional) must be a prefix of the caller's subgraph path joined with `/`. `text`,
//! `tool_calls`, a call's `id` (default `call_<response>_<call>`) and `usage` (any of
//! `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_creation_tokens`) are optional;
//! `stop_reason` defaults to `tool_use` when there are tool calls, else `end_turn`. A response
//! may carry `"match": "text"`: it is then only given to a request that contains the text, and
//! consecutive responses with `match` may be used in any order (for calls made concurrently,
//! such as parallel tool calls that call the model themselves). `{{last_tool}}` in a `text` is
//! replaced by the content of the request's last tool message, so a scripted answer can report
//! what a tool really returned (end-to-end tests against live services). When every
//! response has been used, the next call fails with [`ModelError::Script`] saying so.
//!
//! The text streams through [`CallContext::on_event`] word by word, and each tool call as one
//! [`ModelEvent::ToolCallDelta`] with its id and name followed by one with its arguments.

use super::{CallContext, ChatModel, ModelError, ModelEvent, ModelRequest, ModelResponse};
use super::{ToolCall, Usage};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// In a response's text, replaced by the content of the request's last tool message.
const LAST_TOOL: &str = "{{last_tool}}";

/// The content of the last tool message of `req` (a string as is, JSON as text).
fn last_tool_content(req: &ModelRequest) -> String {
    req.messages
        .iter()
        .rev()
        .find(|m| m.get("type").and_then(Value::as_str) == Some("tool"))
        .and_then(|m| m.get("content"))
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// One scripted answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedResponse {
    node: String,
    #[serde(default)]
    ns: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    usage: ScriptedUsage,
    #[serde(default)]
    stop_reason: Option<String>,
    /// Text the request must contain; consecutive responses with `match` may be used in any
    /// order (concurrent callers, such as parallel tool calls that call a model).
    #[serde(default, rename = "match")]
    matches: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    args: Value,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ScriptedUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_creation_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    responses: Vec<ScriptedResponse>,
}

/// A [`ChatModel`] that plays back a script (see the module docs for the format).
#[derive(Debug)]
pub struct ScriptedModel {
    label: String,
    responses: Vec<ScriptedResponse>,
    /// The responses used so far, per thread.
    next: Mutex<HashMap<String, BTreeSet<usize>>>,
    /// Where the cursors are saved, if anywhere.
    state_file: Option<PathBuf>,
}

impl ScriptedModel {
    /// Loads a script file; the model is named `scripted/<file stem>`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::Script(format!("cannot read script {}: {e}", path.display()))
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            ModelError::Script(format!("script {} is not JSON: {e}", path.display()))
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "script".into());
        Self::build(stem, value)
    }

    /// Builds a model from a script value; the model is named `scripted/inline`.
    pub fn from_json(value: Value) -> Result<Self, ModelError> {
        Self::build("inline".into(), value)
    }

    fn build(label: String, value: Value) -> Result<Self, ModelError> {
        let script: Script = serde_json::from_value(value).map_err(|e| {
            ModelError::Script(format!(
                "script `{label}` does not follow the format {{\"responses\": [{{\"node\", \
                 \"ns\"?, \"text\"?, \"tool_calls\"?: [{{\"name\", \"args\", \"id\"?}}], \
                 \"usage\"?}}]}}: {e}"
            ))
        })?;
        Ok(ScriptedModel {
            label,
            responses: script.responses,
            next: Mutex::new(HashMap::new()),
            state_file: None,
        })
    }

    /// Keeps the per-thread cursors in `path` (a small JSON file, loaded now when it exists
    /// and rewritten after every call).
    pub fn with_state_file(mut self, path: impl Into<PathBuf>) -> Result<Self, ModelError> {
        let path = path.into();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let saved: HashMap<String, BTreeSet<usize>> =
                serde_json::from_str(&text).map_err(|e| {
                    ModelError::Script(format!(
                        "scripted model state {} is not a cursor map: {e}",
                        path.display()
                    ))
                })?;
            *self.cursors() = saved;
        }
        self.state_file = Some(path);
        Ok(self)
    }

    /// How many responses are left for the thread that went furthest.
    pub fn remaining(&self) -> usize {
        let used = self
            .cursors()
            .values()
            .map(BTreeSet::len)
            .max()
            .unwrap_or(0);
        self.responses.len().saturating_sub(used)
    }

    /// How many responses are left for `thread`.
    pub fn remaining_in(&self, thread: &str) -> usize {
        let used = self.cursors().get(thread).map(BTreeSet::len).unwrap_or(0);
        self.responses.len().saturating_sub(used)
    }

    fn cursors(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<usize>>> {
        self.next.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn save(&self, cursors: &HashMap<String, BTreeSet<usize>>) -> Result<(), ModelError> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let fail = |e: std::io::Error| {
            ModelError::Script(format!(
                "cannot save scripted model state {}: {e}",
                path.display()
            ))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string(cursors).unwrap_or_else(|_| "{}".into());
        std::fs::write(&tmp, text).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)
    }

    /// Takes the next response if it is meant for the caller.
    fn for_caller(r: &ScriptedResponse, ctx: &CallContext) -> bool {
        let caller_ns = ctx.ns.join("/");
        r.node == ctx.node && r.ns.as_deref().is_none_or(|p| caller_ns.starts_with(p))
    }

    /// Takes the next response if it is meant for the caller (see the module docs).
    fn take(
        &self,
        ctx: &CallContext,
        req: &ModelRequest,
    ) -> Result<(usize, ScriptedResponse), ModelError> {
        let mut cursors = self.cursors();
        let used = cursors.entry(ctx.thread.clone()).or_default();
        let Some(i) = (0..self.responses.len()).find(|i| !used.contains(i)) else {
            return Err(ModelError::Script(format!(
                "script `{}` ran out: all {} responses were used, and node `{}` asked for \
                 another; add a response for it",
                self.label,
                self.responses.len(),
                ctx.node
            )));
        };
        let r = &self.responses[i];
        let chosen = if r.matches.is_some() {
            // A group of consecutive `match` responses: the first unused one for this caller
            // whose text the request contains.
            let text = serde_json::to_string(req).unwrap_or_default();
            (i..self.responses.len())
                .take_while(|j| self.responses[*j].matches.is_some())
                .filter(|j| !used.contains(j))
                .find(|j| {
                    let c = &self.responses[*j];
                    Self::for_caller(c, ctx)
                        && c.matches.as_deref().is_some_and(|m| text.contains(m))
                })
                .ok_or_else(|| {
                    ModelError::Script(format!(
                        "no pending response of script `{}` from #{} on matches the request of \
                         node `{}` (each has a `match` text the request must contain)",
                        self.label,
                        i + 1,
                        ctx.node
                    ))
                })?
        } else if Self::for_caller(r, ctx) {
            i
        } else {
            let caller_ns = ctx.ns.join("/");
            return Err(ModelError::Script(format!(
                "response #{} of script `{}` is for node `{}`{}, but node `{}`{} called",
                i + 1,
                self.label,
                r.node,
                r.ns.as_deref()
                    .map(|p| format!(" in namespace `{p}`"))
                    .unwrap_or_default(),
                ctx.node,
                if caller_ns.is_empty() {
                    String::new()
                } else {
                    format!(" in namespace `{caller_ns}`")
                }
            )));
        };
        used.insert(chosen);
        let response = self.responses[chosen].clone();
        self.save(&cursors)?;
        Ok((chosen, response))
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> String {
        format!("scripted/{}", self.label)
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        ctx: &CallContext,
    ) -> Result<ModelResponse, ModelError> {
        if ctx.cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let (index, mut r) = self.take(ctx, req)?;
        if r.text.contains(LAST_TOOL) {
            r.text = r.text.replace(LAST_TOOL, &last_tool_content(req));
        }
        let tool_calls: Vec<ToolCall> = r
            .tool_calls
            .iter()
            .enumerate()
            .map(|(j, c)| ToolCall {
                id: c
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}_{}", index + 1, j + 1)),
                name: c.name.clone(),
                args: if c.args.is_null() {
                    Value::Object(Default::default())
                } else {
                    c.args.clone()
                },
            })
            .collect();
        if let Some(on_event) = &ctx.on_event {
            for word in r.text.split_inclusive(' ') {
                on_event(ModelEvent::TextDelta {
                    text: word.to_string(),
                });
                tokio::task::yield_now().await;
            }
            for (index, c) in tool_calls.iter().enumerate() {
                on_event(ModelEvent::ToolCallDelta {
                    index,
                    id: Some(c.id.clone()),
                    name: Some(c.name.clone()),
                    args_delta: String::new(),
                });
                on_event(ModelEvent::ToolCallDelta {
                    index,
                    id: None,
                    name: None,
                    args_delta: c.args.to_string(),
                });
            }
        }
        let u = r.usage;
        Ok(ModelResponse {
            text: r.text,
            stop_reason: r.stop_reason.unwrap_or_else(|| {
                if tool_calls.is_empty() {
                    "end_turn".into()
                } else {
                    "tool_use".into()
                }
            }),
            tool_calls,
            usage: Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cache_read_tokens: u.cache_read_tokens,
                cache_creation_tokens: u.cache_creation_tokens,
            },
            model: self.name(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(node: &str) -> CallContext {
        CallContext {
            node: node.into(),
            ..CallContext::default()
        }
    }

    #[tokio::test]
    async fn plays_back_in_order_and_fails_loudly() {
        let m = ScriptedModel::from_json(json!({"responses": [
            {"node": "a", "text": "hi there", "tool_calls": [{"name": "t", "args": {"x": 1}}]},
            {"node": "b", "ns": "sub", "text": "bye"}
        ]}))
        .unwrap();
        assert_eq!(m.name(), "scripted/inline");
        assert_eq!(m.remaining(), 2);
        let r = m
            .complete(&ModelRequest::default(), &ctx("a"))
            .await
            .unwrap();
        assert_eq!(r.text, "hi there");
        assert_eq!(r.tool_calls[0].id, "call_1_1");
        assert_eq!(r.stop_reason, "tool_use");
        let err = m.complete(&ModelRequest::default(), &ctx("a")).await;
        let msg = err.unwrap_err().to_string();
        assert!(msg.contains("is for node `b` in namespace `sub`, but node `a` called"));
        let mut c = ctx("b");
        c.ns = vec!["sub".into(), "x".into()];
        m.complete(&ModelRequest::default(), &c).await.unwrap();
        assert_eq!(m.remaining(), 0);
        let msg = m
            .complete(&ModelRequest::default(), &c)
            .await
            .unwrap_err()
            .to_string();
        assert!(msg.contains("all 2 responses were used"), "{msg}");
    }

    #[tokio::test]
    async fn cursors_are_per_thread_and_survive_a_restart() {
        let script =
            json!({"responses": [{"node": "a", "text": "one"}, {"node": "a", "text": "two"}]});
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("cursors.json");
        let on = |thread: &str| CallContext {
            thread: thread.into(),
            ..ctx("a")
        };
        let m = ScriptedModel::from_json(script.clone())
            .unwrap()
            .with_state_file(&state)
            .unwrap();
        let req = ModelRequest::default();
        assert_eq!(m.complete(&req, &on("t1")).await.unwrap().text, "one");
        assert_eq!(m.complete(&req, &on("t2")).await.unwrap().text, "one");
        assert_eq!(m.remaining_in("t1"), 1);
        // A new process with the same state file continues each thread where it stopped.
        let again = ScriptedModel::from_json(script)
            .unwrap()
            .with_state_file(&state)
            .unwrap();
        assert_eq!(again.complete(&req, &on("t1")).await.unwrap().text, "two");
        assert!(again.complete(&req, &on("t1")).await.is_err());
        assert_eq!(again.complete(&req, &on("t2")).await.unwrap().text, "two");
    }

    #[tokio::test]
    async fn matching_responses_serve_concurrent_callers_in_any_order() {
        let m = ScriptedModel::from_json(json!({"responses": [
            {"node": "tools", "match": "node A", "text": "for A"},
            {"node": "tools", "match": "node B", "text": "for B"},
            {"node": "agent", "text": "done"}
        ]}))
        .unwrap();
        let ask = |who: &str| ModelRequest {
            messages: vec![json!({"type": "human", "content": format!("update node {who}")})],
            ..Default::default()
        };
        let r = m.complete(&ask("B"), &ctx("tools")).await.unwrap();
        assert_eq!(r.text, "for B");
        assert!(m.complete(&ask("C"), &ctx("tools")).await.is_err());
        assert_eq!(
            m.complete(&ask("A"), &ctx("tools")).await.unwrap().text,
            "for A"
        );
        let r = m.complete(&ModelRequest::default(), &ctx("agent")).await;
        assert_eq!(r.unwrap().text, "done");
    }

    #[test]
    fn bad_scripts_are_rejected() {
        let err = ScriptedModel::from_json(json!({"responses": [{"text": "x"}]})).unwrap_err();
        assert!(err.to_string().contains("missing field `node`"), "{err}");
        let err = ScriptedModel::from_file("/nonexistent/s.json").unwrap_err();
        assert!(err.to_string().contains("cannot read script"), "{err}");
    }
}
