//! Compiling a checked graph into a runtime [`CompiledGraph`]: channels and graph options
//! here, nodes in `nodes`, edges and routes in `edges`.

use crate::ast::*;
use crate::check::Symbols;
use crate::diagnostic::{catalogue as diag, Diagnostic};
use crate::eval::{eval, Scope};
use crate::extensions::Extensions;
use crate::registry::{Registry, SourceFile};
use agentgraph_runtime::{
    ChannelSpec, CompiledGraph, GraphBuilder, NodeError, TaskContext, ValueType,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

mod edges;
mod nodes;

/// A compiled graph and the warnings its files were checked with.
pub struct Compiled {
    /// The runtime graph.
    pub graph: CompiledGraph,
    /// Warnings of every file of the project (errors stop compilation).
    pub warnings: Vec<Diagnostic>,
}

/// Resolves the graph a subgraph node runs.
pub trait SubgraphResolver {
    /// The compiled child graph of `node` (declared in the file at `base_dir`).
    fn resolve(&self, r: &SubgraphRef, base_dir: &Path) -> Result<CompiledGraph, Diagnostic>;
}

/// What the nodes of one graph are compiled with.
pub(crate) struct Context<'a> {
    pub(crate) graph: &'a GraphDecl,
    pub(crate) reg: &'a Registry,
    pub(crate) base_dir: &'a Path,
    pub(crate) prompts: &'a BTreeMap<String, String>,
    pub(crate) source: SourceFile<'a>,
}

/// The scope of a task: its state, its `send` payload as locals, the registry's extensions.
pub(crate) fn scope_for<'a>(ctx: &'a TaskContext, extensions: &'a Extensions) -> Scope<'a> {
    Scope::state(ctx.state())
        .with_extensions(extensions)
        .with_payload(ctx.payload())
}

fn const_value(e: &Expr) -> Result<Value, Diagnostic> {
    eval(e, &Scope::empty()).map_err(|er| diag::not_a_constant(e.span, er))
}

/// A fatal node error naming the node and what failed.
fn fail(node: &str, what: &str, e: impl std::fmt::Display) -> NodeError {
    NodeError::fatal(format!("node `{node}`: {what}: {e}"))
}

/// Compiles one graph of a file (`source`: that file, for nodes' run-time messages).
pub fn compile_graph(
    g: &GraphDecl,
    s: &Symbols<'_>,
    reg: &Registry,
    base_dir: &Path,
    prompts: &BTreeMap<String, String>,
    source: SourceFile<'_>,
    subgraphs: &dyn SubgraphResolver,
) -> Result<CompiledGraph, Vec<Diagnostic>> {
    let mut errs = Vec::new();
    let mut b = GraphBuilder::new(g.name.name.clone());
    b = channels(b, s, reg, &mut errs);
    b = graph_options(b, g);
    let cx = Context {
        graph: g,
        reg,
        base_dir,
        prompts,
        source,
    };
    b = nodes::add_nodes(b, s, &cx, subgraphs, &mut errs);
    for item in &g.items {
        if let GraphItem::Edge(e) = item {
            b = edges::edge(b, e, &reg.extensions);
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    b.compile()
        .map_err(|e| vec![diag::graph_rejected(g.name.span, e)])
}

/// The declared channels, with their reducers and defaults.
fn channels(
    mut b: GraphBuilder,
    s: &Symbols<'_>,
    reg: &Registry,
    errs: &mut Vec<Diagnostic>,
) -> GraphBuilder {
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
                if let Some(v) = neutral(&info.ty) {
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
    b
}

/// The value a reducer channel of type `ty` starts from.
fn neutral(ty: &ValueType) -> Option<Value> {
    match ty {
        ValueType::List(_) | ValueType::Messages => Some(Value::Array(vec![])),
        ValueType::Map(_) => Some(Value::Object(Map::new())),
        ValueType::Int => Some(Value::from(0)),
        _ => None,
    }
}

/// `input`, `output`, `config` and `interrupt` items.
fn graph_options(mut b: GraphBuilder, g: &GraphDecl) -> GraphBuilder {
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
                if let Some(ExprKind::Int { value }) = o.get("keep_checkpoints").map(|e| &e.kind) {
                    b = b.keep_checkpoints(usize::try_from(*value).unwrap_or(1).max(1));
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
    b
}
