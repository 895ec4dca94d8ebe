//! What a node factory gets: a typed view of the node's entries and of the graph's models,
//! prompts and tool sets, so that factories never walk the syntax tree themselves.

use crate::ast::{Entry, Expr, GraphDecl, GraphItem, ModelDecl, NodeDecl, ToolsDecl};
use crate::eval::{eval, Scope};
use crate::extensions::Extensions;
use agentgraph_runtime::Node;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What the compiler hands a node factory.
pub struct NodeBuild<'a> {
    /// The node's declaration.
    pub node: &'a NodeDecl,
    /// The graph it is in (models, prompts, tool sets).
    pub graph: &'a GraphDecl,
    /// The folder of the graph file.
    pub base_dir: PathBuf,
    /// Prompt texts by name (`file(…)` already read).
    pub prompts: &'a BTreeMap<String, String>,
    /// The registry's filters and functions, for expressions the node evaluates at run time.
    pub extensions: Arc<Extensions>,
    /// The file the node is declared in, for run-time messages that point into it.
    pub source: SourceFile<'a>,
}

/// A graph file as run-time messages name it: spans are byte offsets into `text`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceFile<'a> {
    /// How diagnostics name the file (its path as given).
    pub name: &'a str,
    /// Its text.
    pub text: &'a str,
}

impl SourceFile<'_> {
    /// The 1-based line of byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        crate::diagnostic::line_col(self.text, offset).0
    }

    /// The file's name without its folders (`graph.ag`).
    pub fn file_name(&self) -> &str {
        std::path::Path::new(self.name)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(self.name)
    }
}

/// Builds the runtime node of a registered kind.
pub trait NodeFactory: Send + Sync {
    /// Builds the node, or says why it cannot.
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String>;
}

impl<'a> NodeBuild<'a> {
    /// The node's name.
    pub fn name(&self) -> &'a str {
        &self.node.name.name
    }

    /// The node's entries, in source order.
    pub fn entries(&self) -> &'a [Entry] {
        &self.node.body
    }

    /// Whether the node has entry `key` (a value or a block).
    pub fn has(&self, key: &str) -> bool {
        Entry::find(&self.node.body, key).is_some()
    }

    /// The expression of entry `key: expr`.
    pub fn expr(&self, key: &str) -> Option<&'a Expr> {
        self.node.value(key)
    }

    /// The name entry `key` gives: `key: name` or `key: "name"` (a channel, model, tool set…).
    pub fn channel(&self, key: &str) -> Option<&'a str> {
        self.expr(key).and_then(Expr::as_name)
    }

    /// The constant value of entry `key` (evaluated without state), or why it is not one.
    pub fn constant(&self, key: &str) -> Result<Option<Value>, String> {
        self.expr(key).map(constant).transpose()
    }

    /// The constant string of entry `key`, or why it is not one.
    pub fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.constant(key)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("`{key}` is a string, got {other}")),
        }
    }

    /// The entries of block `key { … }` as `(key, expression)` pairs.
    pub fn block(&self, key: &str) -> Option<Vec<(String, Expr)>> {
        self.node.block(key).map(pairs)
    }

    /// The model declaration `model name = …` of the graph.
    pub fn model(&self, name: &str) -> Option<&'a ModelDecl> {
        self.graph.items.iter().find_map(|i| match i {
            GraphItem::Model(m) if m.name.name == name => Some(m),
            _ => None,
        })
    }

    /// The tool set declaration `tools name = […]` of the graph.
    pub fn tool_set(&self, name: &str) -> Option<&'a ToolsDecl> {
        crate::agents::tool_sets::tool_set(self.graph, name)
    }

    /// The text of prompt `name`.
    pub fn prompt(&self, name: &str) -> Option<&'a str> {
        self.prompts.get(name).map(String::as_str)
    }
}

/// The value of a constant expression, or why it is not one.
pub(crate) fn constant(e: &Expr) -> Result<Value, String> {
    eval(e, &Scope::empty()).map_err(|er| er.0)
}

/// The `key: expr` entries of a block as pairs (nested blocks are skipped).
pub(crate) fn pairs(entries: &[Entry]) -> Vec<(String, Expr)> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Value { key, value } => Some((key.name.clone(), value.clone())),
            Entry::Block { .. } => None,
        })
        .collect()
}
