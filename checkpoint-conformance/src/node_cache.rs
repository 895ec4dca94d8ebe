//! The node cache on a store backend: a graph whose node has a cache policy runs it once per
//! distinct input until the entry expires; a hit is streamed as `cached`.

use crate::store::ManualClock;
use agentgraph_runtime::cache::{CachePolicy, StoreCache};
use agentgraph_runtime::store::{ItemBackend, ItemStore};
use agentgraph_runtime::{
    node_fn, ChannelSpec, CompiledGraph, EventKind, GraphBuilder, Input, Mode, Modes, NodeOptions,
    RunConfig, Update,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A graph `START → double → END` whose node counts its runs in `calls`, cached for `ttl`.
fn doubling_graph(name: &str, calls: Arc<AtomicUsize>, ttl: Duration) -> CompiledGraph {
    let node = node_fn(move |ctx| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(Update::new().set("out", json!(ctx.state().i64("x") * 2)))
        }
    });
    let options = NodeOptions {
        cache: Some(CachePolicy::new(Some(ttl))),
        ..NodeOptions::default()
    };
    GraphBuilder::new(name)
        .channel(ChannelSpec::new("x", "int".parse().expect("type")))
        .channel(ChannelSpec::new("out", "int".parse().expect("type")))
        .node_with("double", node, options)
        .chain(&["START", "double", "END"])
        .compile()
        .expect("the graph compiles")
}

/// Runs the graph on a new thread with `x`; returns `out` and whether the node's update was
/// streamed as cached.
async fn run(graph: &CompiledGraph, thread: &str, x: i64) -> (Value, bool) {
    let config = RunConfig::thread(thread).modes(Modes::of(&[Mode::Updates]));
    let (events, out) = graph
        .stream(Input::values(json!({ "x": x })), config)
        .collect()
        .await;
    let out = out.expect("the run succeeds");
    let cached = events.iter().any(|e| match &e.kind {
        EventKind::Updates(u) => u["double"]["__metadata__"]["cached"] == json!(true),
        _ => false,
    });
    (out.values["out"].clone(), cached)
}

/// The same input reuses the update (the node ran once), another input misses, and the
/// entry is not used once its TTL has passed. Panics on a violation.
pub async fn run_cache_suite<B: ItemBackend>(backend: B) {
    let clock = ManualClock::at(5_000_000);
    let store = ItemStore::with_backend(backend).with_clock(clock.clock());
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = doubling_graph("cache-suite", calls.clone(), Duration::from_secs(60))
        .with_cache(Arc::new(StoreCache::new(Arc::new(store))));

    assert_eq!(run(&graph, "t1", 21).await, (json!(42), false));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Another thread, same input: not run, the update applied and flagged.
    assert_eq!(run(&graph, "t2", 21).await, (json!(42), true));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "a hit does not run the node"
    );
    // Another input misses.
    assert_eq!(run(&graph, "t3", 5).await, (json!(10), false));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Just before expiry: a hit; at expiry: runs again, and is cached anew.
    clock.advance(Duration::from_millis(59_999));
    assert_eq!(run(&graph, "t4", 21).await, (json!(42), true));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    clock.advance(Duration::from_millis(1));
    assert_eq!(run(&graph, "t5", 21).await, (json!(42), false));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "an expired entry is not used"
    );
    assert_eq!(run(&graph, "t6", 21).await, (json!(42), true));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}
