//! The long-term store and the node cache: the shared suites on memory and sled, and what
//! graphs see of them (one thread's writes read on another, subgraphs, the cache's rules).

use agentgraph_checkpoint_conformance::{node_cache, store as suite};
use agentgraph_runtime::cache::{CachePolicy, NodeCache, StoreCache};
use agentgraph_runtime::store::{
    ns, InMemoryStore, MemoryItems, SearchQuery, SledItemStore, SledItems, Store,
};
use agentgraph_runtime::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::test]
async fn memory_store_conforms() {
    suite::run_store_suite(|| async { MemoryItems::default() }).await;
}

#[tokio::test]
async fn sled_store_conforms() {
    let base = tempfile::tempdir().expect("tempdir");
    let n = AtomicUsize::new(0);
    suite::run_store_suite(|| {
        let path = base
            .path()
            .join(format!("db-{}", n.fetch_add(1, Ordering::Relaxed)));
        async move { SledItems::open(&path).expect("open sled") }
    })
    .await;
}

#[tokio::test]
async fn node_cache_on_memory() {
    node_cache::run_cache_suite(MemoryItems::default()).await;
}

#[tokio::test]
async fn node_cache_on_sled() {
    let dir = tempfile::tempdir().expect("tempdir");
    node_cache::run_cache_suite(SledItems::open(dir.path()).expect("open sled")).await;
}

/// The sled store shares the checkpointer's database (its own tree), and what it wrote is
/// there after the database is opened again.
#[tokio::test]
async fn sled_store_beside_the_checkpoints_survives_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let cp = SledCheckpointer::open(dir.path()).expect("open");
        let store = SledItemStore::open_tree(cp.store().db(), "store").expect("tree");
        store
            .put(&ns(&["users", "u1"]), "name", json!("Ada"), None)
            .await
            .expect("put");
    }
    let cp = SledCheckpointer::open(dir.path()).expect("reopen");
    let store = SledItemStore::open_tree(cp.store().db(), "store").expect("tree");
    let item = store
        .get(&ns(&["users", "u1"]), "name")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(item.value, json!("Ada"));
}

/// A graph whose `remember` node puts `fact` under the user's namespace and whose `recall`
/// node reads every fact of that user back into `facts`.
fn memory_graph() -> GraphBuilder {
    let remember = node_fn(|ctx| async move {
        let store = ctx
            .store()
            .ok_or_else(|| NodeError::fatal("no store"))?
            .clone();
        let user = ctx.state().str("user").to_string();
        if let Some(fact) = ctx.state().get("fact").and_then(|v| v.as_str()) {
            store
                .put(&ns(&["facts", &user]), fact, json!({ "fact": fact }), None)
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
        }
        Ok(Update::new())
    });
    let recall = node_fn(|ctx| async move {
        let store = ctx
            .store()
            .ok_or_else(|| NodeError::fatal("no store"))?
            .clone();
        let user = ctx.state().str("user").to_string();
        let found = store
            .search(&SearchQuery::prefix(&["facts", &user]))
            .await
            .map_err(|e| NodeError::fatal(e.to_string()))?;
        let facts: Vec<_> = found
            .into_iter()
            .map(|f| f.item.value["fact"].clone())
            .collect();
        Ok(Update::new().set("facts", json!(facts)))
    });
    GraphBuilder::new("memory")
        .channel(ChannelSpec::new("user", "string".parse().expect("type")))
        .channel(ChannelSpec::new("fact", "string?".parse().expect("type")))
        .channel(ChannelSpec::new("facts", "json".parse().expect("type")))
        .node("remember", remember)
        .node("recall", recall)
        .chain(&["START", "remember", "recall", "END"])
}

#[tokio::test]
async fn a_write_on_one_thread_is_read_on_another() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let graph = memory_graph()
        .compile()
        .expect("compiles")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()))
        .with_store(store.clone());
    let a = graph
        .invoke(
            Input::values(json!({"user": "u1", "fact": "likes tea"})),
            RunConfig::thread("thread-a"),
        )
        .await
        .expect("thread a");
    assert_eq!(a.values["facts"], json!(["likes tea"]));
    let b = graph
        .invoke(
            Input::values(json!({"user": "u1"})),
            RunConfig::thread("thread-b"),
        )
        .await
        .expect("thread b");
    assert_eq!(
        b.values["facts"],
        json!(["likes tea"]),
        "thread b sees thread a's write"
    );
    let other = graph
        .invoke(
            Input::values(json!({"user": "u2"})),
            RunConfig::thread("thread-c"),
        )
        .await
        .expect("thread c");
    assert_eq!(
        other.values["facts"],
        json!([]),
        "another user's namespace is empty"
    );
    // The embedder's own handle sees it too.
    assert!(store
        .get(&ns(&["facts", "u1"]), "likes tea")
        .await
        .expect("get")
        .is_some());
}

