//! Compiling a checked graph into a runtime [`CompiledGraph`].

use crate::ast::*;
use crate::check::{kind_name, Symbols};
use crate::diagnostic::Diagnostic;
use crate::eval::{eval, truthy, Scope};
use crate::registry::{NodeBuild, Registry};
use agentgraph_runtime::{
    node_fn, ChannelSpec, CompiledGraph, Goto, GraphBuilder, Node, NodeError, NodeOptions, RetryOn,
    RetryPolicy, Send, StateView, Subgraph, Targets, TaskContext, Update,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Resolves the graph a subgraph node runs.
pub trait SubgraphResolver {
    /// The compiled child graph of `node` (declared in the file at `base_dir`).
    fn resolve(&self, r: &SubgraphRef, base_dir: &Path) -> Result<CompiledGraph, Diagnostic>;
}

fn scope_for(ctx: &TaskContext) -> Scope<'_> {
    let mut s = Scope::state(ctx.state());
    if let Some(Value::Object(p)) = ctx.payload() {
        for (k, v) in p {
            s.locals.push((k.as_str(), v.clone()));
        }
    }
    s
}

fn const_value(e: &Expr) -> Result<Value, Diagnostic> {
    eval(e, &Scope::empty()).map_err(|er| {
        Diagnostic::error(
            "E0204",
            e.span,
            format!("cannot evaluate this constant: {er}"),
        )
        .label("not a constant")
    })
}

