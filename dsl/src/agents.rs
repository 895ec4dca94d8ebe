//! The `llm` and `tool_executor` node kinds: factories that build the runtime's
//! [`LlmNode`] and [`ToolExecutorNode`] from a node's entries and the graph's `model`, `prompt`
//! and `tools` declarations.
//!
//! ```text
//! model main = anthropic { model: "claude-sonnet-4-20250514", max_tokens: 4096 }
//! model demo = scripted { script: "scripts/demo.json" }      # offline, clearly labelled
//! prompt system = file("prompts/system.md")
//! prompt context = "The workflow: {{ workflow | json }}"      # templated: rendered per call
//! tools builder = [search_nodes, add_nodes]
//! node agent: llm { model: main, system: [system, context], messages: messages, tools: builder }
//! node tools: tool_executor { tools: builder }
//! ```
//!
//! Providers read keys and endpoints from the environment as the official SDKs do
//! (`ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`/`OPENAI_BASE_URL`); a model block
//! may set `base_url`, `max_tokens` and `temperature` (with `env(…)` for values that vary).

use crate::ast::{Entry, Expr, ExprKind, GraphDecl, GraphItem, ModelDecl, NodeDecl};
use crate::eval::{eval, Scope};
use crate::registry::{EntrySpec, NodeBuild, NodeFactory, Registry};
use agentgraph_runtime::models::anthropic::AnthropicModel;
use agentgraph_runtime::models::openai::OpenAiModel;
use agentgraph_runtime::models::scripted::ScriptedModel;
use agentgraph_runtime::models::{ChatModel, ToolChoice};
use agentgraph_runtime::nodes::{LlmNode, ToolExecutorNode};
use agentgraph_runtime::tools::Tool;
use agentgraph_runtime::{Node, NodeError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Tools by name, as the embedding application (or std-tools) provides them.
pub type ToolMap = BTreeMap<String, Arc<dyn Tool>>;

/// Registers the `llm` and `tool_executor` kinds, the model providers, and `tools` for checks.
pub fn register(reg: &mut Registry, tools: ToolMap) {
    for (name, t) in &tools {
        reg.register_tool(name.clone(), t.description().to_string());
    }
    let tools = Arc::new(tools);
    reg.register_kind(
        "llm",
        vec![
            EntrySpec::required("model"),
            EntrySpec::value("system"),
            EntrySpec::value("messages"),
            EntrySpec::value("tools"),
            EntrySpec::value("tool_choice"),
            EntrySpec::value("max_tokens"),
            EntrySpec::value("temperature"),
            EntrySpec::value("usage"),
        ],
        "calls a chat model with the conversation and bound tools; writes its answer",
        Arc::new(LlmFactory {
            tools: tools.clone(),
        }),
    );
    reg.register_kind(
        "tool_executor",
        vec![
            EntrySpec::required("tools"),
            EntrySpec::value("messages"),
            EntrySpec::value("parallel"),
        ],
        "runs every tool call of the last AI message, concurrently",
        Arc::new(ToolExecutorFactory { tools }),
    );
    for p in ["anthropic", "openai", "scripted"] {
        reg.providers.insert(p.to_string());
    }
    reg.reducers
        .register(Arc::new(agentgraph_runtime::nodes::UsageSum));
}

fn entry<'a>(n: &'a NodeDecl, key: &str) -> Option<&'a Expr> {
    n.body.iter().find_map(|e| match e {
        Entry::Value { key: k, value } if k.name == key => Some(value),
        _ => None,
    })
}

/// A name written as an entry value (`model: main`, `messages: messages`).
fn name_of(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Name { name } => Some(name.name.as_str()),
        ExprKind::Str { lit } => Some(lit.value.as_str()),
        _ => None,
    }
}

fn const_value(e: &Expr) -> Result<Value, String> {
    eval(e, &Scope::empty()).map_err(|er| er.0)
}

fn model_decl<'a>(g: &'a GraphDecl, name: &str) -> Option<&'a ModelDecl> {
    g.items.iter().find_map(|i| match i {
        GraphItem::Model(m) if m.name.name == name => Some(m),
        _ => None,
    })
}

