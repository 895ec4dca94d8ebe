//! The conformance suite of [`Store`] backends: every [`ItemBackend`] (memory, sled, Postgres)
//! runs it through the runtime's [`ItemStore`], on a hand-moved clock, so expiry is tested
//! without sleeping.
//!
//! ```no_run
//! # async fn demo() {
//! use agentgraph_runtime::store::MemoryItems;
//! agentgraph_checkpoint_conformance::store::run_store_suite(|| async { MemoryItems::default() })
//!     .await;
//! # }
//! ```

use agentgraph_runtime::fnv1a64;
use agentgraph_runtime::store::{
    ns, Embedder, IndexConfig, ItemBackend, ItemStore, NamespaceQuery, SearchQuery, Store,
    StoreError,
};
use async_trait::async_trait;
use futures::FutureExt;
use serde_json::json;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A deterministic embedder for tests: a hashed bag of lower-cased words, `dims` wide.
pub struct HashEmbedder {
    /// Vector length.
    pub dims: usize,
}

impl HashEmbedder {
    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims.max(1)];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let i = (fnv1a64(word.to_lowercase().as_bytes()) % v.len() as u64) as usize;
            v[i] += 1.0;
        }
        v
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, StoreError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

/// A clock the test moves by hand (ms since the epoch).
#[derive(Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock at `ms`.
    pub fn at(ms: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(ms)))
    }
    /// The time.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
    /// The runtime's clock reading this one.
    pub fn clock(&self) -> agentgraph_runtime::store::Clock {
        let c = self.0.clone();
        Arc::new(move || c.load(Ordering::SeqCst))
    }
}

/// What a check gets: a store over a fresh backend, and its clock.
pub struct Kit {
    /// The store (with the [`HashEmbedder`] on field `text` when the check searches by meaning).
    pub store: Arc<dyn Store>,
    /// Its clock, starting at 1 000 000 ms.
    pub clock: ManualClock,
}

impl Kit {
    /// A kit over `backend`, embedding field `text` when `index`.
    pub fn new<B: ItemBackend>(backend: B, index: bool) -> Self {
        let clock = ManualClock::at(1_000_000);
        let mut store = ItemStore::with_backend(backend).with_clock(clock.clock());
        if index {
            store = store
                .with_index(IndexConfig::new(Arc::new(HashEmbedder { dims: 64 })).fields(["text"]));
        }
        Kit {
            store: Arc::new(store),
            clock,
        }
    }
}

/// Put, get, overwrite (created_at kept), missing items.
pub async fn put_get_round_trip(k: Kit) {
    let users = ns(&["users", "u1"]);
    let value = json!({"name": "Ada", "langs": ["en", "fr"], "n": 1.5, "nested": {"a": null}});
    k.store
        .put(&users, "profile", value.clone(), None)
        .await
        .expect("put");
    let item = k
        .store
        .get(&users, "profile")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(item.value, value);
    assert_eq!(item.namespace, users);
    assert_eq!(item.key, "profile");
    assert_eq!((item.created_at, item.updated_at), (1_000_000, 1_000_000));
    k.clock.advance(Duration::from_secs(5));
    k.store
        .put(&users, "profile", json!({"name": "Ada L."}), None)
        .await
        .expect("overwrite");
    let item = k
        .store
        .get(&users, "profile")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(item.value, json!({"name": "Ada L."}));
    assert_eq!((item.created_at, item.updated_at), (1_000_000, 1_005_000));
    assert_eq!(k.store.get(&users, "other").await.expect("get"), None);
    assert_eq!(
        k.store.get(&ns(&["users"]), "profile").await.expect("get"),
        None
    );
    // Keys are any text, namespaces any non-empty elements without separators.
    let odd = ns(&["ünï", "a/b", "x y"]);
    k.store
        .put(&odd, "", json!(1), None)
        .await
        .expect("empty key");
    k.store
        .put(&odd, "k/é", json!(2), None)
        .await
        .expect("odd key");
    assert_eq!(
        k.store.get(&odd, "").await.expect("get").map(|i| i.value),
        Some(json!(1))
    );
    assert_eq!(
        k.store
            .get(&odd, "k/é")
            .await
            .expect("get")
            .map(|i| i.value),
        Some(json!(2))
    );
}