#[tokio::test]
async fn without_a_store_the_context_has_none() {
    let graph = memory_graph().compile().expect("compiles");
    let err = graph
        .invoke(Input::values(json!({"user": "u1"})), RunConfig::thread("t"))
        .await
        .expect_err("the node fails");
    assert!(err.to_string().contains("no store"), "{err}");
}

#[tokio::test]
async fn subgraphs_share_the_parent_store() {
    let child = memory_graph().compile().expect("child compiles");
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    store
        .put(
            &ns(&["facts", "u9"]),
            "k",
            json!({"fact": "from before"}),
            None,
        )
        .await
        .expect("put");
    let parent = GraphBuilder::new("parent")
        .channel(ChannelSpec::new("user", "string".parse().expect("type")))
        .channel(ChannelSpec::new("fact", "string?".parse().expect("type")))
        .channel(ChannelSpec::new("facts", "json".parse().expect("type")))
        .subgraph("inner", Subgraph::new(child))
        .chain(&["START", "inner", "END"])
        .compile()
        .expect("parent compiles")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()))
        .with_store(store);
    let out = parent
        .invoke(
            Input::values(json!({"user": "u9", "fact": "new"})),
            RunConfig::thread("p"),
        )
        .await
        .expect("runs");
    assert_eq!(out.values["facts"], json!(["from before", "new"]));
}

/// A node that fails on its first call, then counts its successes.
fn flaky_graph(calls: Arc<AtomicUsize>, cache: Arc<dyn NodeCache>) -> CompiledGraph {
    let node = node_fn(move |ctx| {
        let calls = calls.clone();
        async move {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                return Err(NodeError::fatal("first call fails"));
            }
            if ctx.state().str("x") == "ask" {
                let answer = ctx.interrupt(json!("why?"))?;
                return Ok(Update::new().set("out", answer));
            }
            Ok(Update::new().set("out", json!(n)))
        }
    });
    let options = NodeOptions {
        cache: Some(CachePolicy::new(None)),
        ..NodeOptions::default()
    };
    GraphBuilder::new("flaky")
        .channel(ChannelSpec::new("x", "string".parse().expect("type")))
        .channel(ChannelSpec::new("out", "json".parse().expect("type")))
        .node_with("work", node, options)
        .chain(&["START", "work", "END"])
        .compile()
        .expect("compiles")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()))
        .with_cache(cache)
}

#[tokio::test]
async fn failures_and_interrupts_are_not_cached() {
    let calls = Arc::new(AtomicUsize::new(0));
    let cache: Arc<dyn NodeCache> = Arc::new(StoreCache::in_memory());
    let graph = flaky_graph(calls.clone(), cache.clone());
    let input = || Input::values(json!({"x": "go"}));
    assert!(graph
        .invoke(input(), RunConfig::thread("t1"))
        .await
        .is_err());
    let ok = graph
        .invoke(input(), RunConfig::thread("t2"))
        .await
        .expect("second run");
    assert_eq!(
        ok.values["out"],
        json!(1),
        "the failure was not cached: the node ran again"
    );
    let hit = graph
        .invoke(input(), RunConfig::thread("t3"))
        .await
        .expect("third run");
    assert_eq!(hit.values["out"], json!(1));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the success was cached");
    // An interrupt is not cached: the resumed run (same input) runs the node again; its
    // result, made of a human's answer, is not cached either.
    let ask = || Input::values(json!({"x": "ask"}));
    let first = graph
        .invoke(ask(), RunConfig::thread("t4"))
        .await
        .expect("interrupts");
    assert!(matches!(first.status, RunStatus::Interrupted { .. }));
    let resumed = graph
        .invoke(Input::resume(json!("because")), RunConfig::thread("t4"))
        .await
        .expect("resumes");
    assert_eq!(resumed.values["out"], json!("because"));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // Clearing forgets the entries.
    assert_eq!(cache.clear("flaky", Some("work")).await.expect("clear"), 1);
    let after = graph
        .invoke(input(), RunConfig::thread("t5"))
        .await
        .expect("runs");
    assert_eq!(after.values["out"], json!(4));
}
