//! What a graph file can refer to by name: node kinds, tools, reducers, model providers,
//! template filters and expression functions. The embedding application (and std-tools,
//! models) register theirs.

use crate::extensions::{Extensions, Filter, Function};
use agentgraph_runtime::ReducerRegistry;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(crate) mod node_build;

pub use node_build::{NodeBuild, NodeFactory, SourceFile};

/// Builds a fresh registry: what an application hands the CLI's commands and the server, so
/// that they compile graphs against its tools and kinds without knowing them.
pub type RegistryFactory = std::sync::Arc<dyn Fn() -> Registry + Send + Sync>;

/// An entry a node kind accepts.
#[derive(Debug, Clone)]
pub struct EntrySpec {
    /// The key.
    pub name: &'static str,
    /// Whether the node must have it.
    pub required: bool,
    /// Whether it is a block (`key { … }`) rather than `key: value`.
    pub block: bool,
    /// Whether its value names a channel the node writes (`output: decision`), for the checks
    /// of channels written in parallel.
    pub writes: bool,
}

impl EntrySpec {
    /// An optional `key: value` entry.
    pub const fn value(name: &'static str) -> Self {
        EntrySpec {
            name,
            required: false,
            block: false,
            writes: false,
        }
    }
    /// An optional `key: channel` entry naming a channel the node writes.
    pub const fn writes(name: &'static str) -> Self {
        EntrySpec {
            writes: true,
            ..EntrySpec::value(name)
        }
    }
    /// A required `key: value` entry.
    pub const fn required(name: &'static str) -> Self {
        EntrySpec {
            required: true,
            ..EntrySpec::value(name)
        }
    }
    /// An optional block entry.
    pub const fn block(name: &'static str) -> Self {
        EntrySpec {
            block: true,
            ..EntrySpec::value(name)
        }
    }
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
    /// Template filters and expression functions added to the built-in ones.
    pub extensions: Arc<Extensions>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut kinds = BTreeMap::new();
        kinds.insert(
            "set".to_string(),
            KindEntry {
                entries: vec![EntrySpec {
                    required: true,
                    ..EntrySpec::block("set")
                }],
                doc: "pure updates from expressions: `set { channel: expr }`".into(),
                factory: None,
            },
        );
        kinds.insert(
            "interrupt".to_string(),
            KindEntry {
                entries: vec![EntrySpec::required("value"), EntrySpec::writes("write")],
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
            "js".to_string(),
            KindEntry {
                entries: crate::code::js_entries(),
                doc:
                    "runs JavaScript (a function body) in a sandbox; what it returns is the update"
                        .into(),
                factory: Some(Arc::new(crate::code::JsFactory)),
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
            extensions: Arc::default(),
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

    /// Registers a template filter, `{{ value | name }}`: `apply` maps the value (or says why
    /// it cannot). A built-in filter of the same name wins.
    ///
    /// ```
    /// let mut reg = agentgraph_dsl::Registry::default();
    /// reg.register_filter("shout", "upper-cases and adds `!`", |v| {
    ///     let text = v.as_str().ok_or("shout takes a string")?;
    ///     Ok(format!("{}!", text.to_uppercase()).into())
    /// });
    /// assert!(reg.extensions.has_filter("shout"));
    /// ```
    pub fn register_filter(
        &mut self,
        name: impl Into<String>,
        doc: impl Into<String>,
        apply: impl Fn(&Value) -> Result<Value, String> + Send + Sync + 'static,
    ) -> &mut Self {
        Arc::make_mut(&mut self.extensions).add_filter(
            name,
            Filter {
                doc: doc.into(),
                apply: Arc::new(apply),
            },
        );
        self
    }

    /// Registers an expression function, `name(args…)`, with its arity and result type for
    /// the checker. A built-in function of the same name wins.
    ///
    /// ```
    /// use agentgraph_dsl::extensions::Function;
    /// use agentgraph_dsl::types::Ty;
    /// use std::sync::Arc;
    /// let mut reg = agentgraph_dsl::Registry::default();
    /// reg.register_function("twice", Function {
    ///     min: 1,
    ///     max: 1,
    ///     returns: Ty::Int,
    ///     doc: "the number times two".into(),
    ///     call: Arc::new(|args| {
    ///         let n = args[0].as_i64().ok_or("twice takes an int")?;
    ///         Ok((n * 2).into())
    ///     }),
    /// });
    /// assert!(reg.extensions.signature("twice").is_some());
    /// ```
    pub fn register_function(&mut self, name: impl Into<String>, function: Function) -> &mut Self {
        Arc::make_mut(&mut self.extensions).add_function(name, function);
        self
    }
}

/// Entries every node accepts.
pub const COMMON_ENTRIES: &[EntrySpec] = &[
    EntrySpec::block("retry"),
    EntrySpec::value("timeout"),
    EntrySpec::block("cache"),
    EntrySpec::writes("catch"),
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

/// Keys of a `cache { … }` block.
pub const CACHE_KEYS: &[&str] = &["ttl"];

/// Keys of `config { … }`.
pub const CONFIG_KEYS: &[&str] = &["recursion_limit", "keep_checkpoints"];
