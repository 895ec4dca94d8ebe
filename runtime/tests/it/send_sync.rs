//! Thread-safety the public API promises, pinned at compile time: a compiled graph, its nodes
//! and checkpointers are shared across tasks and threads (the server holds them in `Arc`s and
//! runs threads concurrently), and a run's stream and futures move to other tasks. Removing
//! any of these bounds is a breaking change; this module stops compiling first.

use agentgraph_runtime::{
    Checkpointer, CompiledGraph, GraphError, Input, MemoryCheckpointer, Node, RunConfig, RunError,
    RunOutput, RunStream, SledCheckpointer,
};
use std::future::Future;
use std::sync::Arc;

fn send_sync<T: Send + Sync + ?Sized>() {}
fn send<T: Send + ?Sized>() {}
fn send_future<F: Future + Send>(f: F) -> F {
    f
}

#[test]
fn graphs_nodes_and_checkpointers_are_send_and_sync() {
    send_sync::<CompiledGraph>();
    send_sync::<Arc<CompiledGraph>>();
    send_sync::<dyn Node>();
    send_sync::<Arc<dyn Node>>();
    send_sync::<dyn Checkpointer>();
    send_sync::<Arc<dyn Checkpointer>>();
    send_sync::<MemoryCheckpointer>();
    send_sync::<SledCheckpointer>();
    send_sync::<RunOutput>();
    send_sync::<RunError>();
    send_sync::<GraphError>();
}

#[test]
fn a_run_stream_is_send() {
    send::<RunStream>();
}

/// The futures of `invoke` and of the stream's methods can be spawned on a multi-threaded
/// runtime. Only type-checked: the futures are dropped without being polled.
#[test]
fn run_futures_are_send() {
    fn check(g: &CompiledGraph, mut s: RunStream) {
        drop(send_future(g.invoke(
            Input::values(serde_json::json!({})),
            RunConfig::thread("t"),
        )));
        drop(send_future(s.next()));
        drop(send_future(s.finish()));
    }
    let _ = check;
}
