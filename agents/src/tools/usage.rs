//! What the child runs of one tool step cost: sub-agents, planned tasks and background tasks
//! record their model calls in their own `usage_sum` channel (checkpointed with each of their
//! steps); the tool hands that value to its caller here, and the caller (`tool_executor`,
//! `tool` node) adds it to its own usage channel with the step's other writes.

use crate::nodes::add_usage;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The usage of the child runs a tool call made, kept per child run until the caller writes
/// it. Clones share the same entries (the calls of one step share one ledger).
#[derive(Clone, Default)]
pub struct UsageLedger(Arc<Mutex<BTreeMap<String, (String, Value)>>>);

impl UsageLedger {
    /// Records child run `id`'s usage: the value of its `usage_sum` channel (`{"total",
    /// "nodes", "runs"}`), which counts all its calls so far. Its nodes are shown as
    /// `<label>/<node>`. The same `id` again replaces the earlier value, so a child run read
    /// twice in one step counts once. A value that is not an object is ignored.
    pub fn record(&self, id: &str, label: &str, usage: &Value) {
        if !usage.is_object() {
            return;
        }
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries.insert(id.to_string(), (label.to_string(), usage.clone()));
    }

    /// Everything recorded, as one write for a `usage_sum` channel: totals and runs added up,
    /// nodes as `<prefix>/<label>/<node>`; `None` when nothing was recorded.
    pub fn total(&self, prefix: &str) -> Option<Value> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Option<Value> = None;
        for (label, usage) in entries.values() {
            let mut nodes = Map::new();
            for (node, u) in usage["nodes"].as_object().into_iter().flatten() {
                nodes.insert(format!("{prefix}/{label}/{node}"), u.clone());
            }
            let part = json!({
                "total": usage["total"].clone(),
                "nodes": nodes,
                "runs": usage.get("runs").cloned().unwrap_or_else(|| json!({})),
            });
            match &mut out {
                Some(sum) => add_usage(sum, part),
                None => out = Some(part),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(calls: u64, input: u64) -> Value {
        let u = json!({"calls": calls, "input_tokens": input});
        json!({"total": u, "nodes": {"subagent": u}, "runs": {"r1": u}})
    }

    #[test]
    fn children_add_up_under_their_labels_and_a_child_read_again_counts_once() {
        let ledger = UsageLedger::default();
        assert_eq!(ledger.total("tools"), None);
        ledger.record("a", "delegate", &child(2, 10));
        ledger.record("b", "delegate", &child(1, 5));
        // Child `a` read again (its final value): replaces the first reading.
        ledger.record("a", "delegate", &child(3, 30));
        ledger.record("c", "plan:x", &Value::Null);
        assert_eq!(
            ledger.total("tools"),
            Some(json!({
                "total": {"calls": 4, "input_tokens": 35},
                "nodes": {"tools/delegate/subagent": {"calls": 4, "input_tokens": 35}},
                "runs": {"r1": {"calls": 4, "input_tokens": 35}}
            }))
        );
    }
}
