use agentgraph_runtime::*;
use serde_json::json;
use std::sync::Arc;

fn chain_graph() -> GraphBuilder {
    GraphBuilder::new("chain")
        .channel(ChannelSpec::new("count", ValueType::Int).default_value(json!(0)))
        .channel(
            ChannelSpec::new("trace", "list<string>".parse().unwrap())
                .reducer(Arc::new(Append))
                .default_value(json!([])),
        )
        .node(
            "a",
            node_fn(|ctx| async move {
                Ok(Update::new()
                    .set("count", json!(ctx.state().i64("count") + 1))
                    .set("trace", json!(["a"])))
            }),
        )
        .node(
            "b",
            node_fn(|ctx| async move {
                Ok(Update::new()
                    .set("count", json!(ctx.state().i64("count") + 1))
                    .set("trace", json!(["b"])))
            }),
        )
        .chain(&["START", "a", "b", "END"])
}

#[tokio::test]
async fn smoke_memory_and_sled() {
    let g = chain_graph().compile().unwrap();
    let out = g
        .invoke(Input::values(json!({})), RunConfig::thread("x"))
        .await
        .unwrap();
    assert_eq!(out.values, json!({"count": 2, "trace": ["a", "b"]}));

    let dir = tempfile::tempdir().unwrap();
    let cp = Arc::new(SledCheckpointer::open(dir.path()).unwrap());
    let g = chain_graph()
        .compile()
        .unwrap()
        .with_checkpointer(cp.clone());
    let out = g
        .invoke(Input::values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(out.values, json!({"count": 2, "trace": ["a", "b"]}));
    assert_eq!(out.stats.checkpoints_written, 4);
    let out = g
        .invoke(Input::values(json!({})), RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(
        out.values,
        json!({"count": 4, "trace": ["a", "b", "a", "b"]})
    );
    let h = g.history("t", ListQuery::default()).await.unwrap();
    let steps: Vec<i64> = h.iter().map(|e| e.step).collect();
    assert_eq!(steps, vec![6, 5, 4, 3, 2, 1, 0, -1]);
    let s = g.get_state("t", None).await.unwrap().unwrap();
    assert_eq!(s.values, json!({"count": 4, "trace": ["a", "b", "a", "b"]}));
}
