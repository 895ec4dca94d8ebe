//! The `tool` node kind: one call of a tool, with arguments evaluated on the state (and the
//! task's payload), its content written to `output` and its own writes applied. `model:`
//! hands the tool a model (as a `tool_executor`'s does), for tools that run sub-agents;
//! `usage:` receives the usage of the child runs the tool records (background tasks that
//! ended, for `task_status`).
//!
//! The tool is found once, at the node's first run, through a [`ToolResolver`]: tools known
//! only at run time (an MCP server's, listed when first used) resolve the same way as the
//! registered ones.

use crate::agents::ToolMap;
use crate::ast::Expr;
use crate::eval::eval;
use crate::extensions::Extensions;
use crate::registry::{NodeBuild, NodeFactory};
use agentgraph_agents::models::Pricing;
use agentgraph_agents::tools::{validate_args, Tool, ToolContext, UsageLedger};
use agentgraph_runtime::{Node, NodeError, TaskContext, Update};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Why a `tool` node's tool could not be found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolLookupError {
    /// No tool has that name.
    #[error("tool `{name}` is not available (tools: {})", .available.join(", "))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
    /// The tool's source could not be reached (a server that does not start, say).
    #[error("tool `{name}` could not be reached: {reason}")]
    Unavailable {
        /// The name asked for.
        name: String,
        /// What went wrong.
        reason: String,
    },
}

/// The lookup of one node's tool, run at the node's first run (again at the next run if it
/// failed).
pub type ResolveTool = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<Arc<dyn Tool>, ToolLookupError>> + Send>>
        + Send
        + Sync,
>;

/// Where `tool` nodes find their tools.
pub trait ToolResolver: Send + Sync {
    /// The lookup of tool `name` for the node `b` being built (its entries and its graph's
    /// declarations are there to read); `Err` refuses to build the node.
    fn resolver(&self, name: &str, b: &NodeBuild<'_>) -> Result<ResolveTool, String>;
}

/// Resolves tools from the registered [`ToolMap`], then from the tools of the graph's MCP
/// sets (`tools x = mcp { … }`), listed at the node's first run.
pub struct FromToolMap(pub Arc<ToolMap>);

impl ToolResolver for FromToolMap {
    fn resolver(&self, name: &str, b: &NodeBuild<'_>) -> Result<ResolveTool, String> {
        let tools = self.0.clone();
        let name = name.to_string();
        let listed = crate::agents::tool_sets::graph_sources(b.graph, &tools, &b.base_dir)?;
        Ok(Arc::new(move || {
            let tools = tools.clone();
            let name = name.clone();
            let listed = listed.clone();
            Box::pin(async move {
                if let Some(t) = tools.get(&name) {
                    return Ok(t.clone());
                }
                let mut available: Vec<String> = tools.keys().cloned().collect();
                if !listed.is_empty() {
                    let more = listed
                        .get()
                        .await
                        .map_err(|e| ToolLookupError::Unavailable {
                            name: name.clone(),
                            reason: e.message,
                        })?;
                    if let Some(t) = more.iter().find(|t| t.name() == name) {
                        return Ok(t.clone());
                    }
                    available.extend(more.iter().map(|t| t.name().to_string()));
                }
                Err(ToolLookupError::NotFound { name, available })
            })
        }))
    }
}

/// Builds `tool` nodes.
pub(super) struct ToolNodeFactory {
    pub(super) resolver: Arc<dyn ToolResolver>,
}

impl NodeFactory for ToolNodeFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let tool = b
            .channel("tool")
            .ok_or("`tool` names a tool: `tool: calculator` or `tool: \"get-sum\"`")?
            .to_string();
        let settings = match b.constant("settings")? {
            None => Value::Null,
            // Relative paths in settings are relative to the graph file, as in tool_executor.
            Some(Value::Object(mut o)) => {
                o.entry("base_dir")
                    .or_insert_with(|| Value::String(b.base_dir.display().to_string()));
                Value::Object(o)
            }
            Some(other) => return Err(format!("`settings` is an object, got {other}")),
        };
        if b.has("output") && b.channel("output").is_none() {
            return Err("`output` names a channel".into());
        }
        let (model, pricing) = match b.has("model") {
            true => {
                let (model, decl) = crate::agents::model_of(b)?;
                (Some(model), crate::agents::pricing(decl)?)
            }
            false => (None, None),
        };
        if b.has("usage") && b.channel("usage").is_none() {
            return Err("`usage` names a channel".into());
        }
        Ok(Arc::new(ToolNode {
            name: b.name().to_string(),
            model,
            pricing,
            usage: b.channel("usage").map(str::to_owned),
            resolve: self.resolver.resolver(&tool, b)?,
            tool,
            args: b.expr("args").cloned(),
            output: b.channel("output").map(str::to_owned),
            settings: Arc::new(settings),
            extensions: b.extensions.clone(),
            found: tokio::sync::OnceCell::new(),
        }))
    }
}