/// Compiles one graph of a file.
pub fn compile_graph(
    g: &GraphDecl,
    s: &Symbols<'_>,
    reg: &Registry,
    base_dir: &Path,
    prompts: &BTreeMap<String, String>,
    subgraphs: &dyn SubgraphResolver,
) -> Result<CompiledGraph, Vec<Diagnostic>> {
    let mut errs = Vec::new();
    let mut b = GraphBuilder::new(g.name.name.clone());
    for info in s.channels.values() {
        let f = info.field;
        let Some(reducer) = reg.reducers.get(&info.reducer) else {
            continue;
        };
        let mut spec = ChannelSpec::new(f.name.name.clone(), info.ty.clone()).reducer(reducer);
        match &f.default {
            Some(d) => match const_value(d) {
                Ok(v) => spec = spec.default_value(v),
                Err(e) => errs.push(e),
            },
            None if info.reducer != "replace" => {
                // Reducer channels start from their neutral value, as LangGraph's do.
                let neutral = match &info.ty {
                    agentgraph_runtime::ValueType::List(_)
                    | agentgraph_runtime::ValueType::Messages => Some(Value::Array(vec![])),
                    agentgraph_runtime::ValueType::Map(_) => Some(Value::Object(Map::new())),
                    agentgraph_runtime::ValueType::Int => Some(Value::from(0)),
                    _ => None,
                };
                if let Some(v) = neutral {
                    spec = spec.default_value(v);
                }
            }
            None => {}
        }
        if f.private {
            spec = spec.private();
        }
        if f.ephemeral {
            spec = spec.ephemeral();
        }
        b = b.channel(spec);
    }
    for item in &g.items {
        match item {
            GraphItem::Input(l) => {
                let keys: Vec<&str> = l.names.iter().map(|n| n.name.as_str()).collect();
                b = b.input_keys(&keys);
            }
            GraphItem::Output(l) => {
                let keys: Vec<&str> = l.names.iter().map(|n| n.name.as_str()).collect();
                b = b.output_keys(&keys);
            }
            GraphItem::Config(o) => {
                if let Some(ExprKind::Int { value }) = o.get("recursion_limit").map(|e| &e.kind) {
                    b = b.recursion_limit((*value).max(1) as usize);
                }
            }
            GraphItem::Interrupt(i) => {
                for n in &i.nodes {
                    b = if i.after {
                        b.interrupt_after(n.name.clone())
                    } else {
                        b.interrupt_before(n.name.clone())
                    };
                }
            }
            _ => {}
        }
    }
    for n in s.nodes.values() {
        let options = match node_options(n) {
            Ok(o) => o,
            Err(e) => {
                errs.push(e);
                continue;
            }
        };
        if let Some(NodeKind::Subgraph(r)) = &n.kind {
            match subgraphs.resolve(r, base_dir) {
                Ok(child) => {
                    b = b.subgraph_with(n.name.name.clone(), subgraph_node(n, child), options)
                }
                Err(e) => errs.push(e),
            }
            continue;
        }
        match build_node(n, g, reg, base_dir, prompts) {
            Ok(node) => b = b.node_with(n.name.name.clone(), node, options),
            Err(e) => {
                // Several nodes failing for one reason (a model without a provider, say)
                // give one diagnostic that names them all.
                let reason = e.message.split_once("could not be built: ").map(|(_, r)| r);
                let same = errs.iter_mut().find(|d| {
                    d.code == e.code
                        && d.message.split_once("could not be built: ").map(|(_, r)| r) == reason
                });
                match (reason, same) {
                    (Some(r), Some(first)) => {
                        let head = first
                            .message
                            .split_once(" could not be built: ")
                            .map(|(h, _)| h.to_string())
                            .unwrap_or_default();
                        first.message =
                            format!("{head}, `{}` could not be built: {r}", n.name.name);
                    }
                    _ => errs.push(e),
                }
            }
        }
    }
    for item in &g.items {
        if let GraphItem::Edge(e) = item {
            b = edge(b, e);
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    b.compile().map_err(|e| {
        vec![Diagnostic::error(
            "E0290",
            g.name.span,
            format!("the graph does not compile: {e}"),
        )
        .label("in this graph")]
    })
}

fn node_options(n: &NodeDecl) -> Result<NodeOptions, Diagnostic> {
    let mut o = NodeOptions::default();
    for e in &n.body {
        match e {
            Entry::Value { key, value } if key.name == "timeout" => {
                if let ExprKind::Duration { ms, .. } = value.kind {
                    o.timeout = Some(Duration::from_millis(ms));
                }
            }
            Entry::Value { key, value } if key.name == "catch" => {
                if let ExprKind::Name { name } = &value.kind {
                    o.catch = Some(name.name.clone());
                }
            }
            Entry::Block { key, entries, .. } if key.name == "retry" => {
                let mut p = RetryPolicy::default();
                for re in entries {
                    let Entry::Value { key, value } = re else {
                        continue;
                    };
                    let v = const_value(value)?;
                    let bad = || {
                        Diagnostic::error(
                            "E0270",
                            value.span,
                            format!("bad value for retry option `{}`", key.name),
                        )
                        .label("wrong type")
                    };
                    match key.name.as_str() {
                        "max_attempts" => {
                            p.max_attempts = v.as_u64().ok_or_else(bad)?.max(1) as u32
                        }
                        "initial" => {
                            p.initial_interval = Duration::from_millis(v.as_u64().ok_or_else(bad)?)
                        }
                        "max" => {
                            p.max_interval = Duration::from_millis(v.as_u64().ok_or_else(bad)?)
                        }
                        "backoff" => p.backoff_factor = v.as_f64().ok_or_else(bad)?,
                        "jitter" => p.jitter = v.as_bool().ok_or_else(bad)?,
                        "retry_on" => {
                            p.retry_on = match &v {
                                Value::String(s) if s == "any" => RetryOn::Any,
                                Value::String(s) if s == "transient" => RetryOn::Transient,
                                Value::Array(codes) => RetryOn::Codes(
                                    codes
                                        .iter()
                                        .filter_map(|c| c.as_str().map(str::to_owned))
                                        .collect(),
                                ),
                                _ => return Err(bad()),
                            }
                        }
                        _ => {}
                    }
                }
                o.retry = Some(p);
            }
            _ => {}
        }
    }
    Ok(o)
}

fn entry_block<'a>(n: &'a NodeDecl, key: &str) -> Option<&'a [Entry]> {
    n.body.iter().find_map(|e| match e {
        Entry::Block {
            key: k, entries, ..
        } if k.name == key => Some(entries.as_slice()),
        _ => None,
    })
}

