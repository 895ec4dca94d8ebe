//! The agent node kinds (`llm`, `tool_executor`, `compact`, `agent_output`): factories that
//! build the runtime's nodes from a node's entries and the graph's `model`, `prompt` and
//! `tools` declarations.
//!
//! ```text
//! model main = auto { anthropic: "claude-sonnet-4-5", openai: "gpt-4o-mini", script: "s.json" }
//! prompt system = file("prompts/system.md")
//! prompt context = "The draft: {{ draft | json }}"      # templated: rendered per call
//! tools kit = [search, calculator]
//! tools fs = mcp { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] }
//! tools all = [search, fs]                              # a set may include other sets
//! node agent: llm { model: main, system: [system, context], messages: messages, tools: kit,
//!                   tool_choice: "auto", max_iterations: 10, usage: usage,
//!                   memory: { store: "sled", window: 20 },
//!                   on_overflow: "compact", summary: summary, compact_instructions: compact }
//! # `context: [context]` instead sends the rendered prompts after the conversation (a final
//! # human message, never stored): the system prompt stays byte-identical, so cacheable.
//! # `tool_choice` may be an expression on the state: `choose(len(items) == 0, "required", "auto")`.
//! # Templated prompts and `tool_choice` see a `send` task's payload keys (they shadow channels).
//! # `parallel_tool_calls: false` asks for one tool call per answer (null: the provider's default).
//! # `close_cut_calls: true` makes a tool call the output limit cut as far as it was complete
//! # (never with a cut string; the tool's schema must accept it) instead of asking again.
//! # `max_calls: 30` fails the node (MAX_CALLS) once the conversation holds 30 AI answers.
//! # `core_tools: ["plan", "delegate"], loaded_tools: loaded` offers only those tools plus the
//! # ones named in channel `loaded` (deferred tools: `search_tools` finds, `load_tool` loads).
//! # `observations: observations, working_memory: working_memory` show those channels as
//! # system parts (observational memory: see [`observe`]).
//! node route: llm { model: main, output_schema: { type: "object" }, output: decision }
//! node tools: tool_executor { tools: kit, model: main, usage: usage,
//!                             settings: { http_request: {} }, repeat_limit: 2, repeats: repeats,
//!                             max_batch: 12 }
//! # (identical calls of one answer run once; with `max_batch`, calls past 12 are not run)
//! # (an object of settings also gets `base_dir`: the graph file's folder, for relative paths)
//! node shrink: compact { model: main, summary: summary, threshold: 20000, keep_last: 4 }
//! node out: agent_output { format: "full", output: output, usage: usage }
//! ```
//!
//! Models: see [`model`] (providers, `auto`, pricing); memories: see [`memory`].

