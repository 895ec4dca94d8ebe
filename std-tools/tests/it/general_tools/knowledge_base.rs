//! `knowledge_base_search`: embedders, the vector store and the tool's coded errors.

use super::*;

fn docs() -> Vec<Document> {
    vec![
        Document::new(
            "rust",
            "Rust is a systems programming language with ownership and borrowing",
        )
        .with_metadata(json!({"source": "lang.md"})),
        Document::new(
            "pasta",
            "To cook pasta boil salted water and cook the pasta for ten minutes",
        ),
        Document::new("cats", "Cats sleep most of the day and hunt mice at night"),
        Document::new(
            "tea",
            "Brew green tea with water below boiling for two minutes",
        ),
    ]
}

#[tokio::test]
async fn hash_embedder_ranks_by_shared_words() {
    let e = HashEmbedder::new(512);
    assert_eq!(e.embed_one("Hello, world"), e.embed_one("hello world"));
    let v = e.embed_one("some words here");
    assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
    assert!(e.embed_one("").iter().all(|x| *x == 0.0));

    let store = VectorStore::new();
    store.add_documents(&e, docs()).await.unwrap();
    assert_eq!(store.len(), 4);
    let q = e.embed_one("how long do I cook pasta");
    let hits = store.search(&q, 2, None).unwrap();
    assert_eq!(hits[0].document.id, "pasta");
    assert!(hits[0].score > hits[1].score);
    let q = e.embed_one("what do cats hunt at night");
    assert_eq!(store.search(&q, 1, None).unwrap()[0].document.id, "cats");
    let q = e.embed_one("ownership in the rust language");
    let hits = store.search(&q, 4, Some(0.3)).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].document.metadata, json!({"source": "lang.md"}));
    // Upsert by id, removal, dimension checks.
    store
        .add_documents(&e, vec![Document::new("cats", "Dogs bark")])
        .await
        .unwrap();
    assert_eq!(store.len(), 4);
    assert!(store.remove("tea"));
    assert!(!store.remove("tea"));
    assert!(matches!(
        store.search(&[1.0, 0.0], 1, None),
        Err(StoreError::Dimensions {
            expected: 512,
            got: 2
        })
    ));
    assert!(store.insert(Document::new("x", "x"), vec![1.0]).is_err());
}

