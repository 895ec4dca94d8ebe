//! The first pass: declarations (channels, nodes, models, prompts, tool sets) and the payload
//! keys sends give each node.

use super::{value_type, ChannelInfo, Symbols};
use crate::ast::*;
use crate::diagnostic::{catalogue as diag, Diagnostic};
use crate::eval::{eval, Scope};
use crate::registry::Registry;
use agentgraph_runtime::ValueType;
use std::collections::HashMap;

const RESERVED: [&str; 2] = ["START", "END"];

/// Collects the declarations of `g`, reporting duplicates and bad channel declarations.
pub(super) fn collect<'a>(
    g: &'a GraphDecl,
    reg: &Registry,
    out: &mut Vec<Diagnostic>,
) -> Symbols<'a> {
    let mut s = Symbols::default();
    let mut first_def: HashMap<String, Span> = HashMap::new();
    let mut define = |kind: &str, id: &Ident, out: &mut Vec<Diagnostic>| -> bool {
        let key = format!("{kind}:{}", id.name);
        if let Some(prev) = first_def.get(&key) {
            out.push(diag::defined_twice(kind, id, *prev));
            return false;
        }
        first_def.insert(key, id.span);
        true
    };
    for item in &g.items {
        match item {
            GraphItem::State(st) => {
                for f in &st.fields {
                    if define("channel", &f.name, out) {
                        s.channels.insert(f.name.name.clone(), channel(f, reg, out));
                    }
                }
            }
            GraphItem::Node(n) => {
                if RESERVED.contains(&n.name.name.as_str()) || n.name.name.starts_with("__") {
                    out.push(diag::reserved_name(&n.name));
                } else if define("node", &n.name, out) {
                    s.nodes.insert(n.name.name.clone(), n);
                }
            }
            GraphItem::Model(m) if define("model", &m.name, out) => {
                s.models.insert(m.name.name.clone(), m);
            }
            GraphItem::Prompt(p) if define("prompt", &p.name, out) => {
                s.prompts.insert(p.name.name.clone(), p);
            }
            GraphItem::Tools(t) if define("tool set", &t.name, out) => {
                s.toolsets.insert(t.name.name.clone(), t);
            }
            _ => {}
        }
    }
    payload_keys(g, &mut s);
    s
}

/// A channel's type, reducer and default.
fn channel<'a>(f: &'a Field, reg: &Registry, out: &mut Vec<Diagnostic>) -> ChannelInfo<'a> {
    let ty = match value_type(&f.ty) {
        Ok(t) => t,
        Err(d) => {
            out.push(d);
            ValueType::Json
        }
    };
    let reducer = match &f.reducer {
        Some(r) => {
            if reg.reducers.get(&r.name).is_none() {
                let names: Vec<&str> = reg.reducers.names().collect();
                out.push(diag::unknown_reducer(r.span, &r.name, &names));
            }
            r.name.clone()
        }
        None if ty == ValueType::Messages => "add_messages".into(),
        None => "replace".into(),
    };
    if let Some(d) = &f.default {
        default(f, d, &ty, out);
    }
    ChannelInfo {
        field: f,
        ty,
        reducer,
    }
}

/// A default must be a constant of the channel's type.
fn default(f: &Field, d: &Expr, ty: &ValueType, out: &mut Vec<Diagnostic>) {
    let mut names = Vec::new();
    collect_names(d, &mut names);
    for n in names {
        out.push(diag::default_not_constant(n));
    }
    if let Ok(v) = eval(d, &Scope::empty()) {
        if let Err(m) = ty.check(&v) {
            out.push(diag::default_wrong_type(
                d.span,
                &f.name.name,
                ty,
                m.to_string().replace(" at $", ""),
                f.ty.span,
            ));
        }
    }
}

fn collect_names<'e>(e: &'e Expr, out: &mut Vec<&'e Ident>) {
    match &e.kind {
        ExprKind::Name { name } => out.push(name),
        ExprKind::Field { base, .. } => collect_names(base, out),
        ExprKind::Index { base, index } => {
            collect_names(base, out);
            collect_names(index, out);
        }
        ExprKind::Call { args, .. } => args.iter().for_each(|a| collect_names(a, out)),
        ExprKind::List { items } => items.iter().for_each(|a| collect_names(a, out)),
        ExprKind::Object { object } => object
            .entries
            .iter()
            .for_each(|(_, v)| collect_names(v, out)),
        ExprKind::Unary { operand, .. } => collect_names(operand, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            collect_names(lhs, out);
            collect_names(rhs, out);
        }
        _ => {}
    }
}

/// The payload keys sends give each node (its local names).
fn payload_keys(g: &GraphDecl, s: &mut Symbols<'_>) {
    for item in &g.items {
        let GraphItem::Edge(e) = item else { continue };
        for sx in e.sends() {
            let keys = s.payload_keys.entry(sx.node.name.clone()).or_default();
            keys.extend(sx.payload.entries.iter().map(|(k, _)| k.name.clone()));
        }
    }
}
