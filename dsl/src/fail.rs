//! The `fail` node kind: ends the run with an error whose message is computed from the state.
//!
//! ```text
//! node unknown_format: fail { message: "unknown format `" + format + "`: use text, json or full", code: "BAD_FORMAT" }
//! ```
//!
//! For routes that reject a state (a bad input value, an impossible combination): the run
//! fails at that node with the message (not retried; `code` defaults to `FAILED`), which a
//! `catch:` boundary around a subgraph can turn into state like any other node failure.

use crate::ast::Expr;
use crate::eval::{eval, Scope};
use crate::extensions::Extensions;
use crate::registry::{NodeBuild, NodeFactory};
use agentgraph_runtime::{Node, NodeError, TaskContext, Update};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Builds `fail` nodes.
pub(crate) struct FailFactory;

impl NodeFactory for FailFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let message = b
            .expr("message")
            .cloned()
            .ok_or("`message` is the error text (an expression)")?;
        let code = match b.constant("code") {
            Ok(None) => "FAILED".to_string(),
            Ok(Some(Value::String(s))) if !s.is_empty() => s,
            _ => return Err("`code` is a constant string such as \"BAD_FORMAT\"".into()),
        };
        Ok(Arc::new(FailNode {
            message,
            code,
            extensions: b.extensions.clone(),
        }))
    }
}

struct FailNode {
    message: Expr,
    code: String,
    extensions: Arc<Extensions>,
}

#[async_trait]
impl Node for FailNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let scope = Scope::state(ctx.state())
            .with_extensions(&self.extensions)
            .with_payload(ctx.payload());
        let text = match eval(&self.message, &scope) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(e) => format!("(the message could not be evaluated: {e})"),
        };
        Err(NodeError::fatal(text).with_code(self.code.clone()))
    }
}