use crate::ast::{Expr, ExprKind, ModelDecl};
use crate::eval::Scope;
use crate::registry::{EntrySpec, NodeBuild, NodeFactory, Registry};
use agentgraph_agents::models::ToolChoice;
use agentgraph_agents::nodes::ToolExecutorNode;
use agentgraph_agents::nodes::{
    AgentOutputNode, CompactNode, LlmNode, OutputFormat, OverflowCompaction,
};
use agentgraph_agents::tools::Tool;
use agentgraph_runtime::{Node, NodeError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

pub mod memory;
pub mod model;
pub mod observe;
pub mod tool_sets;
pub mod verify;

pub use memory::{build_memory, set_memory_dir};
pub use model::{auto_provider, build_model, defer_model_errors, pricing, PROVIDER_VAR};

/// Tools by name, as the embedding application (or std-tools) provides them.
pub type ToolMap = BTreeMap<String, Arc<dyn Tool>>;

/// Registers the `llm` and `tool_executor` kinds, the model providers, and `tools` for checks.
pub fn register(reg: &mut Registry, mut tools: ToolMap) {
    let (name, tool) = observe::tool();
    tools.entry(name).or_insert(tool);
    for (name, t) in &tools {
        reg.register_tool(name.clone(), t.description().to_string());
    }
    let tools = Arc::new(tools);
    crate::code::register_tool_kind(reg, Arc::new(crate::code::FromToolMap(tools.clone())));
    reg.register_kind(
        "llm",
        vec![
            EntrySpec::required("model"),
            EntrySpec::value("system"),
            EntrySpec::value("context"),
            EntrySpec::writes("messages"),
            EntrySpec::value("tools"),
            EntrySpec::value("tool_choice"),
            EntrySpec::value("parallel_tool_calls"),
            EntrySpec::value("close_cut_calls"),
            EntrySpec::value("max_tokens"),
            EntrySpec::value("temperature"),
            EntrySpec::writes("usage"),
            EntrySpec::value("output_schema"),
            EntrySpec::writes("output"),
            EntrySpec::value("memory"),
            EntrySpec::value("max_iterations"),
            EntrySpec::value("on_overflow"),
            EntrySpec::writes("summary"),
            EntrySpec::value("compact_instructions"),
            EntrySpec::value("max_calls"),
            EntrySpec::value("core_tools"),
            EntrySpec::value("loaded_tools"),
            EntrySpec::value("observations"),
            EntrySpec::value("working_memory"),
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
            EntrySpec::writes("messages"),
            EntrySpec::value("parallel"),
            EntrySpec::value("model"),
            EntrySpec::value("settings"),
            EntrySpec::writes("usage"),
            EntrySpec::value("repeat_limit"),
            EntrySpec::writes("repeats"),
            EntrySpec::value("max_batch"),
        ],
        "runs every tool call of the last AI message, concurrently",
        Arc::new(ToolExecutorFactory { tools }),
    );
    reg.register_kind(
        "compact",
        vec![
            EntrySpec::required("model"),
            EntrySpec::writes("messages"),
            EntrySpec::writes("summary"),
            EntrySpec::value("threshold"),
            EntrySpec::value("keep_last"),
            EntrySpec::value("instructions"),
        ],
        "summarizes a long conversation (always, or over a token threshold); `instructions` \
         (a prompt or a string) tells the summarizing model what to keep",
        Arc::new(CompactFactory),
    );
    observe::register(reg);
    verify::register(reg);
    reg.register_kind(
        "agent_output",
        vec![
            EntrySpec::value("messages"),
            EntrySpec::writes("output"),
            EntrySpec::value("format"),
            EntrySpec::value("usage"),
        ],
        "writes the agent's final answer as text, JSON or full (with iterations, tools, usage)",
        Arc::new(AgentOutputFactory),
    );
    for p in ["anthropic", "openai", "scripted", "auto"] {
        reg.providers.insert(p.to_string());
    }
    reg.reducers
        .register(Arc::new(agentgraph_agents::nodes::UsageSum));
}

pub(crate) use crate::registry::node_build::constant as const_value;

struct LlmFactory {
    tools: Arc<ToolMap>,
}

impl NodeFactory for LlmFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let (model, decl) = model_of(b)?;
        let mut node = LlmNode::new(model);
        if let Some(p) = pricing(decl)? {
            node = node.pricing(p);
        }
        // System parts: static prompts are cacheable; templated ones are rendered per call.
        // `context` parts are rendered per call too, and sent after the conversation.
        let mut templates = Vec::new();
        for text in prompt_parts(b, "system")? {
            if text.contains("{{") {
                templates.push(text);
            } else {
                node = node.system(text);
            }
        }
        let context = prompt_parts(b, "context")?;
        if !context.is_empty() {
            if !templates.is_empty() {
                return Err(
                    "templated prompts go either in `system` or in `context`, not in both".into(),
                );
            }
            templates = context;
            node = node.context_as_message();
        }
        if !templates.is_empty() {
            let extensions = b.extensions.clone();
            node =
                node.context(move |state, payload| {
                    let scope = Scope::state(state)
                        .with_extensions(&extensions)
                        .with_payload(payload);
                    let mut out = Vec::new();
                    for t in &templates {
                        out.push(crate::template::render(t, &scope).map_err(|e| {
                            NodeError::fatal(format!("system prompt template: {e}"))
                        })?);
                    }
                    Ok(out.join("\n\n"))
                });
        }
        if let Some(ch) = b.channel("messages") {
            node = node.messages_channel(ch);
        }
        if let Some(set) = b.channel("tools") {
            let (fixed, listed) = tool_sets::resolve(b.graph, set, &self.tools, &b.base_dir)?;
            node = node
                .tools(fixed.iter().map(|t| t.spec()))
                .listed_tools(listed);
        }
        if let Some(c) = b.expr("tool_choice") {
            match const_value(c) {
                Ok(v) => node = node.tool_choice(tool_choice(&v)),
                // An expression on the state: evaluated before each call.
                Err(_) => {
                    let expr = c.clone();
                    let extensions = b.extensions.clone();
                    node = node.tool_choice_fn(move |state, payload| {
                        let scope = Scope::state(state)
                            .with_extensions(&extensions)
                            .with_payload(payload);
                        crate::eval::eval(&expr, &scope)
                            .map(|v| tool_choice(&v))
                            .map_err(|e| NodeError::fatal(format!("tool_choice: {e}")))
                    });
                }
            }
        }
        match b.constant("parallel_tool_calls")? {
            None | Some(Value::Null) => {}
            Some(Value::Bool(parallel)) => node = node.parallel_tool_calls(parallel),
            Some(other) => {
                return Err(format!(
                    "`parallel_tool_calls` is true, false or null (the provider's default), got {other}"
                ))
            }
        }
        match b.constant("close_cut_calls")? {
            None | Some(Value::Null) => {}
            Some(Value::Bool(close)) => node = node.close_cut_calls(close),
            Some(other) => {
                return Err(format!(
                    "`close_cut_calls` is true or false (false: a cut call is asked for again), got {other}"
                ))
            }
        }
        if let Some(v) = b.constant("max_tokens")?.and_then(|v| v.as_u64()) {
            node = node.max_tokens(v.min(u64::from(u32::MAX)) as u32);
        }
        if let Some(v) = b.constant("temperature")?.and_then(|v| v.as_f64()) {
            node = node.temperature(v);
        }
        if let Some(ch) = b.channel("usage") {
            node = node.usage_channel(ch);
        }
        if let Some(schema) = b.constant("output_schema")? {
            let out = b
                .channel("output")
                .ok_or("`output_schema` needs `output: <channel>` to receive the answer")?;
            node = node.structured(schema, out);
        }
        if let Some(expr) = b.expr("memory") {
            match memory::build_store_memory(expr, &b.extensions)? {
                Some(spec) => node = node.store_memory(spec),
                None => node = node.memory(build_memory(const_value(expr)?, &b.base_dir)?),
            }
        }
        if let Some(v) = b.constant("max_iterations")? {
            let max = v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or("`max_iterations` is a positive integer")?;
            node = node.max_iterations(max as usize);
        }
        node = node.on_overflow(overflow_policy(b)?);
        if let Some(v) = b.constant("max_calls")? {
            let max = v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or("`max_calls` is a positive integer")?;
            node = node.max_calls(max as usize);
        }
        if let Some(core) = b.constant("core_tools")? {
            let core: std::collections::BTreeSet<String> = core
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .ok_or("`core_tools` is a list of tool names (strings)")?;
            let loaded_channel = b
                .channel("loaded_tools")
                .unwrap_or(agentgraph_agents::orchestration::LOADED_TOOLS)
                .to_string();
            node = node.deferred(agentgraph_agents::orchestration::DeferredTools {
                core,
                loaded_channel,
            });
        } else if b.has("loaded_tools") {
            return Err("`loaded_tools` goes with `core_tools` (the tools always offered)".into());
        }
        // Observational memory and working memory, shown as system parts.
        for key in ["observations", "working_memory"] {
            if let Some(ch) = b.channel(key) {
                node = node.state_part(ch, key);
            }
        }
        Ok(Arc::new(node))
    }
}

