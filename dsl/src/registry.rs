//! What a graph file can refer to by name: node kinds, tools, reducers, model providers. The
//! embedding application (and std-tools, models) register theirs.

use crate::ast::{GraphDecl, NodeDecl};
use agentgraph_runtime::{Node, ReducerRegistry};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// An entry a node kind accepts.
#[derive(Debug, Clone)]
pub struct EntrySpec {
    /// The key.
    pub name: &'static str,
    /// Whether the node must have it.
    pub required: bool,
    /// Whether it is a block (`key { … }`) rather than `key: value`.
    pub block: bool,
}

impl EntrySpec {
    /// An optional `key: value` entry.
    pub const fn value(name: &'static str) -> Self {
        EntrySpec {
            name,
            required: false,
            block: false,
        }
    }
    /// A required `key: value` entry.
    pub const fn required(name: &'static str) -> Self {
        EntrySpec {
            name,
            required: true,
            block: false,
        }
    }
    /// An optional block entry.
    pub const fn block(name: &'static str) -> Self {
        EntrySpec {
            name,
            required: false,
            block: true,
        }
    }
}

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
}

/// Builds the runtime node of a registered kind.
pub trait NodeFactory: Send + Sync {
    /// Builds the node, or says why it cannot.
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String>;
}

/// A registered node kind.
#[derive(Clone)]
pub struct KindEntry {
    /// Entries the kind accepts (besides `retry` and `timeout`, which every node accepts).
    pub entries: Vec<EntrySpec>,
    /// One line for `did you mean` lists and docs.
    pub doc: String,
    /// Builds the node; `None` for the built-in kinds the compiler handles itself.
    pub factory: Option<Arc<dyn NodeFactory>>,
}

/// Names a graph can use.
#[derive(Clone)]
pub struct Registry {
    /// Reducers by name.
    pub reducers: ReducerRegistry,
    /// Node kinds by name.
    pub kinds: BTreeMap<String, KindEntry>,
    /// Tools by name, with a description.
    pub tools: BTreeMap<String, String>,
    /// Model providers.
    pub providers: BTreeSet<String>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut kinds = BTreeMap::new();
        kinds.insert(
            "set".to_string(),
            KindEntry {
                entries: vec![EntrySpec {
                    name: "set",
                    required: true,
                    block: true,
                }],
                doc: "pure updates from expressions: `set { channel: expr }`".into(),
                factory: None,
            },
        );
        kinds.insert(
            "interrupt".to_string(),
            KindEntry {
                entries: vec![EntrySpec::required("value"), EntrySpec::value("write")],
                doc: "asks a human: `value` is shown, the answer goes to channel `write`".into(),
                factory: None,
            },
        );
        kinds.insert(
            "fail".to_string(),
            KindEntry {
                entries: vec![EntrySpec::required("message"), EntrySpec::value("code")],
                doc:
                    "ends the run with an error: `message` (an expression), `code` (default FAILED)"
                        .into(),
                factory: Some(Arc::new(crate::fail::FailFactory)),
            },
        );
        kinds.insert(
            "noop".to_string(),
            KindEntry {
                entries: vec![],
                doc: "does nothing (a junction)".into(),
                factory: None,
            },
        );
        Registry {
            reducers: ReducerRegistry::default(),
            kinds,
            tools: BTreeMap::new(),
            providers: BTreeSet::new(),
        }
    }
}

impl Registry {
    /// Registers a node kind built by `factory`.
    pub fn register_kind(
        &mut self,
        name: impl Into<String>,
        entries: Vec<EntrySpec>,
        doc: impl Into<String>,
        factory: Arc<dyn NodeFactory>,
    ) -> &mut Self {
        self.kinds.insert(
            name.into(),
            KindEntry {
                entries,
                doc: doc.into(),
                factory: Some(factory),
            },
        );
        self
    }

    /// Registers a tool name.
    pub fn register_tool(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> &mut Self {
        self.tools.insert(name.into(), description.into());
        self
    }
}

/// Entries every node accepts.
pub const COMMON_ENTRIES: &[EntrySpec] = &[
    EntrySpec::block("retry"),
    EntrySpec::value("timeout"),
    EntrySpec::value("catch"),
];

/// Keys of a `retry { … }` block.
pub const RETRY_KEYS: &[&str] = &[
    "max_attempts",
    "initial",
    "backoff",
    "max",
    "jitter",
    "retry_on",
];

/// Keys of `config { … }`.
pub const CONFIG_KEYS: &[&str] = &["recursion_limit"];
