//! What one turn changed in the workflow: nodes added, removed, renamed or changed (the
//! settings that differ, by path) and connections added or removed. Nodes are matched by id
//! (by name when a node has none); positions on the canvas are not a change.

use nu_ansi_term::Color;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// At most this many changed settings are named per node.
const PATHS_SHOWN: usize = 3;

/// The change between two workflows.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WorkflowDiff {
    /// `name [type]` of each node added.
    pub added: Vec<String>,
    /// `name [type]` of each node removed.
    pub removed: Vec<String>,
    /// Each changed node: its name (`old → new` when renamed) and the paths that differ.
    pub changed: Vec<(String, Vec<String>)>,
    /// `source → target (kind)` of each connection added.
    pub linked: Vec<String>,
    /// … and removed.
    pub unlinked: Vec<String>,
}

/// The nodes in workflow order, each with its key (its id, else its name).
fn nodes(wf: &Value) -> Vec<(String, &Value)> {
    wf["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let key = n["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map(|id| format!("id:{id}"))
                .unwrap_or_else(|| format!("name:{}", name(n)));
            (key, n)
        })
        .collect()
}

fn name(n: &Value) -> &str {
    n["name"].as_str().unwrap_or("?")
}

fn labelled(n: &Value) -> String {
    format!("{} [{}]", name(n), n["type"].as_str().unwrap_or("?"))
}

/// The connections as `source → target (kind)` lines (`source[i]` for output `i > 0`).
pub fn connections(wf: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (source, kinds) in wf["connections"].as_object().into_iter().flatten() {
        for (kind, outputs) in kinds.as_object().into_iter().flatten() {
            for (i, targets) in outputs.as_array().into_iter().flatten().enumerate() {
                for t in targets.as_array().into_iter().flatten() {
                    let target = t["node"].as_str().unwrap_or("?");
                    let from = if i == 0 {
                        source.clone()
                    } else {
                        format!("{source}[{i}]")
                    };
                    out.insert(format!("{from} → {target} ({kind})"));
                }
            }
        }
    }
    out
}