fn entry_value<'a>(n: &'a NodeDecl, key: &str) -> Option<&'a Expr> {
    n.body.iter().find_map(|e| match e {
        Entry::Value { key: k, value } if k.name == key => Some(value),
        _ => None,
    })
}

fn pairs(entries: &[Entry]) -> Vec<(String, Expr)> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Value { key, value } => Some((key.name.clone(), value.clone())),
            Entry::Block { .. } => None,
        })
        .collect()
}

fn fail(node: &str, what: &str, e: impl std::fmt::Display) -> NodeError {
    NodeError::fatal(format!("node `{node}`: {what}: {e}"))
}

fn build_node(
    n: &NodeDecl,
    g: &GraphDecl,
    reg: &Registry,
    base_dir: &Path,
    prompts: &BTreeMap<String, String>,
) -> Result<Arc<dyn Node>, Diagnostic> {
    let kind = kind_name(n).unwrap_or_default();
    let name = n.name.name.clone();
    match kind.as_str() {
        "set" => {
            let entries = Arc::new(pairs(entry_block(n, "set").unwrap_or(&[])));
            Ok(node_fn(move |ctx| {
                let entries = entries.clone();
                let name = name.clone();
                async move {
                    let scope = scope_for(&ctx);
                    let mut u = Update::new();
                    for (ch, e) in entries.iter() {
                        let v = eval(e, &scope)
                            .map_err(|er| fail(&name, &format!("set `{ch}`"), er))?;
                        u = u.set(ch.clone(), v);
                    }
                    Ok(u)
                }
            }))
        }
        "interrupt" => {
            let value = entry_value(n, "value").cloned().map(Arc::new);
            let write = match entry_value(n, "write").map(|e| &e.kind) {
                Some(ExprKind::Name { name }) => Some(name.name.clone()),
                _ => None,
            };
            Ok(node_fn(move |ctx| {
                let value = value.clone();
                let write = write.clone();
                let name = name.clone();
                async move {
                    let question = match &value {
                        Some(e) => eval(e, &scope_for(&ctx))
                            .map_err(|er| fail(&name, "interrupt value", er))?,
                        None => Value::Null,
                    };
                    let answer = ctx.interrupt(question)?;
                    Ok(match write {
                        Some(ch) => Update::new().set(ch, answer),
                        None => Update::new(),
                    })
                }
            }))
        }
        "noop" => Ok(node_fn(|_| async { Ok(Update::new()) })),
        k => {
            let factory = reg
                .kinds
                .get(k)
                .and_then(|e| e.factory.clone())
                .ok_or_else(|| {
                    Diagnostic::error(
                        "E0210",
                        n.name.span,
                        format!("node kind `{k}` cannot be built"),
                    )
                    .label("no factory registered")
                })?;
            let build = NodeBuild {
                node: n,
                graph: g,
                base_dir: base_dir.to_path_buf(),
                prompts,
            };
            factory.build(&build).map_err(|m| {
                Diagnostic::error(
                    "E0291",
                    n.name.span,
                    format!("node `{}` ({k}) could not be built: {m}", n.name.name),
                )
                .label("here")
            })
        }
    }
}

