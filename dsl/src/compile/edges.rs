//! Edges: plain edges and joins, routes (conditions evaluated per step) and sends (one task
//! per list item, with a payload).

use super::fail;
use crate::ast::*;
use crate::eval::{eval, truthy, Scope};
use crate::extensions::Extensions;
use agentgraph_runtime::{Goto, GraphBuilder, NodeError, Send, StateView, Targets};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The tasks a `send` starts: one per item of its list.
fn send_targets(
    s: &SendExpr,
    view: &StateView,
    extensions: &Extensions,
) -> Result<Vec<Goto>, NodeError> {
    let scope = Scope::state(view).with_extensions(extensions);
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
        let mut sc = Scope::state(view).with_extensions(extensions);
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
    extensions: &Arc<Extensions>,
) -> impl Fn(&StateView) -> Result<Targets, NodeError> + std::marker::Send + Sync + 'static {
    let arms: Vec<RouteArm> = r.arms.clone();
    let extensions = extensions.clone();
    move |view: &StateView| {
        for arm in &arms {
            let hit = match &arm.cond {
                None => true,
                Some(c) => truthy(
                    &eval(c, &Scope::state(view).with_extensions(&extensions))
                        .map_err(|e| NodeError::fatal(format!("route condition: {e}")))?,
                ),
            };
            if hit {
                let mut t = Vec::new();
                for target in &arm.targets {
                    match target {
                        RouteTarget::Node(n) => t.push(Goto::from(n.name.as_str())),
                        RouteTarget::Send(s) => t.extend(send_targets(s, view, &extensions)?),
                    }
                }
                return Ok(Targets(t));
            }
        }
        Ok(Targets(vec![Goto::End]))
    }
}

/// Adds an edge chain: plain edges, joins, routes and sends.
pub(super) fn edge(
    mut b: GraphBuilder,
    e: &EdgeStmt,
    extensions: &Arc<Extensions>,
) -> GraphBuilder {
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
                    b = b.route_to(p.clone(), &declared, route_fn(r, extensions));
                }
                prev = Vec::new();
            }
            Target::Send(s) => {
                let s2 = s.clone();
                for p in &prev {
                    let s3 = s2.clone();
                    let ext = extensions.clone();
                    b = b.route_to(p.clone(), &[s2.node.name.as_str()], move |v| {
                        Ok(Targets(send_targets(&s3, v, &ext)?))
                    });
                }
                prev = Vec::new();
            }
        }
    }
    b
}