/// How the node answers a context overflow: `on_overflow` (`"compact"`, the default, or
/// `"fail"`), `summary` (a channel for the summary) and `compact_instructions` (a prompt name or
/// a string).
fn overflow_policy(b: &NodeBuild<'_>) -> Result<Option<OverflowCompaction>, String> {
    match b.constant("on_overflow")? {
        None => {}
        Some(Value::String(s)) if s == "compact" => {}
        Some(Value::String(s)) if s == "fail" => return Ok(None),
        Some(other) => {
            return Err(format!(
                "`on_overflow` is \"compact\" or \"fail\", got {other}"
            ))
        }
    }
    let mut policy = OverflowCompaction {
        summary_channel: b.channel("summary").map(str::to_owned),
        ..OverflowCompaction::default()
    };
    if let Some(e) = b.expr("compact_instructions") {
        policy.instructions = Some(prompt_or_string(b, e, "compact_instructions")?);
    }
    Ok(Some(policy))
}

/// The text of a prompt name or a string literal.
fn prompt_or_string(b: &NodeBuild<'_>, e: &Expr, key: &str) -> Result<String, String> {
    match &e.kind {
        ExprKind::Name { name } => b
            .prompt(&name.name)
            .map(str::to_owned)
            .ok_or_else(|| format!("prompt `{}` is not declared", name.name)),
        ExprKind::Str { lit } => Ok(lit.value.clone()),
        _ => Err(format!("`{key}` is a prompt name or a string")),
    }
}

/// `auto` (also for null), `required`, `none`, or a tool name.
fn tool_choice(v: &Value) -> ToolChoice {
    match v.as_str() {
        Some("auto") | None => ToolChoice::Auto,
        Some("required") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        Some(tool) => ToolChoice::Tool(tool.to_string()),
    }
}

