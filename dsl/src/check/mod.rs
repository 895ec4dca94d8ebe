//! Static checks of one graph: names, types, edges, routes, reachability, conflicts. Every
//! finding is collected; nothing stops at the first error.
//!
//! [`check_graph`] runs in two passes: `symbols` collects the declarations, then a
//! `Checker` walks the items (`items`, `entries`, `edges`, `exprs`) and the shape of
//! the graph (`reachability`, `writes`).

use crate::ast::*;
use crate::diagnostic::{catalogue as diag, Diagnostic};
use crate::registry::Registry;
use agentgraph_runtime::ValueType;
use std::collections::{BTreeMap, BTreeSet};

mod edges;
mod entries;
mod exprs;
mod items;
mod reachability;
mod symbols;
mod types;
mod writes;

pub use types::value_type;

/// A declared channel.
pub struct ChannelInfo<'a> {
    /// Its field.
    pub field: &'a Field,
    /// Its runtime type (json when the type was wrong).
    pub ty: ValueType,
    /// Its reducer name.
    pub reducer: String,
}

/// The names a graph declares.
#[derive(Default)]
pub struct Symbols<'a> {
    /// Channels by name.
    pub channels: BTreeMap<String, ChannelInfo<'a>>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, &'a NodeDecl>,
    /// Models by name.
    pub models: BTreeMap<String, &'a ModelDecl>,
    /// Prompts by name.
    pub prompts: BTreeMap<String, &'a PromptDecl>,
    /// Tool sets by name.
    pub toolsets: BTreeMap<String, &'a ToolsDecl>,
    /// Payload keys each node receives from sends.
    pub payload_keys: BTreeMap<String, BTreeSet<String>>,
}

/// The kind a node has: written, or `set` when it has only a `set` block.
pub fn kind_name(n: &NodeDecl) -> Option<String> {
    n.kind_name()
}

/// Checks one graph; returns its symbols for the compiler.
pub fn check_graph<'a>(
    g: &'a GraphDecl,
    uses: &[UseDecl],
    reg: &Registry,
    out: &mut Vec<Diagnostic>,
) -> Symbols<'a> {
    #[cfg(test)]
    tests::count_check();
    let s = symbols::collect(g, reg, out);
    let mut c = Checker {
        s: &s,
        reg,
        uses,
        out,
    };
    c.items(g);
    c.graph_shape(g);
    s
}

/// The second pass: everything that refers to the declarations.
struct Checker<'a, 'b> {
    s: &'b Symbols<'a>,
    reg: &'b Registry,
    uses: &'b [UseDecl],
    out: &'b mut Vec<Diagnostic>,
}

impl Checker<'_, '_> {
    fn node_names(&self) -> Vec<&str> {
        self.s.nodes.keys().map(String::as_str).collect()
    }

    fn channel_names(&self) -> Vec<&str> {
        self.s.channels.keys().map(String::as_str).collect()
    }

    /// A node named by an edge, route, send or interrupt (`as_source`: before the arrow).
    fn node_ref(&mut self, id: &Ident, as_source: bool) {
        match id.name.as_str() {
            "START" if as_source => {}
            "END" if !as_source => {}
            "START" => self.out.push(diag::start_as_target(id.span)),
            "END" => self.out.push(diag::end_as_source(id.span)),
            n if self.s.nodes.contains_key(n) => {}
            n => {
                let d = diag::unknown_node(id.span, n, &self.node_names());
                self.out.push(d);
            }
        }
    }

    fn unknown_channel(&mut self, n: &Ident) {
        let d = diag::unknown_channel(n.span, &n.name, &self.channel_names());
        self.out.push(d);
    }

    /// Reports `n` unless it is a declared channel.
    fn channel_ref(&mut self, n: &Ident) {
        if !self.s.channels.contains_key(&n.name) {
            self.unknown_channel(n);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    thread_local! {
        static CHECKS: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count_check() {
        CHECKS.with(|c| c.set(c.get() + 1));
    }

    /// How many graphs this thread has checked so far.
    pub(crate) fn checks() -> usize {
        CHECKS.with(Cell::get)
    }
}