struct ToolNode {
    name: String,
    /// Handed to the tool (`model:`), for tools that call a model.
    model: Option<Arc<dyn agentgraph_agents::models::ChatModel>>,
    /// The model's prices, for the cost in child runs' usage.
    pricing: Option<Pricing>,
    /// The channel receiving the usage of the tool's child runs (`usage_sum`).
    usage: Option<String>,
    tool: String,
    resolve: ResolveTool,
    args: Option<Expr>,
    output: Option<String>,
    settings: Arc<Value>,
    extensions: Arc<Extensions>,
    found: tokio::sync::OnceCell<Arc<dyn Tool>>,
}

impl ToolNode {
    fn fail(&self, code: &str, message: impl std::fmt::Display) -> NodeError {
        NodeError::fatal(format!("tool node \"{}\": {message}", self.name)).with_code(code)
    }

    /// The arguments: the `args` expression's object (none: `{}`).
    fn arguments(&self, ctx: &TaskContext) -> Result<Value, NodeError> {
        let Some(e) = &self.args else {
            return Ok(Value::Object(Map::new()));
        };
        let scope = crate::compile::scope_for(ctx, &self.extensions);
        match eval(e, &scope) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(Value::Null) => Ok(Value::Object(Map::new())),
            Ok(other) => Err(self.fail(
                "INVALID_ARGUMENTS",
                format!("`args` is an object of arguments, got {other}"),
            )),
            Err(er) => Err(self.fail("INVALID_ARGUMENTS", format!("`args`: {er}"))),
        }
    }
}

#[async_trait]
impl Node for ToolNode {
    async fn run(&self, ctx: TaskContext) -> Result<Update, NodeError> {
        let tool = self
            .found
            .get_or_try_init(|| (self.resolve)())
            .await
            .map_err(|e| {
                let code = match e {
                    ToolLookupError::NotFound { .. } => "TOOL_NOT_FOUND",
                    ToolLookupError::Unavailable { .. } => "TOOL_UNAVAILABLE",
                };
                self.fail(code, e)
            })?
            .clone();
        let args = self.arguments(&ctx)?;
        if let Err(problems) = validate_args(&tool.input_schema(), &args) {
            return Err(self.fail(
                "INVALID_ARGUMENTS",
                format!(
                    "invalid arguments for `{}`: {}",
                    self.tool,
                    problems.join("; ")
                ),
            ));
        }
        let ledger = UsageLedger::default();
        let tool_ctx = ToolContext::new(ctx.scoped(&self.tool))
            .with_settings(self.settings.clone())
            .with_model(self.model.clone())
            .with_child_model(self.model.clone(), self.pricing)
            .with_usage(ledger.clone());
        let out = match tool.call(args, &tool_ctx).await {
            Ok(out) => out,
            Err(e) if !e.interrupts.is_empty() => return Err(NodeError::Interrupted(e.interrupts)),
            Err(e) => return Err(self.fail(&e.code, format!("{}: {}", self.tool, e.message))),
        };
        let mut update = Update {
            writes: out.writes,
            ..Update::new()
        };
        if let (Some(ch), Some(usage)) = (&self.usage, ledger.total(ctx.node())) {
            update = update.set(ch.clone(), usage);
        }
        if let Some(ch) = &self.output {
            update = update.set(ch.clone(), out.content);
        }
        Ok(update)
    }
}