fn subgraph_node(n: &NodeDecl, child: CompiledGraph) -> Subgraph {
    let mut sub = Subgraph::new(child);
    let node = n.name.name.clone();
    if let Some(entries) = entry_block(n, "in") {
        let entries = Arc::new(pairs(entries));
        let node = node.clone();
        sub = sub.map_in(move |ctx| {
            let scope = scope_for(ctx);
            let mut m = Map::new();
            for (k, e) in entries.iter() {
                m.insert(
                    k.clone(),
                    eval(e, &scope).map_err(|er| fail(&node, &format!("in `{k}`"), er))?,
                );
            }
            Ok(Value::Object(m))
        });
    }
    if let Some(entries) = entry_block(n, "out") {
        let entries = Arc::new(pairs(entries));
        sub = sub.map_out(move |child| {
            let mut scope = Scope::empty();
            if let Value::Object(m) = child {
                for (k, v) in m {
                    scope.locals.push((k.as_str(), v.clone()));
                }
            }
            entries
                .iter()
                .map(|(k, e)| {
                    Ok((
                        k.clone(),
                        eval(e, &scope).map_err(|er| fail(&node, &format!("out `{k}`"), er))?,
                    ))
                })
                .collect()
        });
    }
    sub
}

fn send_targets(s: &SendExpr, view: &StateView) -> Result<Vec<Goto>, NodeError> {
    let scope = Scope::state(view);
    let items = match eval(&s.iter, &scope).map_err(|e| fail(&s.node.name, "send list", e))? {
        Value::Array(a) => a,
        Value::Null => Vec::new(),
        other => {
            return Err(NodeError::fatal(format!(
                "`send {} for {} in …` needs a list, got {other}",
                s.node.name, s.var.name
            )))
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut sc = Scope::state(view);
        sc.locals.push((s.var.name.as_str(), item));
        let mut payload = Map::new();
        for (k, e) in &s.payload.entries {
            payload.insert(
                k.name.clone(),
                eval(e, &sc).map_err(|er| fail(&s.node.name, "send payload", er))?,
            );
        }
        out.push(Goto::Send(Send {
            node: s.node.name.clone(),
            payload: Value::Object(payload),
        }));
    }
    Ok(out)
}

fn route_fn(
    r: &RouteBlock,
) -> impl Fn(&StateView) -> Result<Targets, NodeError> + std::marker::Send + Sync + 'static {
    let arms: Vec<RouteArm> = r.arms.clone();
    move |view: &StateView| {
        for arm in &arms {
            let hit = match &arm.cond {
                None => true,
                Some(c) => truthy(
                    &eval(c, &Scope::state(view))
                        .map_err(|e| NodeError::fatal(format!("route condition: {e}")))?,
                ),
            };
            if hit {
                let mut t = Vec::new();
                for target in &arm.targets {
                    match target {
                        RouteTarget::Node(n) => t.push(Goto::from(n.name.as_str())),
                        RouteTarget::Send(s) => t.extend(send_targets(s, view)?),
                    }
                }
                return Ok(Targets(t));
            }
        }
        Ok(Targets(vec![Goto::End]))
    }
}

fn edge(mut b: GraphBuilder, e: &EdgeStmt) -> GraphBuilder {
    let mut prev: Vec<String> = match &e.from {
        Endpoint::Node(n) => vec![n.name.clone()],
        Endpoint::Join(_) => Vec::new(),
    };
    for (i, hop) in e.hops.iter().enumerate() {
        match hop {
            Target::Node(n) => {
                if let (0, Endpoint::Join(l)) = (i, &e.from) {
                    let sources: Vec<&str> = l.names.iter().map(|x| x.name.as_str()).collect();
                    b = b.join(&sources, n.name.clone());
                } else {
                    for p in &prev {
                        b = b.edge(p.clone(), n.name.clone());
                    }
                }
                prev = vec![n.name.clone()];
            }
            Target::Route(r) => {
                let declared: Vec<&str> = r.target_names().map(|n| n.name.as_str()).collect();
                for p in &prev {
                    b = b.route_to(p.clone(), &declared, route_fn(r));
                }
                prev = Vec::new();
            }
            Target::Send(s) => {
                let s2 = s.clone();
                for p in &prev {
                    let s3 = s2.clone();
                    b = b.route_to(p.clone(), &[s2.node.name.as_str()], move |v| {
                        Ok(Targets(send_targets(&s3, v)?))
                    });
                }
                prev = Vec::new();
            }
        }
    }
    b
}