#[tokio::test]
async fn vector_store_persists_to_json() {
    let e = HashEmbedder::default();
    let store = VectorStore::new();
    store.add_documents(&e, docs()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kb.json");
    store.save_json(&file).unwrap();
    let back = VectorStore::load_json(&file).unwrap();
    assert_eq!(back.len(), 4);
    let q = e.embed_one("green tea");
    assert_eq!(
        back.search(&q, 4, None).unwrap(),
        store.search(&q, 4, None).unwrap()
    );
    std::fs::write(&file, "{}").unwrap();
    assert!(matches!(
        VectorStore::load_json(&file),
        Err(StoreError::Io(_))
    ));
    assert!(VectorStore::load_json(dir.path().join("none.json")).is_err());
}

#[tokio::test]
async fn knowledge_base_search_tool() {
    let e = Arc::new(HashEmbedder::default());
    let store = Arc::new(VectorStore::new());
    store.add_documents(e.as_ref(), docs()).await.unwrap();
    let tool = KnowledgeBaseSearch::new(store, e).with_default_top_k(2);
    let ctx = ctx().await;
    let out = call(&tool, json!({"query": "cook pasta"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["query"], "cook pasta");
    let hits = out["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["id"], "pasta");
    assert!(hits[0]["text"].as_str().unwrap().contains("boil"));
    assert!(hits[0]["score"].as_f64().unwrap() > hits[1]["score"].as_f64().unwrap());
    let out = call(&tool, json!({"query": "cook pasta", "top_k": 4}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["hits"].as_array().unwrap().len(), 4);
    for args in [
        json!({"query": "  "}),
        json!({"query": "x", "top_k": 0}),
        json!({"query": "x", "top_k": 51}),
        json!({"query": "x", "top_k": "3"}),
        json!({"top_k": 3}),
    ] {
        assert_eq!(code(call(&tool, args, &ctx).await), "INVALID_ARGUMENTS");
    }
    // A store built with another embedder.
    let store = tool.store().expect("an application store").clone();
    let other = KnowledgeBaseSearch::new(store, Arc::new(HashEmbedder::new(8)));
    assert_eq!(
        code(call(&other, json!({"query": "x"}), &ctx).await),
        "STORE_MISMATCH"
    );
    // An empty store answers with no hits and a note.
    let empty = KnowledgeBaseSearch::new(
        Arc::new(VectorStore::new()),
        Arc::new(HashEmbedder::default()),
    );
    let out = call(&empty, json!({"query": "x"}), &ctx).await.unwrap();
    assert_eq!(out["hits"], json!([]));
    assert!(out["note"].is_string());
}

fn embeddings_response(vectors: &[(usize, Vec<f32>)]) -> Value {
    json!({
        "object": "list",
        "data": vectors.iter().map(|(i, v)| json!({
            "object": "embedding", "index": i, "embedding": v
        })).collect::<Vec<_>>(),
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8}
    })
}

#[tokio::test]
async fn openai_embedder_against_a_loopback_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(json!({
            "model": "text-embedding-3-small",
            "input": ["first", "second"],
            "encoding_format": "float"
        })))
        // Out of order on purpose: the embedder sorts by `index`.
        .respond_with(
            ResponseTemplate::new(200).set_body_json(embeddings_response(&[
                (1, vec![0.0, 1.0, 0.0]),
                (0, vec![1.0, 0.0, 0.0]),
            ])),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_partial_json(json!({"input": ["which is first?"]})))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(embeddings_response(&[(0, vec![0.9, 0.1, 0.0])])),
        )
        .mount(&server)
        .await;
    let base = format!("{}/v1/", server.uri());
    let emb = OpenAiEmbedder::from_lookup(None, |k| match k {
        "OPENAI_API_KEY" => Some("sk-test".into()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    })
    .unwrap();
    assert_eq!(emb.model(), "text-embedding-3-small");
    let v = emb
        .embed(&["first".to_string(), "second".to_string()])
        .await
        .unwrap();
    assert_eq!(v, vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]]);

    let store = Arc::new(VectorStore::new());
    store
        .insert(Document::new("a", "first"), v[0].clone())
        .unwrap();
    store
        .insert(Document::new("b", "second"), v[1].clone())
        .unwrap();
    let tool = KnowledgeBaseSearch::new(store, Arc::new(emb));
    let out = call(
        &tool,
        json!({"query": "which is first?", "top_k": 1}),
        &ctx().await,
    )
    .await
    .unwrap();
    assert_eq!(out["hits"][0]["id"], "a");
}

#[tokio::test]
async fn openai_embedder_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-wrong"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {
                "message": "Incorrect API key provided: sk-wrong.",
                "type": "invalid_request_error",
                "param": null,
                "code": "invalid_api_key"
            }
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-busy"))
        .respond_with(ResponseTemplate::new(500).set_body_string("overloaded"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-odd"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": "?"})))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let with_key = |k: &str| {
        OpenAiEmbedder::new("text-embedding-3-small", Some(k.to_string()))
            .unwrap()
            .with_base_url(base.clone())
    };
    let e = with_key("sk-wrong").embed(&["x".into()]).await.unwrap_err();
    assert!(
        matches!(&e, EmbedError::Auth(m) if m.contains("Incorrect API key")),
        "{e}"
    );
    let e = with_key("sk-busy").embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(&e, EmbedError::Http { status: 500, message } if message == "overloaded"));
    let e = with_key("sk-odd").embed(&["x".into()]).await.unwrap_err();
    assert!(matches!(e, EmbedError::InvalidResponse(_)));

    let store = Arc::new(VectorStore::new());
    let tool = KnowledgeBaseSearch::new(store, Arc::new(with_key("sk-wrong")));
    let e = call(&tool, json!({"query": "x"}), &ctx().await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "EMBEDDING_AUTH_FAILED");
    assert!(e.message.contains("Incorrect API key"), "{}", e.message);
    assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);

    // No key for the official endpoint: a configuration error, before any request.
    let e = OpenAiEmbedder::from_lookup(None, |_| None).unwrap_err();
    assert!(matches!(e, EmbedError::Config(m) if m.contains("OPENAI_API_KEY")));
    // A local server needs no key.
    assert!(OpenAiEmbedder::from_lookup(Some("nomic-embed-text"), |k| {
        (k == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:11434/v1".to_string())
    })
    .is_ok());
}

