//! Embedding agentgraph in a Rust program: load a `.ag` file, register a custom tool and a
//! custom reducer, and stream a run's events.
//!
//! ```sh
//! cargo run -p agentgraph-examples --bin embed_dsl
//! ```

use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::reducer::{FnReducer, ReducerError};
use agentgraph_runtime::{EventKind, Input, MemoryCheckpointer, Modes, RunConfig};
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;

/// A tool of the embedding application: looks an order up (here: a fixed table).
struct LookupOrder;

#[async_trait]
impl Tool for LookupOrder {
    fn name(&self) -> &str {
        "lookup_order"
    }
    fn description(&self) -> &str {
        "Looks an order up by id; returns its status and delivery date."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "required": ["order_id"],
               "properties": {"order_id": {"type": "string"}}})
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = args["order_id"].as_str().unwrap_or_default();
        ctx.emit_custom(json!({"tool": "lookup_order", "status": "running", "title": format!("Looking up {id}")}))
            .await;
        match id {
            "A-1001" => Ok(ToolOutput {
                content: json!({"order_id": id, "status": "shipped", "delivery": "tomorrow"}),
                writes: Vec::new(),
            }),
            _ => Err(ToolError::new(
                "NOT_FOUND",
                format!("no order `{id}`; order ids look like A-1001"),
            )),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::default();
    let tools: agentgraph_dsl::agents::ToolMap = [(
        "lookup_order".to_string(),
        Arc::new(LookupOrder) as Arc<dyn Tool>,
    )]
    .into();
    agentgraph_dsl::agents::register(&mut registry, tools);
    // A custom reducer the graph names with `reduce max_priority`.
    registry.reducers.register(Arc::new(
        FnReducer::new("max_priority", |cur: &mut Option<Value>, v: Value| {
            let new = v
                .as_i64()
                .ok_or_else(|| ReducerError("a priority is an integer".into()))?;
            let old = cur.as_ref().and_then(Value::as_i64).unwrap_or(i64::MIN);
            *cur = Some(json!(old.max(new)));
            Ok(())
        })
        .store_values(),
    ));

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/graphs/ticket.ag");
    let project = Project::load(path)?;
    let graph = project
        .compile(&registry)
        .map_err(|diags| format!("{} diagnostic(s), first: {}", diags.len(), diags[0].message))?
        .with_checkpointer(Arc::new(MemoryCheckpointer::new()));

    let input = json!({"messages": [{"type": "human", "content": "Where is my order A-1001?"}]});
    let mut stream = graph.stream(
        Input::values(input),
        RunConfig::thread("ticket-1").modes(Modes::parse("updates,custom")?),
    );
    while let Some(event) = stream.next().await {
        match &event.kind {
            EventKind::Custom(data) => println!("progress: {}", data["title"]),
            EventKind::Updates(update) => {
                println!("{} wrote {update}", event.node.as_deref().unwrap_or("?"))
            }
            _ => {}
        }
    }
    let out = stream.finish().await?;
    println!("priority: {}", out.values["priority"]);
    println!(
        "answer: {}",
        out.values["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["content"].clone())
            .unwrap_or_default()
    );
    Ok(())
}
