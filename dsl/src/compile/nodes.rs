//! Nodes: the built-in kinds (`set`, `interrupt`, `noop`), registered kinds through their
//! factories, subgraphs, and the options every node takes (`retry`, `timeout`, `catch`).

use super::{const_value, fail, scope_for, Context, SubgraphResolver};
use crate::ast::*;
use crate::check::Symbols;
use crate::diagnostic::{catalogue as diag, Diagnostic};
use crate::eval::{eval, Scope};
use crate::registry::node_build::pairs;
use crate::registry::NodeBuild;
use agentgraph_runtime::{
    node_fn, CachePolicy, CompiledGraph, GraphBuilder, Node, NodeOptions, RetryOn, RetryPolicy,
    Subgraph, Update,
};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// Adds every node of the graph; failures go to `errs`, one per reason.
pub(super) fn add_nodes(
    mut b: GraphBuilder,
    s: &Symbols<'_>,
    cx: &Context<'_>,
    subgraphs: &dyn SubgraphResolver,
    errs: &mut Vec<Diagnostic>,
) -> GraphBuilder {
    for n in s.nodes.values() {
        let options = match node_options(n) {
            Ok(o) => o,
            Err(e) => {
                errs.push(e);
                continue;
            }
        };
        if let Some(NodeKind::Subgraph(r)) = &n.kind {
            match subgraphs.resolve(r, cx.base_dir) {
                Ok(child) => {
                    b = b.subgraph_with(n.name.name.clone(), subgraph_node(n, child, cx), options)
                }
                Err(e) => errs.push(e),
            }
            continue;
        }
        match build_node(n, cx) {
            Ok(node) => b = b.node_with(n.name.name.clone(), node, options),
            Err(e) => push_merged(errs, e, &n.name.name),
        }
    }
    b
}

/// Several nodes failing for one reason (a model without a provider, say) give one
/// diagnostic that names them all.
fn push_merged(errs: &mut Vec<Diagnostic>, e: Diagnostic, node: &str) {
    let reason = |d: &Diagnostic| {
        d.message
            .split_once(diag::NOT_BUILT)
            .map(|(_, r)| r.to_string())
    };
    let Some(r) = reason(&e) else {
        errs.push(e);
        return;
    };
    let same = errs
        .iter_mut()
        .find(|d| d.code == e.code && reason(d).as_deref() == Some(r.as_str()));
    match same {
        Some(first) => {
            let head = first
                .message
                .split_once(diag::NOT_BUILT)
                .map(|(h, _)| h.to_string())
                .unwrap_or_default();
            first.message = format!("{head}, `{node}`{}{r}", diag::NOT_BUILT);
        }
        None => errs.push(e),
    }
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
                o.retry = Some(retry_policy(entries)?);
            }
            Entry::Block { key, entries, .. } if key.name == "cache" => {
                let ttl = entries.iter().find_map(|e| match e {
                    Entry::Value { key, value } if key.name == "ttl" => match value.kind {
                        ExprKind::Duration { ms, .. } => Some(Duration::from_millis(ms)),
                        _ => None,
                    },
                    _ => None,
                });
                o.cache = Some(CachePolicy::new(ttl));
            }
            _ => {}
        }
    }
    Ok(o)
}

/// `retry { max_attempts: 3, initial: 100, … }`.
fn retry_policy(entries: &[Entry]) -> Result<RetryPolicy, Diagnostic> {
    let mut p = RetryPolicy::default();
    for re in entries {
        let Entry::Value { key, value } = re else {
            continue;
        };
        let v = const_value(value)?;
        let bad = || diag::bad_retry_value(value.span, &key.name);
        match key.name.as_str() {
            "max_attempts" => p.max_attempts = v.as_u64().ok_or_else(bad)?.max(1) as u32,
            "initial" => p.initial_interval = Duration::from_millis(v.as_u64().ok_or_else(bad)?),
            "max" => p.max_interval = Duration::from_millis(v.as_u64().ok_or_else(bad)?),
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
    Ok(p)
}

fn build_node(n: &NodeDecl, cx: &Context<'_>) -> Result<Arc<dyn Node>, Diagnostic> {
    let kind = n.kind_name().unwrap_or_default();
    match kind.as_str() {
        "set" => Ok(set_node(n, cx)),
        "interrupt" => Ok(interrupt_node(n, cx)),
        "noop" => Ok(node_fn(|_| async { Ok(Update::new()) })),
        k => {
            let factory = cx
                .reg
                .kinds
                .get(k)
                .and_then(|e| e.factory.clone())
                .ok_or_else(|| diag::kind_cannot_be_built(n.name.span, k))?;
            let build = NodeBuild {
                node: n,
                graph: cx.graph,
                base_dir: cx.base_dir.to_path_buf(),
                prompts: cx.prompts,
                extensions: cx.reg.extensions.clone(),
                source: cx.source,
            };
            factory
                .build(&build)
                .map_err(|m| diag::node_not_built(n.name.span, &n.name.name, k, &m))
        }
    }
}

/// `set { channel: expr, … }`.
fn set_node(n: &NodeDecl, cx: &Context<'_>) -> Arc<dyn Node> {
    let entries = Arc::new(n.block("set").map(pairs).unwrap_or_default());
    let extensions = cx.reg.extensions.clone();
    let name = n.name.name.clone();
    node_fn(move |ctx| {
        let entries = entries.clone();
        let extensions = extensions.clone();
        let name = name.clone();
        async move {
            let scope = scope_for(&ctx, &extensions);
            let mut u = Update::new();
            for (ch, e) in entries.iter() {
                let v = eval(e, &scope).map_err(|er| fail(&name, &format!("set `{ch}`"), er))?;
                u = u.set(ch.clone(), v);
            }
            Ok(u)
        }
    })
}

/// `interrupt { value: expr, write: channel }`.
fn interrupt_node(n: &NodeDecl, cx: &Context<'_>) -> Arc<dyn Node> {
    let value = n.value("value").cloned().map(Arc::new);
    let write = match n.value("write").map(|e| &e.kind) {
        Some(ExprKind::Name { name }) => Some(name.name.clone()),
        _ => None,
    };
    let extensions = cx.reg.extensions.clone();
    let name = n.name.name.clone();
    node_fn(move |ctx| {
        let value = value.clone();
        let write = write.clone();
        let extensions = extensions.clone();
        let name = name.clone();
        async move {
            let question = match &value {
                Some(e) => eval(e, &scope_for(&ctx, &extensions))
                    .map_err(|er| fail(&name, "interrupt value", er))?,
                None => Value::Null,
            };
            let answer = ctx.interrupt(question)?;
            Ok(match write {
                Some(ch) => Update::new().set(ch, answer),
                None => Update::new(),
            })
        }
    })
}

/// A subgraph node with its `in { … }` and `out { … }` mappings.
fn subgraph_node(n: &NodeDecl, child: CompiledGraph, cx: &Context<'_>) -> Subgraph {
    let mut sub = Subgraph::new(child);
    let node = n.name.name.clone();
    if let Some(entries) = n.block("in") {
        let entries = Arc::new(pairs(entries));
        let extensions = cx.reg.extensions.clone();
        let node = node.clone();
        sub = sub.map_in(move |ctx| {
            let scope = scope_for(ctx, &extensions);
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
    if let Some(entries) = n.block("out") {
        let entries = Arc::new(pairs(entries));
        let extensions = cx.reg.extensions.clone();
        sub = sub.map_out(move |child| {
            let mut scope = Scope::empty().with_extensions(&extensions);
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
