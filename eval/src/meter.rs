//! What a run did, read from its event stream (`updates` mode): model requests with their
//! tokens, tool calls, and tool errors by code.
//!
//! - Every `llm` node writes one record per model call to the `usage` channel, and a
//!   `tool_executor` one record for the nested calls its tools made in one step (e.g.
//!   `update_node_parameters`) and the child runs they ran: each such write is one [`Request`]
//!   entry (`calls` says how many calls it covers).
//! - A node whose child runs streamed (a subgraph node, a tool executor running sub-agents or
//!   a plan's tasks: events from namespaces `X:<task>` under node `X`) writes a record that
//!   holds their calls again (a roll-up). Only what it holds beyond the records already seen
//!   from those namespaces is counted (the nested calls of the step itself, background tasks
//!   whose end it recorded); child records never rolled up (a case cut by its time budget
//!   inside a sub-agent) stay counted.
//! - Tool calls are the `tool` messages written, counted once per message id (the
//!   `apply_operations` node may append a notice to a tool message, keeping its id; a
//!   subgraph hands its children's messages back with their ids); a failed call's message has
//!   `status: "error"` and content `{"error": {"code", "message"}}`.

use agentgraph_runtime::{Event, EventKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// The channel model nodes record their usage in.
pub const USAGE_CHANNEL: &str = "usage";

/// One usage record: a model call, or the nested calls of one tool step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The node that made it (`agent`, `tools`, …), prefixed with its subgraph (`builder/agent`).
    pub node: String,
    /// Model calls it covers (1 for an `llm` node).
    pub calls: u64,
    /// Input tokens, cache reads and writes included.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
}

/// Counters over one run's events.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    /// Usage records, in arrival order.
    pub requests: Vec<Request>,
    /// Tool calls (one per tool message id).
    pub tool_calls: u64,
    /// Failed tool calls per error code.
    pub tool_errors: BTreeMap<String, u64>,
    /// Successful tool calls per tool name.
    pub tools_ok: BTreeMap<String, u64>,
    tool_ids: HashSet<String>,
    /// Where each of `requests` was written, in the same order.
    origins: Vec<Origin>,
}

/// Where a usage record was written: its namespace, and the depth of the outermost roll-up
/// that already holds it (its namespace's depth until one does).
#[derive(Debug, Clone)]
struct Origin {
    ns: Vec<String>,
    rolled: usize,
}

/// A namespace segment's node (`tools` of `tools:<task id>`).
fn node_of(segment: &str) -> &str {
    segment.split(':').next().unwrap_or(segment)
}

impl Meter {
    /// Takes one event into account.
    pub fn observe(&mut self, ev: &Event) {
        let EventKind::Updates(data) = &ev.kind else {
            return;
        };
        let Some(by_node) = data.as_object() else {
            return;
        };
        for (node, writes) in by_node {
            if let Some(usage) = writes.get(USAGE_CHANNEL) {
                self.usage(&ev.ns, node, usage);
            }
            if let Some(messages) = writes.get("messages") {
                match messages {
                    Value::Array(list) => list.iter().for_each(|m| self.message(m)),
                    m => self.message(m),
                }
            }
        }
    }

    /// A usage record of `node` in namespace `ns`: counted whole, or, when it rolls up child
    /// records already counted, only what it holds beyond them.
    fn usage(&mut self, ns: &[String], node: &str, record: &Value) {
        let total = &record["total"];
        let n = |k: &str| total[k].as_u64().unwrap_or(0);
        let mut r = Request {
            node: ns
                .iter()
                .map(|s| node_of(s))
                .chain(std::iter::once(node))
                .collect::<Vec<_>>()
                .join("/"),
            calls: n("calls"),
            prompt_tokens: n("input_tokens") + n("cache_read_tokens") + n("cache_creation_tokens"),
            completion_tokens: n("output_tokens"),
        };
        let depth = ns.len();
        for (i, o) in self.origins.iter_mut().enumerate() {
            let under = o.rolled > depth
                && o.ns.len() > depth
                && o.ns[..depth] == *ns
                && node_of(&o.ns[depth]) == node;
            if let (true, Some(child)) = (under, self.requests.get(i)) {
                o.rolled = depth;
                r.calls = r.calls.saturating_sub(child.calls);
                r.prompt_tokens = r.prompt_tokens.saturating_sub(child.prompt_tokens);
                r.completion_tokens = r.completion_tokens.saturating_sub(child.completion_tokens);
            }
        }
        if r.calls == 0 {
            return;
        }
        // Records pushed from outside (`requests` is public) are under no roll-up.
        let outside = Origin {
            ns: Vec::new(),
            rolled: 0,
        };
        self.origins.resize(self.requests.len(), outside);
        self.requests.push(r);
        self.origins.push(Origin {
            ns: ns.to_vec(),
            rolled: depth,
        });
    }

    fn message(&mut self, m: &Value) {
        if m["type"] != "tool" {
            return;
        }
        let id = m["id"]
            .as_str()
            .or_else(|| m["tool_call_id"].as_str())
            .unwrap_or_default()
            .to_string();
        if !self.tool_ids.insert(id) {
            return;
        }
        self.tool_calls += 1;
        if m["status"] == "error" {
            *self
                .tool_errors
                .entry(error_code(&m["content"]))
                .or_insert(0) += 1;
        } else if let Some(name) = m["name"].as_str() {
            *self.tools_ok.entry(name.to_string()).or_insert(0) += 1;
        }
    }

    /// Model calls in all.
    pub fn model_requests(&self) -> u64 {
        self.requests.iter().map(|r| r.calls).sum()
    }

    /// Prompt tokens in all.
    pub fn prompt_tokens(&self) -> u64 {
        self.requests.iter().map(|r| r.prompt_tokens).sum()
    }

    /// Completion tokens in all.
    pub fn completion_tokens(&self) -> u64 {
        self.requests.iter().map(|r| r.completion_tokens).sum()
    }

    /// Prompt and completion tokens in all.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens() + self.completion_tokens()
    }
}

/// The code of a failed tool call's content (`{"error": {"code"}}`, possibly as JSON text).
fn error_code(content: &Value) -> String {
    let parsed;
    let content = match content {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
            &parsed
        }
        v => v,
    };
    content["error"]["code"]
        .as_str()
        .unwrap_or("UNKNOWN")
        .to_string()
}
