//! Quickstart: a small review workflow on the embedded default store (sled under
//! `./.agentgraph`, or the folder given as the first argument).
//!
//! `draft` writes a text, `review` asks a human (a dynamic interrupt) and `publish` runs once it
//! is approved. The run stops at the interrupt with its state checkpointed on disk; the example
//! then answers it as the human would and resumes the same thread, streaming what happens, and
//! prints the thread's history. Run it twice: the second run starts a new thread in the same
//! store and lists both threads.
//!
//! ```text
//! cargo run -p agentgraph-examples --bin quickstart [DB_DIR]
//! ```

use agentgraph_runtime::*;
use serde_json::json;
use std::sync::Arc;

fn review_graph() -> Result<CompiledGraph, GraphError> {
    GraphBuilder::new("review")
        .channel(ChannelSpec::new("topic", ValueType::String).default_value(json!("")))
        .channel(ChannelSpec::new("draft", ValueType::String).default_value(json!("")))
        .channel(
            ChannelSpec::new(
                "log",
                "list<string>"
                    .parse()
                    .map_err(|e: ParseTypeError| GraphError::Schema(e.to_string()))?,
            )
            .reducer(Arc::new(Append))
            .default_value(json!([])),
        )
        .channel(ChannelSpec::new("published", ValueType::Bool).default_value(json!(false)))
        .node(
            "draft",
            node_fn(|ctx| async move {
                let topic = ctx.state().str("topic").to_string();
                ctx.emit_custom(
                    json!({"status": "running", "title": format!("Drafting a note on {topic}")}),
                )
                .await;
                Ok(Update::new()
                    .set("draft", json!(format!("A short note on {topic}.")))
                    .set("log", json!(["drafted"])))
            }),
        )
        .node(
            "review",
            node_fn(|ctx| async move {
                let answer = ctx.interrupt(json!({
                    "question": "Publish this draft?",
                    "draft": ctx.state().str("draft"),
                }))?;
                let approved = answer.as_str() == Some("yes");
                Ok(Update::new()
                    .set(
                        "log",
                        json!([if approved { "approved" } else { "rejected" }]),
                    )
                    .goto(if approved { "publish" } else { END }))
            }),
        )
        .node(
            "publish",
            node_fn(|_| async {
                Ok(Update::new()
                    .set("published", json!(true))
                    .set("log", json!(["published"])))
            }),
        )
        .chain(&[START, "draft", "review"])
        .compile()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "./.agentgraph".to_string());
    let store = Arc::new(SledCheckpointer::open(&dir)?);
    let graph = review_graph()?.with_checkpointer(store);
    let thread = format!("review-{}", graph.list_threads().await?.len() + 1);
    println!("store: {dir} (sled), thread: {thread}");

    let config =
        || RunConfig::thread(thread.clone()).modes(Modes::of(&[Mode::Updates, Mode::Custom]));
    let mut stream = graph.stream(
        Input::values(json!({"topic": "checkpointed agents"})),
        config(),
    );
    while let Some(event) = stream.next().await {
        println!("  event {}", serde_json::to_string(&event)?);
    }
    let first = stream.finish().await?;
    let RunStatus::Interrupted { interrupts, .. } = &first.status else {
        return Err("expected the review interrupt".into());
    };
    println!(
        "stopped at interrupt {}: {}",
        interrupts[0].id, interrupts[0].value
    );
    println!("(a real app would now wait for a person; answering \"yes\")");

    let second = graph.invoke(Input::resume(json!("yes")), config()).await?;
    println!("final state: {}", second.values);
    println!("history of {thread} (newest first):");
    for h in graph.history(&thread, ListQuery::default()).await? {
        println!(
            "  step {:>2} {:<6} next={:?} writes={}",
            h.step,
            h.source.as_str(),
            h.next,
            h.writes
        );
    }
    println!("threads in the store: {:?}", graph.list_threads().await?);
    Ok(())
}
