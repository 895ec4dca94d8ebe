//! The channels a node writes, as far as the graph file says, and the `send` targets whose
//! parallel tasks would all write one replace channel (W0305).

use super::Checker;
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use crate::registry::COMMON_ENTRIES;
use crate::types::Ty;
use std::collections::BTreeMap;

/// One write of a node to a channel.
pub(super) struct Write<'a> {
    /// The channel, where the node names it.
    pub channel: &'a Ident,
    /// Written with `overwrite(…)`: it replaces the value, and several such writes of one step
    /// do not conflict (the last in task order wins).
    pub overwrite: bool,
}

fn is_overwrite(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, .. } if func.name == "overwrite")
}

/// The keys of a `set { … }` or `out { … }` block as writes.
fn block_writes(entries: &[Entry]) -> impl Iterator<Item = Write<'_>> {
    entries.iter().map(|e| Write {
        channel: e.key(),
        overwrite: matches!(e, Entry::Value { value, .. } if is_overwrite(value)),
    })
}

impl<'a> Checker<'a, '_> {
    /// What `n` writes: its `set` keys, a subgraph's `out` keys, and the entries its kind
    /// declares as written channels (`write:`, `catch:`, an `llm` node's `output:`, …).
    pub(super) fn writes(&self, n: &'a NodeDecl) -> Vec<Write<'a>> {
        let kind = n.kind_name();
        let spec = kind.as_deref().and_then(|k| self.reg.kinds.get(k));
        let writes_entry = |key: &str| {
            spec.iter()
                .flat_map(|k| &k.entries)
                .chain(COMMON_ENTRIES)
                .any(|e| e.name == key && e.writes)
        };
        let mut out = Vec::new();
        for e in &n.body {
            match e {
                Entry::Block { key, entries, .. } if key.name == "set" => {
                    out.extend(block_writes(entries));
                }
                Entry::Block { key, entries, .. }
                    if key.name == "out" && kind.as_deref() == Some("subgraph") =>
                {
                    out.extend(block_writes(entries));
                }
                Entry::Value { key, value } if writes_entry(&key.name) => {
                    if let ExprKind::Name { name } = &value.kind {
                        out.push(Write {
                            channel: name,
                            overwrite: false,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// A node that a `send` fans out to runs once per item, all in one step: each of its
    /// writes to a replace channel collides with its siblings' (the runtime fails the run on
    /// the second). Reported once per node and channel, at the first send.
    pub(super) fn send_writes(&mut self, g: &GraphDecl) {
        let mut first_send: BTreeMap<&str, &SendExpr> = BTreeMap::new();
        for item in &g.items {
            if let GraphItem::Edge(e) = item {
                for sx in e.sends() {
                    first_send.entry(sx.node.name.as_str()).or_insert(sx);
                }
            }
        }
        let mut found = Vec::new();
        for (node, sx) in first_send {
            let Some(n) = self.s.nodes.get(node) else {
                continue;
            };
            let mut seen = Vec::new();
            for w in self.writes(n) {
                let name = w.channel.name.as_str();
                let Some(info) = self.s.channels.get(name) else {
                    continue;
                };
                if w.overwrite || info.reducer != "replace" || seen.contains(&name) {
                    continue;
                }
                seen.push(name);
                found.push(diag::send_shared_write(
                    node,
                    w.channel.span,
                    sx.span,
                    (name, &Ty::of(&info.ty), info.field.name.span),
                ));
            }
        }
        self.out.extend(found);
    }
}
