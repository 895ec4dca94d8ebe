//! The general agent tools: calculator, http_request (SSRF protection included) and
//! knowledge_base_search. Hermetic: HTTP tests talk to loopback servers only, blocked cases
//! are refused before any connection.

use agentgraph_agents::tools::{validate_args, Tool, ToolContext, ToolError};
use agentgraph_runtime::*;
use agentgraph_std_tools::general::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wiremock::matchers::{body_json, body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

mod calculator;
mod executor;
mod http;
mod knowledge_base;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A state view from a one-node run (the runtime builds state views only inside runs).
async fn state() -> StateView {
    let slot: Arc<Mutex<Option<StateView>>> = Arc::default();
    let s = slot.clone();
    let g = GraphBuilder::new("probe")
        .channel(ChannelSpec::new("x", ValueType::Int).default_value(json!(0)))
        .node(
            "probe",
            node_fn(move |ctx| {
                *s.lock().unwrap() = Some(ctx.state().clone());
                async { Ok(Update::new()) }
            }),
        )
        .chain(&["START", "probe", "END"])
        .compile()
        .unwrap();
    g.invoke(Input::values(json!({})), RunConfig::thread("probe"))
        .await
        .unwrap();
    let view = slot.lock().unwrap().take().unwrap();
    view
}

async fn ctx() -> ToolContext {
    ToolContext::detached(state().await)
}

async fn ctx_with(settings: Value) -> ToolContext {
    ctx().await.with_settings(Arc::new(settings))
}

/// Calls `tool` after checking `args` against its schema, as the tool executor does.
async fn call(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
    if let Err(problems) = validate_args(&tool.input_schema(), &args) {
        return Err(ToolError::new("INVALID_ARGUMENTS", problems.join("; ")));
    }
    tool.call(args, ctx).await.map(|o| o.content)
}

fn code(r: Result<Value, ToolError>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => {
            assert!(!e.message.is_empty());
            e.code
        }
    }
}
