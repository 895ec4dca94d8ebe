//! The entries that use the graph's store and cache: an `llm` node's `memory` on the store
//! (its namespace from the state; the E0272 checks) and a node's `cache { ttl }`.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::{Diagnostic, Project, Registry};
use agentgraph_runtime::cache::StoreCache;
use agentgraph_runtime::store::{InMemoryStore, SearchQuery, Store};
use agentgraph_runtime::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

fn load(text: String) -> Result<CompiledGraph, Vec<Diagnostic>> {
    let root = PathBuf::from("/virtual/store.ag");
    let files = BTreeMap::from([(root.clone(), text)]);
    let project = Project::from_files(&root, &files).expect("loads");
    let mut reg = Registry::default();
    agentgraph_dsl::agents::register(&mut reg, Default::default());
    project.compile(&reg)
}

fn chat(memory: &str) -> Result<CompiledGraph, Vec<Diagnostic>> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../graphs/examples/scripts/chat.json"
    );
    load(format!(
        r#"graph chat {{
  state {{
    messages: messages
    user: string = ""
  }}
  model main = scripted {{ script: "{script}" }}
  node agent: llm {{ model: main, messages: messages, memory: {memory} }}
  START -> agent -> END
}}
"#
    ))
}

fn codes_of(ds: &[Diagnostic]) -> Vec<&str> {
    ds.iter().map(|d| d.code).collect()
}

#[test]
fn a_store_memory_needs_a_namespace_and_only_it_takes_one() {
    let ds = chat(r#"{ store: "store" }"#).err().expect("no namespace");
    assert_eq!(codes_of(&ds), [codes::BAD_MEMORY.id], "{ds:#?}");
    let ds = chat(r#"{ store: "store", namespace: [] }"#)
        .err()
        .expect("empty");
    assert_eq!(codes_of(&ds), [codes::BAD_MEMORY.id], "{ds:#?}");
    let ds = chat(r#"{ store: "buffer", namespace: ["users", user] }"#)
        .err()
        .expect("a namespace on a buffer");
    assert_eq!(codes_of(&ds), [codes::BAD_MEMORY.id], "{ds:#?}");
    let ds = chat(r#"{ store: "store", namespace: ["users", usr] }"#)
        .err()
        .expect("an unknown name");
    assert_eq!(codes_of(&ds), [codes::UNKNOWN_NAME.id], "{ds:#?}");
    chat(r#"{ store: "store", namespace: ["users", user], window: 10 }"#).expect("compiles");
}

#[tokio::test]
async fn a_store_memory_keeps_each_users_conversation_across_threads() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let graph = chat(r#"{ store: "store", namespace: ["users", user] }"#)
        .expect("compiles")
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()))
        .with_store(store.clone());
    let ask = |user: &str, id: &str| {
        Input::values(json!({"user": user, "messages": [
            {"type": "human", "id": id, "content": "hi"}]}))
    };
    for (user, thread) in [("ada", "t1"), ("ada", "t2"), ("bob", "t3")] {
        graph
            .invoke(ask(user, thread), RunConfig::thread(thread))
            .await
            .expect("runs");
    }
    let count = |user: &'static str| {
        let store = store.clone();
        async move {
            store
                .search(&SearchQuery::prefix(&["users", user]))
                .await
                .expect("search")
                .len()
        }
    };
    assert_eq!(count("ada").await, 4, "two exchanges of ada's two threads");
    assert_eq!(count("bob").await, 2);
}

#[tokio::test]
async fn a_cached_node_reuses_its_update_for_the_same_input() {
    let graph = load(
        r#"graph lookup {
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
"#
        .to_string(),
    )
    .expect("compiles")
    .with_cache(Arc::new(StoreCache::in_memory()));
    let run = |q: &str, thread: &str| {
        let graph = graph.clone();
        let config = RunConfig::thread(thread).modes(Modes::of(&[Mode::Updates]));
        let input = Input::values(json!({ "query": q }));
        async move {
            let (events, out) = graph.stream(input, config).collect().await;
            let cached = events.iter().any(|e| {
                matches!(&e.kind, EventKind::Updates(u) if u["fetch"]["__metadata__"]["cached"] == json!(true))
            });
            (out.expect("runs").values["answer"].clone(), cached)
        }
    };
    assert_eq!(run("tea", "a").await, (json!("found tea"), false));
    assert_eq!(run("tea", "b").await, (json!("found tea"), true));
    assert_eq!(run("milk", "c").await, (json!("found milk"), false));
}