/// Delete says whether there was an item; bad namespaces are typed errors.
pub async fn delete_and_invalid_namespaces(k: Kit) {
    let n = ns(&["a"]);
    k.store.put(&n, "k", json!(true), None).await.expect("put");
    assert!(k.store.delete(&n, "k").await.expect("delete"));
    assert!(!k.store.delete(&n, "k").await.expect("delete again"));
    assert_eq!(k.store.get(&n, "k").await.expect("get"), None);
    for bad in [vec![], ns(&["a", ""]), ns(&["a\u{1f}b"])] {
        let err = k.store.put(&bad, "k", json!(1), None).await.err();
        assert!(
            matches!(err, Some(StoreError::InvalidNamespace { .. })),
            "{bad:?}: {err:?}"
        );
    }
}

async fn fill(k: &Kit) {
    for (n, key, v) in [
        (ns(&["docs", "b"]), "2", json!({"kind": "note", "i": 3})),
        (ns(&["docs", "a"]), "1", json!({"kind": "note", "i": 1})),
        (ns(&["docs", "a"]), "2", json!({"kind": "todo", "i": 2})),
        (ns(&["docs"]), "0", json!({"kind": "note", "i": 0})),
        (ns(&["docsx"]), "1", json!({"kind": "note", "i": 9})),
        (ns(&["other", "a"]), "1", json!({"kind": "note", "i": 8})),
    ] {
        k.store.put(&n, key, v, None).await.expect("put");
    }
}

/// A prefix finds its own namespace and those below, never `docsx` for `docs`; namespace then
/// key order; equality filters on top-level keys; offset and limit.
pub async fn search_by_prefix_filter_and_page(k: Kit) {
    fill(&k).await;
    let is = |found: Vec<agentgraph_runtime::store::SearchItem>| -> Vec<i64> {
        found
            .iter()
            .map(|f| f.item.value["i"].as_i64().unwrap_or(-1))
            .collect()
    };
    let all = k
        .store
        .search(&SearchQuery::prefix(&["docs"]))
        .await
        .expect("search");
    assert_eq!(is(all.clone()), vec![0, 1, 2, 3]);
    assert!(all.iter().all(|f| f.score.is_none()));
    let notes = SearchQuery::prefix(&["docs"]).filter("kind", json!("note"));
    assert_eq!(
        is(k.store.search(&notes).await.expect("filter")),
        vec![0, 1, 3]
    );
    let page = notes.clone().offset(1).limit(1);
    assert_eq!(is(k.store.search(&page).await.expect("page")), vec![1]);
    let everything = k.store.search(&SearchQuery::default()).await.expect("all");
    assert_eq!(is(everything), vec![0, 1, 2, 3, 9, 8]);
    let none = SearchQuery::prefix(&["docs"]).filter("kind", json!("nothing"));
    assert!(k.store.search(&none).await.expect("none").is_empty());
}

/// Distinct namespaces, sorted, under a prefix, cut to a depth, paged.
pub async fn list_namespaces(k: Kit) {
    fill(&k).await;
    let list = |prefix: &[&str], max_depth, limit, offset| NamespaceQuery {
        prefix: ns(prefix),
        max_depth,
        limit,
        offset,
    };
    let got = k
        .store
        .list_namespaces(&list(&[], None, 0, 0))
        .await
        .expect("list");
    let want: Vec<Vec<String>> = vec![
        ns(&["docs"]),
        ns(&["docs", "a"]),
        ns(&["docs", "b"]),
        ns(&["docsx"]),
        ns(&["other", "a"]),
    ];
    assert_eq!(got, want);
    let got = k
        .store
        .list_namespaces(&list(&["docs"], None, 0, 0))
        .await
        .expect("prefix");
    assert_eq!(got, want[..3].to_vec());
    let got = k
        .store
        .list_namespaces(&list(&[], Some(1), 0, 0))
        .await
        .expect("depth");
    assert_eq!(got, vec![ns(&["docs"]), ns(&["docsx"]), ns(&["other"])]);
    let got = k
        .store
        .list_namespaces(&list(&[], None, 2, 1))
        .await
        .expect("page");
    assert_eq!(got, want[1..3].to_vec());
}

