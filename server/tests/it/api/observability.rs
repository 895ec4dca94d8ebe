//! `GET /health` and `GET /metrics`: the counters, gauges and latency histograms after runs of
//! a counter and of a chat graph on the scripted model (token counts from its script).

use super::*;
use agentgraph_server::telemetry::MetricsLayer;
use std::sync::Once;

/// Installs the metrics layer as this test binary's subscriber (once; other tests ignore it).
fn metrics_layer() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::Layer;
        let subscriber =
            tracing_subscriber::registry().with(MetricsLayer.with_filter(MetricsLayer::filter()));
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// The value of a sample line `name value` (labels included in `name`).
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_metrics() {
    metrics_layer();
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(
        graphs_dir().join("counter.ag"),
        dir.path().join("counter.ag"),
    )
    .expect("copy");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples/scripts/chat.json");
    std::fs::write(
        dir.path().join("chat.ag"),
        format!(
            "graph chat {{\n  state {{ messages: messages }}\n  model main = scripted {{ script: \"{}\" }}\n  node agent: llm {{ model: main, messages: messages }}\n  START -> agent -> END\n}}\n",
            script.display()
        ),
    )
    .expect("graph");
    let s = Server::start(ServerConfig::new(dir.path(), "unused").storage(Storage::Memory)).await;
    let scrape = || async {
        let r = s.http.get(s.url("/metrics")).send().await.expect("send");
        assert_eq!(r.status().as_u16(), 200);
        let ct = r.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .to_string();
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
        r.text().await.expect("text")
    };
    let (st, v) = s.get("/health").await;
    assert_eq!((st, v["status"].as_str()), (200, Some("ok")), "{v}");
    assert_eq!(v["storage"], "ok");

    let before = scrape().await;
    // A stream held open shows in the gauge.
    let open = s
        .http
        .get(s.url("/threads/m1/events"))
        .send()
        .await
        .expect("stream");
    let (st, _) = s
        .post(
            "/threads/m1/runs",
            json!({"graph": "counter", "input": {"limit": 3}}),
        )
        .await;
    assert_eq!(st, 202);
    s.run_end("m1", 0).await;
    let (st, _) = s
        .post(
            "/threads/m2/runs",
            json!({"graph": "chat", "input": {"messages": [{"type": "human", "content": "hi"}]}}),
        )
        .await;
    assert_eq!(st, 202);
    s.run_end("m2", 0).await;
    let after = scrape().await;
    drop(open);

    let delta = |name: &str| sample(&after, name) - sample(&before, name);
    assert!(delta("agentgraph_runs_started_total") >= 2.0, "{after}");
    assert!(
        delta("agentgraph_runs_total{status=\"done\"}") >= 2.0,
        "{after}"
    );
    assert!(
        sample(&after, "agentgraph_event_streams_open") >= 1.0,
        "{after}"
    );
    // Three bumps, then the chat's one step: at least four steps were timed.
    assert!(
        delta("agentgraph_step_duration_seconds_count") >= 4.0,
        "{after}"
    );
    assert!(
        delta("agentgraph_checkpoint_write_seconds_count") >= 4.0,
        "{after}"
    );
    assert!(
        delta("agentgraph_model_call_duration_seconds_count") >= 1.0,
        "{after}"
    );
    // The script's usage: 42 tokens in, 16 out.
    assert!(
        delta("agentgraph_model_tokens_total{direction=\"input\"}") >= 42.0,
        "{after}"
    );
    assert!(
        delta("agentgraph_model_tokens_total{direction=\"output\"}") >= 16.0,
        "{after}"
    );
    // Buckets are cumulative and end at the count.
    let inf = sample(
        &after,
        "agentgraph_step_duration_seconds_bucket{le=\"+Inf\"}",
    );
    assert_eq!(
        inf,
        sample(&after, "agentgraph_step_duration_seconds_count")
    );
    s.stop().await;
}
