//! Helpers shared by the engine tests.
#![allow(dead_code)]

use agentgraph_runtime::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub fn list(name: &str) -> ChannelSpec {
    ChannelSpec::new(name, "list<string>".parse().unwrap())
        .reducer(Arc::new(Append))
        .default_value(json!([]))
}

pub fn int(name: &str) -> ChannelSpec {
    ChannelSpec::new(name, ValueType::Int).default_value(json!(0))
}

/// A node appending its own name to `log`.
pub fn logger(name: &'static str) -> Arc<dyn Node> {
    node_fn(move |_| async move { Ok(Update::new().set("log", json!([name]))) })
}

/// A node appending its name to `log` and counting its runs.
pub fn counted(name: &'static str, runs: Arc<AtomicUsize>) -> Arc<dyn Node> {
    node_fn(move |_| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(Update::new().set("log", json!([name])))
        }
    })
}

pub fn memory() -> Arc<dyn Checkpointer> {
    Arc::new(MemoryCheckpointer::new())
}

pub fn values(v: Value) -> Input {
    Input::values(v)
}

pub fn log_of(out: &RunOutput) -> Vec<String> {
    serde_json::from_value(out.values["log"].clone()).unwrap()
}