/// The leaf paths where `a` and `b` differ (`parameters.rule.interval[0].triggerAtDay`).
fn differing(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                if path.is_empty() && k == "position" {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                differing(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &p,
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                differing(u, v, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

impl WorkflowDiff {
    /// What changed from `before` to `after`.
    pub fn between(before: &Value, after: &Value) -> Self {
        let (old_nodes, new_nodes) = (nodes(before), nodes(after));
        let old: BTreeMap<&String, &Value> = old_nodes.iter().map(|(k, n)| (k, *n)).collect();
        let new: BTreeMap<&String, &Value> = new_nodes.iter().map(|(k, n)| (k, *n)).collect();
        let mut d = WorkflowDiff::default();
        for (key, n) in &new_nodes {
            match old.get(key) {
                None => d.added.push(labelled(n)),
                Some(o) => {
                    let mut paths = Vec::new();
                    differing(o, n, "", &mut paths);
                    paths.retain(|p| p != "name");
                    let shown = if name(o) == name(n) {
                        name(n).to_string()
                    } else {
                        format!("{} → {}", name(o), name(n))
                    };
                    if !paths.is_empty() || name(o) != name(n) {
                        d.changed.push((shown, paths));
                    }
                }
            }
        }
        for (key, o) in &old_nodes {
            if !new.contains_key(key) {
                d.removed.push(labelled(o));
            }
        }
        let (a, b) = (connections(before), connections(after));
        d.linked = b.difference(&a).cloned().collect();
        d.unlinked = a.difference(&b).cloned().collect();
        d
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == WorkflowDiff::default()
    }

    /// The one-line count: `changes: +6 nodes, +5 connections`.
    pub fn headline(&self) -> String {
        let count = |n: usize, sign: &str, what: &str| {
            (n > 0).then(|| format!("{sign}{n} {what}{}", if n == 1 { "" } else { "s" }))
        };
        let parts: Vec<String> = [
            count(self.added.len(), "+", "node"),
            count(self.removed.len(), "-", "node"),
            count(self.changed.len(), "~", "node"),
            count(self.linked.len(), "+", "connection"),
            count(self.unlinked.len(), "-", "connection"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "changes: none".to_string()
        } else {
            format!("changes: {}", parts.join(", "))
        }
    }

    /// The headline and one line per change (`+`, `-`, `~`), coloured when `color`.
    pub fn render(&self, color: bool) -> String {
        let mut s = self.headline();
        s.push('\n');
        let mut line = |sign: &str, text: &str, c: Color| {
            let l = format!("  {sign} {text}");
            if color {
                s.push_str(&c.paint(l).to_string());
            } else {
                s.push_str(&l);
            }
            s.push('\n');
        };
        for n in &self.added {
            line("+", n, Color::Green);
        }
        for n in &self.removed {
            line("-", n, Color::Red);
        }
        for (n, paths) in &self.changed {
            let mut text = n.clone();
            if !paths.is_empty() {
                let shown: Vec<&str> = paths.iter().take(PATHS_SHOWN).map(String::as_str).collect();
                text.push_str(": ");
                text.push_str(&shown.join(", "));
                if paths.len() > PATHS_SHOWN {
                    text.push_str(&format!(" (+{} more)", paths.len() - PATHS_SHOWN));
                }
            }
            line("~", &text, Color::Yellow);
        }
        for c in &self.linked {
            line("+", c, Color::Green);
        }
        for c in &self.unlinked {
            line("-", c, Color::Red);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wf(days: i64, with_mail: bool) -> Value {
        let mut nodes = vec![
            json!({"id": "1", "name": "Every Monday", "type": "n8n-nodes-base.scheduleTrigger",
            "position": [0, 0], "parameters": {"rule": {"interval": [{"triggerAtDay": [days]}]}}}),
        ];
        let mut connections = json!({});
        if with_mail {
            nodes.push(json!({"id": "2", "name": "Send", "type": "n8n-nodes-base.gmail", "parameters": {}}));
            connections =
                json!({"Every Monday": {"main": [[{"node": "Send", "type": "main", "index": 0}]]}});
        }
        json!({"name": "W", "nodes": nodes, "connections": connections})
    }

    #[test]
    fn a_first_build_lists_every_node_and_connection() {
        let d = WorkflowDiff::between(&json!({"nodes": [], "connections": {}}), &wf(1, true));
        assert_eq!(
            d.render(false),
            "changes: +2 nodes, +1 connection\n  + Every Monday [n8n-nodes-base.scheduleTrigger]\n  \
+ Send [n8n-nodes-base.gmail]\n  + Every Monday → Send (main)\n"
        );
    }

    #[test]
    fn a_changed_setting_is_named_by_its_path_and_a_move_is_no_change() {
        let mut moved = wf(2, true);
        moved["nodes"][0]["position"] = json!([100, 40]);
        let d = WorkflowDiff::between(&wf(1, true), &moved);
        assert_eq!(
            d.render(false),
            "changes: ~1 node\n  ~ Every Monday: parameters.rule.interval[0].triggerAtDay[0]\n"
        );
    }

    #[test]
    fn removals_and_renames() {
        let mut renamed = wf(1, false);
        renamed["nodes"][0]["name"] = json!("Every Tuesday");
        let d = WorkflowDiff::between(&wf(1, true), &renamed);
        assert_eq!(
            d.changed,
            vec![("Every Monday → Every Tuesday".to_string(), vec![])]
        );
        assert_eq!(d.removed, vec!["Send [n8n-nodes-base.gmail]".to_string()]);
        assert_eq!(d.unlinked, vec!["Every Monday → Send (main)".to_string()]);
        assert!(WorkflowDiff::between(&wf(1, true), &wf(1, true)).is_empty());
    }
}