/// An item with a TTL is visible until it expires, then invisible everywhere; a sweep removes
/// it and only it.
pub async fn ttl_expiry_and_sweep(k: Kit) {
    let n = ns(&["sessions"]);
    k.store
        .put(&n, "short", json!(1), Some(Duration::from_secs(10)))
        .await
        .expect("put");
    k.store.put(&n, "kept", json!(2), None).await.expect("put");
    k.clock.advance(Duration::from_millis(9_999));
    assert!(k.store.get(&n, "short").await.expect("get").is_some());
    k.clock.advance(Duration::from_millis(1));
    assert_eq!(k.store.get(&n, "short").await.expect("get"), None);
    let keys: Vec<String> = k
        .store
        .search(&SearchQuery::prefix(&["sessions"]))
        .await
        .expect("search")
        .into_iter()
        .map(|f| f.item.key)
        .collect();
    assert_eq!(keys, vec!["kept".to_string()]);
    assert!(!k
        .store
        .delete(&n, "short")
        .await
        .expect("an expired item is not there"));
    k.store
        .put(&ns(&["gone"]), "x", json!(0), Some(Duration::from_secs(1)))
        .await
        .expect("put");
    k.clock.advance(Duration::from_secs(2));
    let spaces = k
        .store
        .list_namespaces(&NamespaceQuery::default())
        .await
        .expect("list");
    assert_eq!(spaces, vec![ns(&["sessions"])]);
    let swept = k.store.sweep().await.expect("sweep");
    assert_eq!(
        swept, 1,
        "only `gone/x` was left to sweep (`short` was deleted)"
    );
    assert_eq!(k.store.sweep().await.expect("sweep again"), 0);
    assert!(k.store.get(&n, "kept").await.expect("get").is_some());
    // Putting again after expiry starts a new item.
    k.store
        .put(&n, "short", json!(3), Some(Duration::from_secs(10)))
        .await
        .expect("put");
    let item = k
        .store
        .get(&n, "short")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(item.created_at, k.clock.now());
}

/// `put_if_absent`: the first writes, a second (even concurrent ones) sees the first's item and
/// writes nothing; an expired item counts as absent.
pub async fn put_if_absent_writes_once(k: Kit) {
    let n = ns(&["owners"]);
    let first = k
        .store
        .put_if_absent(&n, "t1", json!("alice"), None)
        .await
        .expect("first");
    assert_eq!(first, None, "nothing was there");
    let second = k
        .store
        .put_if_absent(&n, "t1", json!("bob"), None)
        .await
        .expect("second")
        .expect("alice's item is there");
    assert_eq!(second.value, json!("alice"));
    assert_eq!(
        k.store.get(&n, "t1").await.expect("get").map(|i| i.value),
        Some(json!("alice"))
    );
    // Sixteen concurrent claims of a new key: exactly one writes, all see its value.
    let claims = (0..16).map(|i| {
        let store = k.store.clone();
        let n = n.clone();
        async move {
            store
                .put_if_absent(&n, "t2", json!(i), None)
                .await
                .expect("claim")
                .map(|item| item.value)
        }
    });
    let answers = futures::future::join_all(claims).await;
    let winners: Vec<usize> = (0..16).filter(|i| answers[*i].is_none()).collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    let stored = k.store.get(&n, "t2").await.expect("get").expect("written");
    assert_eq!(stored.value, json!(winners[0]));
    assert!(answers.iter().flatten().all(|v| *v == stored.value));
    // Expired: absent.
    k.store
        .put_if_absent(&n, "t3", json!("old"), Some(Duration::from_secs(1)))
        .await
        .expect("put");
    k.clock.advance(Duration::from_secs(2));
    let again = k
        .store
        .put_if_absent(&n, "t3", json!("new"), None)
        .await
        .expect("again");
    assert_eq!(again, None, "the expired item does not count");
    assert_eq!(
        k.store.get(&n, "t3").await.expect("get").map(|i| i.value),
        Some(json!("new"))
    );
}