/// Builds the model a `model` declaration describes.
pub fn build_model(m: &ModelDecl, base_dir: &Path) -> Result<Arc<dyn ChatModel>, String> {
    let opt = |key: &str| -> Result<Option<Value>, String> {
        m.options
            .get(key)
            .map(const_value)
            .transpose()
            .map(|v| v.filter(|v| !v.is_null()))
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        Ok(opt(key)?.and_then(|v| v.as_str().map(str::to_owned)))
    };
    let model_name = text("model")?.unwrap_or_default();
    let max_tokens = opt("max_tokens")?
        .and_then(|v| v.as_u64())
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let temperature = opt("temperature")?.and_then(|v| v.as_f64());
    let offline = |e: agentgraph_runtime::models::ModelError| {
        format!(
            "{e}; to run without a provider, declare `model {} = scripted {{ script: \"answers.json\" }}` (see graphs/examples/chat.ag and docs/scripted-model.md)",
            m.name.name
        )
    };
    let base_url = text("base_url")?;
    // Both HTTP providers take the same optional settings.
    macro_rules! configured {
        ($model:expr) => {{
            let mut model = $model.map_err(offline)?;
            if let Some(u) = base_url {
                model = model.with_base_url(u);
            }
            if let Some(n) = max_tokens {
                model = model.with_max_tokens(n);
            }
            if let Some(t) = temperature {
                model = model.with_temperature(t);
            }
            Ok(Arc::new(model))
        }};
    }
    match m.provider.name.as_str() {
        "anthropic" => configured!(AnthropicModel::from_env(model_name)),
        "openai" => configured!(OpenAiModel::from_env(model_name)),
        "scripted" => {
            let script = text("script")?.ok_or("a scripted model needs `script: \"file.json\"`")?;
            let model =
                ScriptedModel::from_file(base_dir.join(script)).map_err(|e| e.to_string())?;
            Ok(Arc::new(model))
        }
        other => Err(format!("no model provider `{other}` in this build")),
    }
}

struct LlmFactory {
    tools: Arc<ToolMap>,
}

impl NodeFactory for LlmFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let n = b.node;
        let model_name = entry(n, "model")
            .and_then(name_of)
            .ok_or("`model` names a model block")?;
        let decl = model_decl(b.graph, model_name)
            .ok_or_else(|| format!("model `{model_name}` is not declared"))?;
        let mut node = LlmNode::new(build_model(decl, &b.base_dir)?);
        // System parts: static prompts are cacheable; templated ones are rendered per call.
        let parts: Vec<&Expr> = match entry(n, "system").map(|e| &e.kind) {
            Some(ExprKind::List { items }) => items.iter().collect(),
            Some(_) => entry(n, "system").into_iter().collect(),
            None => Vec::new(),
        };
        let mut templates = Vec::new();
        for p in parts {
            let text = match &p.kind {
                ExprKind::Name { name } => b
                    .prompts
                    .get(&name.name)
                    .cloned()
                    .ok_or_else(|| format!("prompt `{}` is not declared", name.name))?,
                ExprKind::Str { lit } => lit.value.clone(),
                _ => return Err("system parts are prompt names or strings".into()),
            };
            if text.contains("{{") {
                templates.push(text);
            } else {
                node = node.system(text);
            }
        }
        if !templates.is_empty() {
            node =
                node.context(move |state| {
                    let scope = Scope::state(state);
                    let mut out = Vec::new();
                    for t in &templates {
                        out.push(crate::template::render(t, &scope).map_err(|e| {
                            NodeError::fatal(format!("system prompt template: {e}"))
                        })?);
                    }
                    Ok(out.join("\n\n"))
                });
        }
        if let Some(ch) = entry(n, "messages").and_then(name_of) {
            node = node.messages_channel(ch);
        }
        if let Some(set) = entry(n, "tools").and_then(name_of) {
            node = node.tools(
                tool_set(b.graph, set, &self.tools)?
                    .into_iter()
                    .map(|t| t.spec()),
            );
        }
        if let Some(c) = entry(n, "tool_choice") {
            node = node.tool_choice(match const_value(c)?.as_str() {
                Some("auto") | None => ToolChoice::Auto,
                Some("required") => ToolChoice::Required,
                Some("none") => ToolChoice::None,
                Some(tool) => ToolChoice::Tool(tool.to_string()),
            });
        }
        if let Some(v) = entry(n, "max_tokens")
            .map(const_value)
            .transpose()?
            .and_then(|v| v.as_u64())
        {
            node = node.max_tokens(v.min(u64::from(u32::MAX)) as u32);
        }
        if let Some(v) = entry(n, "temperature")
            .map(const_value)
            .transpose()?
            .and_then(|v| v.as_f64())
        {
            node = node.temperature(v);
        }
        if let Some(ch) = entry(n, "usage").and_then(name_of) {
            node = node.usage_channel(ch);
        }
        Ok(Arc::new(node))
    }
}

fn tool_set(g: &GraphDecl, set: &str, tools: &ToolMap) -> Result<Vec<Arc<dyn Tool>>, String> {
    let decl = g
        .items
        .iter()
        .find_map(|i| match i {
            GraphItem::Tools(t) if t.name.name == set => Some(t),
            _ => None,
        })
        .ok_or_else(|| format!("tool set `{set}` is not declared"))?;
    decl.tools
        .iter()
        .map(|t| {
            tools
                .get(&t.name.name)
                .cloned()
                .ok_or_else(|| format!("tool `{}` is not registered", t.name.name))
        })
        .collect()
}

struct ToolExecutorFactory {
    tools: Arc<ToolMap>,
}

impl NodeFactory for ToolExecutorFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let set = entry(b.node, "tools")
            .and_then(name_of)
            .ok_or("`tools` names a tool set")?;
        let mut node = ToolExecutorNode::new(tool_set(b.graph, set, &self.tools)?);
        if let Some(ch) = entry(b.node, "messages").and_then(name_of) {
            node = node.messages_channel(ch);
        }
        Ok(Arc::new(node))
    }
}
