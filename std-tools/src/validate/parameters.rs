//! Parameter rules over the node-type description: missing required parameters and invalid
//! options values, counting only the properties n8n shows for the node's parameters and
//! version (displayOptions), and keys no property defines (`unknown.rs`).

use serde_json::Value;

use super::codes::*;
use super::{Ctx, Finding, NodeInfo};
use crate::catalogue::{property_visible, NodeProperty};

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for n in &ctx.nodes {
        if n.desc.is_some() {
            required(n, out);
            options(n, out);
            super::unknown::check(n, out);
        }
    }
}

fn empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => {
            let t = s.trim();
            t.is_empty() || t == "="
        }
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => {
            if o.get("__rl").is_some() {
                empty(o.get("value"))
            } else {
                o.is_empty()
            }
        }
        _ => false,
    }
}

const NOT_VALUES: &[&str] = &["notice", "callout", "button", "hidden", "credentials"];

fn required(n: &NodeInfo, out: &mut Vec<Finding>) {
    let Some(desc) = n.desc else { return };
    let mut done: Vec<&str> = Vec::new();
    for p in &desc.properties {
        if !p.is_required()
            || NOT_VALUES.contains(&p.kind.as_str())
            || done.contains(&p.name.as_str())
            || !property_visible(p, &n.params, n.version)
        {
            continue;
        }
        done.push(&p.name);
        if empty(n.params.get(&p.name)) {
            let label = if p.display_name.is_empty() {
                p.name.clone()
            } else {
                format!("{} ({})", p.display_name, p.name)
            };
            out.push(
                Finding::new(
                    MISSING_REQUIRED_PARAMETER,
                    Some(n.name()),
                    format!("the required parameter {label} is not set"),
                )
                .at(p.name.clone()),
            );
        }
    }
}

fn dynamic_options(p: &NodeProperty) -> bool {
    p.type_options.as_ref().is_some_and(|t| {
        t.get("loadOptionsMethod").is_some()
            || t.get("loadOptions").is_some()
            || t.get("loadOptionsDependsOn").is_some()
    })
}

fn option_values(p: &NodeProperty) -> Vec<&Value> {
    p.options
        .iter()
        .flatten()
        .filter_map(|o| o.get("value"))
        .collect()
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() < 1e-9,
            _ => x == y,
        },
        _ => a == b,
    }
}

fn is_expression(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with('='))
}

fn options(n: &NodeInfo, out: &mut Vec<Finding>) {
    let Some(desc) = n.desc else { return };
    for (name, value) in &n.node.parameters {
        if is_expression(value) {
            continue;
        }
        let candidates: Vec<&NodeProperty> = desc
            .properties
            .iter()
            .filter(|p| &p.name == name)
            .filter(|p| property_visible(p, &n.params, n.version))
            .collect();
        if candidates.is_empty()
            || candidates.iter().any(|p| {
                !matches!(p.kind.as_str(), "options" | "multiOptions") || dynamic_options(p)
            })
        {
            continue;
        }
        let allowed: Vec<&Value> = candidates.iter().flat_map(|p| option_values(p)).collect();
        if allowed.is_empty() {
            continue;
        }
        let values: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            v => vec![v],
        };
        let bad: Vec<&&Value> = values
            .iter()
            .filter(|v| !is_expression(v) && !allowed.iter().any(|a| same(a, v)))
            .collect();
        if let Some(first) = bad.first() {
            let mut list: Vec<String> = allowed.iter().take(12).map(|v| v.to_string()).collect();
            list.dedup();
            if allowed.len() > 12 {
                list.push("…".into());
            }
            out.push(
                Finding::new(
                    INVALID_OPTION_VALUE,
                    Some(n.name()),
                    format!(
                        "parameter `{name}` has value {first}, which is not one of its options \
                         ({})",
                        list.join(", ")
                    ),
                )
                .at(name.clone()),
            );
        }
    }
}