#[tokio::test]
async fn knowledge_base_files_configuration_errors_are_coded() {
    let tool = KnowledgeBaseSearch::from_settings();
    let args = json!({"query": "refunds"});
    // No settings at all, then settings of the wrong shape.
    let e = call(&tool, args.clone(), &ctx().await).await.unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED", "{}", e.message);
    assert!(e.message.contains("documents"), "{}", e.message);
    let e = call(
        &tool,
        args.clone(),
        &ctx_with(json!({"documents": 3})).await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED");
    // An unknown embedder.
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.json");
    std::fs::write(&docs, r#"[{"id": "r", "text": "Refunds within 30 days."}]"#).unwrap();
    let settings = |extra: Value| {
        let mut s = json!({"documents": "docs.json", "base_dir": dir.path()});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    };
    let e = call(
        &tool,
        args.clone(),
        &ctx_with(settings(json!({"embedder": "bert"}))).await,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_NOT_CONFIGURED");
    assert!(
        e.message.contains("unknown embedder `bert`"),
        "{}",
        e.message
    );
    // A missing file, then a file that is not a document list.
    let missing = json!({"documents": "nope.json", "base_dir": dir.path()});
    let e = call(&tool, args.clone(), &ctx_with(missing).await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_UNAVAILABLE");
    assert!(e.message.contains("nope.json"), "{}", e.message);
    std::fs::write(dir.path().join("bad.json"), r#"{"id": "r"}"#).unwrap();
    let bad = json!({"documents": "bad.json", "base_dir": dir.path()});
    let e = call(&tool, args.clone(), &ctx_with(bad).await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "KNOWLEDGE_BASE_UNAVAILABLE");
    assert!(e.message.contains("not a JSON list"), "{}", e.message);
    // The good configuration answers.
    let hits = call(&tool, args, &ctx_with(settings(json!({}))).await)
        .await
        .unwrap();
    assert_eq!(hits["hits"][0]["id"], "r", "{hits}");
}

#[tokio::test]
async fn embedding_errors_become_coded_tool_errors() {
    use agentgraph_std_tools::general::embeddings::EmbedError;
    let e: ToolError = EmbedError::Config("OPENAI_API_KEY is not set".into()).into();
    assert_eq!(e.code, "EMBEDDING_CONFIG");
    assert!(
        e.message.contains("retrying will not help"),
        "{}",
        e.message
    );
    // A server that answers 500: the search fails with EMBEDDING_FAILED, not a panic.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(500).set_body_string("overloaded"))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new("text-embedding-3-small", Some("k".into()))
        .unwrap()
        .with_base_url(format!("{}/v1", server.uri()));
    let tool = KnowledgeBaseSearch::new(Arc::new(VectorStore::new()), Arc::new(embedder));
    let e = call(&tool, json!({"query": "x"}), &ctx().await)
        .await
        .unwrap_err();
    assert_eq!(e.code, "EMBEDDING_FAILED", "{}", e.message);
}
