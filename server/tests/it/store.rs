//! Every graph the server compiles gets the storage's long-term store and node cache: trees of
//! the sled database, or memory, or what the application gives (`ServerConfig::store`).

use agentgraph_runtime::store::{ns, InMemoryStore, Store};
use agentgraph_runtime::*;
use agentgraph_server::{ServerConfig, ServerState, Storage};
use serde_json::json;
use std::sync::Arc;

const LOOKUP: &str = r#"graph lookup {
  state {
    query: string = ""
    answer: string = ""
  }
  node fetch {
    set { answer: "found " + query }
    cache { ttl: 10m }
  }
  START -> fetch -> END
}
"#;

/// Whether a run of `graph` on `thread` had its `fetch` update from the cache.
async fn cached(graph: &CompiledGraph, thread: &str) -> bool {
    let config = RunConfig::thread(thread).modes(Modes::of(&[Mode::Updates]));
    let (events, out) = graph
        .stream(Input::values(json!({"query": "tea"})), config)
        .collect()
        .await;
    assert_eq!(out.expect("runs").values["answer"], json!("found tea"));
    events.iter().any(|e| {
        matches!(&e.kind, EventKind::Updates(u) if u["fetch"]["__metadata__"]["cached"] == json!(true))
    })
}

#[tokio::test]
async fn sled_and_memory_storage_give_graphs_a_store_and_a_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("lookup.ag"), LOOKUP).expect("write");
    let db = dir.path().join("db");
    for storage in [Storage::Sled(db.clone()), Storage::Memory] {
        let config = ServerConfig::new(dir.path(), &db).storage(storage);
        let state = ServerState::new(&config).expect("state");
        let graph = state.graphs().get("lookup").await.expect("compiles");
        let store = graph.store().expect("a store").clone();
        assert!(graph.cache().is_some());
        assert!(!cached(&graph, "t1").await);
        assert!(
            cached(&graph, "t2").await,
            "the second thread reuses the update"
        );
        store
            .put(&ns(&["probe"]), "k", json!(1), None)
            .await
            .expect("the store takes writes");
    }
}

#[tokio::test]
async fn a_given_store_wins_and_a_bare_checkpointer_has_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("lookup.ag"), LOOKUP).expect("write");
    let bare = Storage::Checkpointer {
        checkpointer: Arc::new(MemoryCheckpointer::new()),
        events_dir: None,
    };
    let config = ServerConfig::new(dir.path(), "unused").storage(bare.clone());
    let state = ServerState::new(&config).expect("state");
    let graph = state.graphs().get("lookup").await.expect("compiles");
    assert!(graph.store().is_none() && graph.cache().is_none());
    let given: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    given
        .put(&ns(&["mark"]), "k", json!("given"), None)
        .await
        .expect("put");
    let config = ServerConfig::new(dir.path(), "unused")
        .storage(bare)
        .store(given);
    let state = ServerState::new(&config).expect("state");
    let graph = state.graphs().get("lookup").await.expect("compiles");
    let item = graph
        .store()
        .expect("the given store")
        .get(&ns(&["mark"]), "k")
        .await
        .expect("get");
    assert_eq!(item.map(|i| i.value), Some(json!("given")));
}
