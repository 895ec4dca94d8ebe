//! Usage records: what one task's model calls cost, and the `usage_sum` reducer adding them up.

use crate::models::{Pricing, Usage};
use agentgraph_runtime::reducer::{Reducer, ReducerError, Storage};
use agentgraph_runtime::TaskContext;
use serde_json::{json, Map, Value};

/// The usage write of `calls` model calls made by the task: `{"total": u, "nodes": {<node>:
/// u}, "runs": {<run id>: u}}`, where `u` is `usage` plus `calls` and, with prices,
/// `cost_usd` (for a channel with the [`UsageSum`] reducer).
pub(crate) fn usage_record(
    ctx: &TaskContext,
    usage: &Usage,
    calls: u64,
    pricing: Option<&Pricing>,
) -> Value {
    let mut u = serde_json::to_value(usage).unwrap_or_else(|_| json!({}));
    u["calls"] = json!(calls);
    if let Some(p) = pricing {
        u["cost_usd"] = json!(p.cost(usage));
    }
    let mut nodes = Map::new();
    nodes.insert(ctx.node().to_string(), u.clone());
    let mut runs = Map::new();
    if !ctx.run_id().is_empty() {
        runs.insert(ctx.run_id().to_string(), u.clone());
    }
    json!({"total": u, "nodes": nodes, "runs": runs})
}

/// A reducer that adds objects of counters: numbers at the same path are summed, nested
/// objects are merged the same way, anything else is replaced. Use it for the usage channel of
/// [`super::LlmNode`] (type `json`).
pub struct UsageSum;

/// Adds the counters of `write` into `current` (see [`UsageSum`]).
pub(crate) fn add_usage(current: &mut Value, write: Value) {
    match (current, write) {
        (Value::Object(cur), Value::Object(new)) => {
            for (k, v) in new {
                match cur.get_mut(&k) {
                    Some(slot) => add_usage(slot, v),
                    None => {
                        cur.insert(k, v);
                    }
                }
            }
        }
        (cur @ Value::Number(_), Value::Number(n)) => {
            let sum = match (cur.as_u64(), n.as_u64()) {
                (Some(a), Some(b)) => json!(a.saturating_add(b)),
                _ => json!(cur.as_f64().unwrap_or(0.0) + n.as_f64().unwrap_or(0.0)),
            };
            *cur = sum;
        }
        (cur, new) => *cur = new,
    }
}

impl Reducer for UsageSum {
    fn name(&self) -> &str {
        "usage_sum"
    }
    fn storage(&self) -> Storage {
        Storage::Value
    }
    fn apply(&self, current: &mut Option<Value>, write: Value) -> Result<(), ReducerError> {
        if !write.is_object() {
            return Err(ReducerError(format!(
                "usage_sum needs an object of counters, got {write}"
            )));
        }
        match current {
            Some(cur) if cur.is_object() => add_usage(cur, write),
            _ => *current = Some(write),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sum_adds_nested_counters() {
        let mut cur = None;
        let r = UsageSum;
        r.apply(
            &mut cur,
            json!({"total": {"a": 1}, "nodes": {"x": {"a": 1}}}),
        )
        .unwrap();
        r.apply(
            &mut cur,
            json!({"total": {"a": 2}, "nodes": {"y": {"a": 2}}}),
        )
        .unwrap();
        assert_eq!(
            cur,
            Some(json!({"total": {"a": 3}, "nodes": {"x": {"a": 1}, "y": {"a": 2}}}))
        );
        assert!(r.apply(&mut cur, json!(3)).is_err());
    }
}
