//! The agentgraph server mounted inside an existing axum app.
//!
//! The app has its own routes (`GET /health`, `GET /hello`) and nests the agentgraph router
//! under `/agents`, so `POST /agents/threads/{id}/runs`, `GET /agents/threads/{id}/events`
//! (SSE), `GET /agents/threads/{id}/state`, … sit next to them. Graphs come from
//! `graphs/examples` (the ones without a model, such as `counter`, need no provider).
//!
//! ```text
//! cargo run -p agentgraph-examples --bin axum_app                     # serves on 127.0.0.1:3000
//! cargo run -p agentgraph-examples --bin axum_app -- --addr 127.0.0.1:8081 --db ./app-db
//! cargo run -p agentgraph-examples --bin axum_app -- --self-test      # one run over HTTP, exits
//! ```
//!
//! With no `--db` everything is kept in memory; with `--db DIR` checkpoints and events go to a
//! sled folder and survive a restart.

use agentgraph_server::{ServerConfig, ServerState, Storage};
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The existing app: its own routes plus the agentgraph router under `/agents`.
fn app(agents: ServerState) -> Router {
    Router::new()
        .route("/health", get(|| async { Json(json!({"ok": true})) }))
        .route(
            "/hello",
            get(|| async { "hello from the host app; agents live under /agents\n" }),
        )
        .nest("/agents", agentgraph_server::router(agents))
}

struct Args {
    addr: String,
    db: Option<PathBuf>,
    graphs: PathBuf,
    self_test: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:3000".into(),
        db: None,
        graphs: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../graphs/examples")),
        self_test: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--addr" => a.addr = value("--addr")?,
            "--db" => a.db = Some(PathBuf::from(value("--db")?)),
            "--graphs" => a.graphs = PathBuf::from(value("--graphs")?),
            "--self-test" => a.self_test = true,
            other => {
                return Err(format!(
                    "unknown argument {other}\nusage: axum_app [--addr HOST:PORT] [--db DIR] \
                     [--graphs DIR] [--self-test]"
                ))
            }
        }
    }
    Ok(a)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = parse_args()?;
    let storage = match &args.db {
        Some(dir) => Storage::Sled(dir.clone()),
        None => Storage::Memory,
    };
    let config = ServerConfig::new(&args.graphs, "unused").storage(storage);
    let agents = ServerState::new(&config)?;

    let addr = if args.self_test {
        "127.0.0.1:0"
    } else {
        &args.addr
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    // Small SSE writes go out at once instead of waiting ~40 ms for a delayed ACK (Nagle).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stopping = agents.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, app(agents.clone()))
            .with_graceful_shutdown(async move {
                tokio::select! {
                    _ = stop_rx => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                // End the agents' SSE streams and checkpoint their runs, so open connections
                // close and the app can drain.
                if let Err(e) = stopping.shutdown().await {
                    eprintln!("agents shutdown: {e}");
                }
            })
            .await
    });

    if !args.self_test {
        println!("serving on http://{local} (GET /health, GET /hello, /agents/...); Ctrl-C stops");
        server.await??;
        return Ok(());
    }

    let result = self_test(&format!("http://{local}")).await;
    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(30), server).await???;
    result
}

/// Uses the app over HTTP: its own route, then a run of `counter` under `/agents`.
async fn self_test(base: &str) -> Result<(), Error> {
    let http = reqwest::Client::new();
    let health: Value = http
        .get(format!("{base}/health"))
        .send()
        .await?
        .json()
        .await?;
    println!("GET /health -> {health}");

    let r = http
        .post(format!("{base}/agents/threads/t1/runs"))
        .json(&json!({"graph": "counter", "input": {"limit": 3}}))
        .send()
        .await?;
    let status = r.status();
    let started: Value = r.json().await?;
    if status.as_u16() != 202 {
        return Err(format!("POST /agents/threads/t1/runs -> {status}: {started}").into());
    }
    println!(
        "POST /agents/threads/t1/runs -> {status}, run {}",
        started["run_id"].as_str().unwrap_or("?")
    );

    for _ in 0..500 {
        let state: Value = http
            .get(format!("{base}/agents/threads/t1/state"))
            .send()
            .await?
            .json()
            .await?;
        if state["active"] == false && state["values"]["count"].is_number() {
            println!("count: {}", state["values"]["count"]);
            println!("trace: {}", state["values"]["trace"]);
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err("the run did not finish within 10 s".into())
}
