//! The shape of a graph: an entry point, nodes reached from START, paths to END, and replace
//! channels two nodes of one step both write (or the parallel tasks of a `send`, `writes`).

use super::Checker;
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Dfs;
use std::collections::{BTreeMap, BTreeSet};

/// What each node triggers: static targets (all run), and route arms (one of them runs).
type Fanout = BTreeMap<String, (BTreeSet<String>, Vec<Vec<String>>)>;

/// The nodes of a graph as a petgraph, with START and END.
struct Flow<'n> {
    graph: DiGraph<&'n str, ()>,
    index: BTreeMap<&'n str, NodeIndex>,
}

impl<'n> Flow<'n> {
    fn new(nodes: impl Iterator<Item = &'n str>) -> Self {
        let mut graph = DiGraph::new();
        let mut index = BTreeMap::new();
        for n in ["START", "END"].into_iter().chain(nodes) {
            index.insert(n, graph.add_node(n));
        }
        Flow { graph, index }
    }

    fn link(&mut self, a: &str, b: &str) {
        if let (Some(&x), Some(&y)) = (self.index.get(a), self.index.get(b)) {
            self.graph.update_edge(x, y, ());
        }
    }

    /// The nodes reachable from `from` (following edges backwards when `reverse`).
    fn reach(&self, from: &str, reverse: bool) -> BTreeSet<&'n str> {
        let mut g = self.graph.clone();
        if reverse {
            g.reverse();
        }
        let mut out = BTreeSet::new();
        let mut dfs = Dfs::new(&g, self.index[from]);
        while let Some(nx) = dfs.next(&g) {
            out.insert(g[nx]);
        }
        out
    }
}

/// Links every edge of `g` into `flow` and returns what each node triggers.
fn fanout(g: &GraphDecl, flow: &mut Flow<'_>) -> Fanout {
    let mut fanout = Fanout::new();
    for item in &g.items {
        let GraphItem::Edge(e) = item else { continue };
        let mut prev: Vec<String> = match &e.from {
            Endpoint::Node(n) => vec![n.name.clone()],
            Endpoint::Join(l) => l.names.iter().map(|n| n.name.clone()).collect(),
        };
        for h in &e.hops {
            let targets: Vec<String> = match h {
                Target::Node(n) => vec![n.name.clone()],
                Target::Send(s) => vec![s.node.name.clone()],
                Target::Route(r) => r.target_names().map(|n| n.name.clone()).collect(),
            };
            for p in &prev {
                for t in &targets {
                    flow.link(p, t);
                }
                let (statics, arms) = fanout.entry(p.clone()).or_default();
                match h {
                    Target::Route(r) => arms.extend(
                        r.arms
                            .iter()
                            .map(|a| a.target_names().map(|n| n.name.clone()).collect()),
                    ),
                    _ => statics.extend(targets.iter().cloned()),
                }
            }
            prev = targets;
        }
    }
    fanout
}

impl Checker<'_, '_> {
    /// Reachability, paths to END, replace-channel writers that can share a step.
    pub(super) fn graph_shape(&mut self, g: &GraphDecl) {
        let mut flow = Flow::new(self.s.nodes.keys().map(String::as_str));
        let fanout = fanout(g, &mut flow);
        if !fanout.contains_key("START") {
            self.out
                .push(diag::no_entry_point(g.name.span, &g.name.name));
        }
        // A node without outgoing edges ends the run (warned about below): its path is done.
        for name in self.s.nodes.keys() {
            if !fanout.contains_key(name.as_str()) {
                flow.link(name, "END");
            }
        }
        self.reachability(&flow, &fanout);
        self.shared_writes(&fanout);
        self.send_writes(g);
    }

    /// Registered Rust nodes may route by command: nobody can say they cannot reach END.
    fn dynamic_exits(&self) -> BTreeSet<&str> {
        self.s
            .nodes
            .iter()
            .filter(|(_, n)| {
                n.kind_name()
                    .and_then(|k| self.reg.kinds.get(&k))
                    .is_some_and(|e| e.factory.is_some())
            })
            .map(|(name, _)| name.as_str())
            .collect()
    }

    fn reachability(&mut self, flow: &Flow<'_>, fanout: &Fanout) {
        let reach = flow.reach("START", false);
        let to_end = flow.reach("END", true);
        let dynamic = self.dynamic_exits();
        let mut found = Vec::new();
        for (name, n) in &self.s.nodes {
            let span = n.name.span;
            if !reach.contains(name.as_str()) {
                found.push(diag::unreachable(span, name));
            } else if dynamic.contains(name.as_str()) {
                continue;
            } else if !fanout.contains_key(name.as_str()) {
                // A dead end: the run stops after it (the runtime ends a run when nothing is
                // scheduled), which is legal but usually a forgotten edge.
                found.push(diag::no_outgoing_edge(span, name));
            } else if !to_end.contains(name.as_str()) {
                found.push(diag::no_path_to_end(span, name));
            }
        }
        self.out.extend(found);
    }

    /// Two nodes that START (or one node) fans out to, writing one replace channel. A route
    /// runs one arm: its static targets run with the targets of that arm only.
    fn shared_writes(&mut self, fanout: &Fanout) {
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for (statics, arms) in fanout.values() {
            let with_arms: Vec<Vec<&str>> = if arms.is_empty() {
                vec![statics.iter().map(String::as_str).collect()]
            } else {
                arms.iter()
                    .map(|arm| statics.iter().chain(arm).map(String::as_str).collect())
                    .collect()
            };
            for mut succ in with_arms {
                succ.retain(|n| *n != "END" && self.s.nodes.contains_key(*n));
                succ.sort_by_key(|n| self.s.nodes[*n].name.span.start);
                succ.dedup();
                if succ.len() > 1 {
                    groups.push(succ);
                }
            }
        }
        let mut reported = BTreeSet::new();
        for group in groups {
            let mut writers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for n in &group {
                for w in self.writes(self.s.nodes[*n]) {
                    if !w.overwrite {
                        writers.entry(w.channel.name.as_str()).or_default().push(n);
                    }
                }
            }
            for (ch, ws) in writers {
                let Some(info) = self.s.channels.get(ch) else {
                    continue;
                };
                if ws.len() > 1
                    && info.reducer == "replace"
                    && reported.insert((ch.to_string(), ws.join(",")))
                {
                    let a = self.s.nodes[ws[0]];
                    let b = self.s.nodes[ws[1]];
                    self.out.push(diag::shared_write(
                        (ws[0], a.name.span),
                        (ws[1], b.name.span),
                        ch,
                        info.field.name.span,
                    ));
                }
            }
        }
    }
}