/// The texts of a prompt-list entry (`system: [a, b]`, `context: c`): prompt names or strings.
fn prompt_parts(b: &NodeBuild<'_>, key: &str) -> Result<Vec<String>, String> {
    let parts: Vec<&Expr> = match b.expr(key).map(|e| &e.kind) {
        Some(ExprKind::List { items }) => items.iter().collect(),
        Some(_) => b.expr(key).into_iter().collect(),
        None => Vec::new(),
    };
    parts
        .into_iter()
        .map(|p| prompt_or_string(b, p, key))
        .collect()
}

struct ToolExecutorFactory {
    tools: Arc<ToolMap>,
}

impl NodeFactory for ToolExecutorFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let set = b.channel("tools").ok_or("`tools` names a tool set")?;
        let (fixed, listed) = tool_sets::resolve(b.graph, set, &self.tools, &b.base_dir)?;
        // Settings can name a listed tool only once it is listed.
        let has_listed = !listed.is_empty();
        let mut node = ToolExecutorNode::new(fixed).listed_tools(listed);
        if let Some(ch) = b.channel("messages") {
            node = node.messages_channel(ch);
        }
        if b.expr("model").is_some() {
            let (model, decl) = model_of(b)?;
            node = node.model(model);
            if let Some(p) = pricing(decl)? {
                node = node.pricing(p);
            }
        }
        // Tokens of the tools' own model calls.
        if let Some(ch) = b.channel("usage") {
            node = node.usage_channel(ch);
        }
        if let Some(n) = usize_entry(b, "repeat_limit")? {
            node = node.repeat_limit((n > 0).then_some(n));
        }
        if let Some(ch) = b.channel("repeats") {
            node = node.repeats_channel(ch);
        }
        if let Some(n) = usize_entry(b, "max_batch")? {
            node = node.max_batch((n > 0).then_some(n));
        }
        match b.constant("settings")? {
            Some(Value::Object(per_tool)) => {
                for (tool, settings) in per_tool {
                    if !node.tools.contains_key(&tool) && !has_listed {
                        return Err(format!(
                            "`settings` names tool `{tool}`, which is not in tool set `{set}`"
                        ));
                    }
                    // Relative paths in settings are relative to the graph file.
                    let settings = match settings {
                        Value::Object(mut o) => {
                            o.entry("base_dir")
                                .or_insert_with(|| Value::String(b.base_dir.display().to_string()));
                            Value::Object(o)
                        }
                        other => other,
                    };
                    node = node.settings(tool, settings);
                }
            }
            Some(other) => {
                return Err(format!(
                    "`settings` maps tool names to their settings, got {other}"
                ))
            }
            None => {}
        }
        Ok(Arc::new(node))
    }
}

/// The model a node's `model` entry names, built, with its declaration.
pub(crate) fn model_of<'a>(
    b: &NodeBuild<'a>,
) -> Result<(Arc<dyn agentgraph_agents::models::ChatModel>, &'a ModelDecl), String> {
    let model_name = b.channel("model").ok_or("`model` names a model block")?;
    let decl = b
        .model(model_name)
        .ok_or_else(|| format!("model `{model_name}` is not declared"))?;
    Ok((build_model(decl, &b.base_dir)?, decl))
}

fn usize_entry(b: &NodeBuild<'_>, key: &str) -> Result<Option<usize>, String> {
    b.constant(key)?
        .map(|v| {
            v.as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| format!("`{key}` is a non-negative integer"))
        })
        .transpose()
}

struct CompactFactory;

impl NodeFactory for CompactFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let mut node = CompactNode::new(model_of(b)?.0);
        if let Some(ch) = b.channel("messages") {
            node.messages_channel = ch.to_string();
        }
        node.summary_channel = b.channel("summary").map(str::to_owned);
        node.threshold_tokens = usize_entry(b, "threshold")?;
        if let Some(k) = usize_entry(b, "keep_last")? {
            node.keep_last = k;
        }
        if let Some(e) = b.expr("instructions") {
            node.instructions = Some(prompt_or_string(b, e, "instructions")?);
        }
        Ok(Arc::new(node))
    }
}

struct AgentOutputFactory;

impl NodeFactory for AgentOutputFactory {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let format = match b.constant("format")? {
            Some(Value::String(f)) => f.parse::<OutputFormat>()?,
            Some(other) => {
                return Err(format!(
                    "`format` is \"text\", \"json\" or \"full\", got {other}"
                ))
            }
            None => OutputFormat::Text,
        };
        let mut node = AgentOutputNode::new(format);
        if let Some(ch) = b.channel("messages") {
            node.messages_channel = ch.to_string();
        }
        if let Some(ch) = b.channel("output") {
            node.output_channel = ch.to_string();
        }
        node.usage_channel = b.channel("usage").map(str::to_owned);
        Ok(Arc::new(node))
    }
}
