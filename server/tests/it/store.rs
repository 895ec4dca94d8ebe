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

/// A server opens a new sled folder with value compression (sled's page compression builds a
/// zstd context per logged message; see docs/runtime.md), unless the environment chose.
#[tokio::test]
async fn a_new_sled_folder_of_the_server_compresses_values_not_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("lookup.ag"), LOOKUP).expect("write");
    let db = dir.path().join("db");
    let config = ServerConfig::new(dir.path(), &db).storage(Storage::Sled(db.clone()));
    let state = ServerState::new(&config).expect("state");
    state.shutdown().await.expect("shutdown");
    drop(state);
    let chosen = std::env::var("AGENTGRAPH_SLED_COMPRESSION").ok();
    let (pages, marker): (bool, Option<&[u8]>) = match chosen.as_deref() {
        None => (false, Some(b"tagged-2")),
        Some("values") => (false, Some(b"tagged-2")),
        Some("off" | "0" | "false" | "no") => (false, None),
        Some(_) => (true, None),
    };
    assert_eq!(
        agentgraph_runtime::checkpoint::sled_folder_compression(&db),
        Some(pages),
        "sled's page compression (AGENTGRAPH_SLED_COMPRESSION={chosen:?})"
    );
    let sled = agentgraph_runtime::checkpoint::sled_config(&db, 1 << 20, pages)
        .open()
        .expect("reopen");
    let found = sled.get(b"agentgraph.wal.value-codec").expect("get");
    assert_eq!(found.as_deref(), marker, "the value codec's marker");
}
