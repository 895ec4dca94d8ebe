//! `agentgraph lsp`: the language server on stdio, with the product's registry.

use crate::{exit, graph};

/// Serves until the editor exits; the server reads and writes stdio on a blocking thread.
pub async fn lsp(ctx: &graph::Ctx) -> u8 {
    let registry = ctx.registry.clone();
    match tokio::task::spawn_blocking(move || agentgraph_lsp::run_stdio(&registry)).await {
        Ok(Ok(())) => exit::DONE,
        Ok(Err(e)) => graph::fail(e, exit::FAILED),
        Err(e) => graph::fail(format!("the language server stopped: {e}"), exit::FAILED),
    }
}