/// Without an embedder, a search with a query is [`StoreError::NoEmbedder`].
pub async fn query_without_embedder_is_an_error(k: Kit) {
    k.store
        .put(&ns(&["d"]), "1", json!({"text": "x"}), None)
        .await
        .expect("put");
    let err = k
        .store
        .search(&SearchQuery::prefix(&["d"]).query("x"))
        .await
        .err();
    assert_eq!(err, Some(StoreError::NoEmbedder));
}

/// With an embedder, a query ranks by similarity, best first; items without the embedded
/// field are not found; filters and limits still apply.
pub async fn query_ranks_by_similarity(k: Kit) {
    let d = ns(&["kb"]);
    for (key, text) in [
        ("rust", "the rust borrow checker enforces ownership"),
        ("python", "python has a garbage collector"),
        ("pasta", "cooking pasta al dente"),
    ] {
        k.store
            .put(&d, key, json!({"text": text, "lang": key == "rust"}), None)
            .await
            .expect("put");
    }
    k.store
        .put(&d, "bare", json!({"other": "rust borrow"}), None)
        .await
        .expect("put");
    let found = k
        .store
        .search(&SearchQuery::prefix(&["kb"]).query("how does the borrow checker work in rust"))
        .await
        .expect("search");
    let keys: Vec<&str> = found.iter().map(|f| f.item.key.as_str()).collect();
    assert_eq!(keys.first(), Some(&"rust"), "{keys:?}");
    assert!(!keys.contains(&"bare"), "{keys:?}");
    assert_eq!(keys.len(), 3);
    let scores: Vec<f32> = found.iter().map(|f| f.score.unwrap_or(f32::NAN)).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    let cooking = k
        .store
        .search(&SearchQuery::prefix(&["kb"]).query("pasta cooking").limit(1))
        .await
        .expect("search");
    assert_eq!(cooking.len(), 1);
    assert_eq!(cooking[0].item.key, "pasta");
    let filtered = k
        .store
        .search(
            &SearchQuery::prefix(&["kb"])
                .query("pasta cooking")
                .filter("lang", json!(true)),
        )
        .await
        .expect("search");
    assert_eq!(filtered.len(), 1);
    assert_eq!(filtered[0].item.key, "rust");
}

/// Runs every store check, each on a fresh backend from `make`, and panics at the end listing
/// the checks that failed.
pub async fn run_store_suite<B, F, Fut>(mut make: F)
where
    B: ItemBackend,
    F: FnMut() -> Fut,
    Fut: Future<Output = B>,
{
    let mut failed: Vec<String> = Vec::new();
    macro_rules! check {
        ($name:ident, $index:expr) => {{
            let kit = Kit::new(make().await, $index);
            if let Err(p) = AssertUnwindSafe($name(kit)).catch_unwind().await {
                failed.push(format!("{}: {}", stringify!($name), crate::panic_text(&*p)));
            }
        }};
    }
    check!(put_get_round_trip, false);
    check!(delete_and_invalid_namespaces, false);
    check!(search_by_prefix_filter_and_page, false);
    check!(list_namespaces, false);
    check!(ttl_expiry_and_sweep, false);
    check!(put_if_absent_writes_once, false);
    check!(query_without_embedder_is_an_error, false);
    check!(query_ranks_by_similarity, true);
    assert!(
        failed.is_empty(),
        "store checks failed:\n{}",
        failed.join("\n")
    );
}
