//! The spanned syntax tree of a `.ag` file. Our own types: no pest pairs leak out.
//!
//! Spans are byte offsets into the file's text. They are skipped when a tree is serialized, so
//! two trees can be compared for shape with [`same_shape`] (used by the formatter round-trip).

use serde::Serialize;

mod edges;
mod expr;

pub use edges::{
    EdgeStmt, Endpoint, InterruptStmt, RouteArm, RouteBlock, RouteTarget, SendExpr, Target,
};
pub use expr::{BinOp, Expr, ExprKind, UnOp};

/// A byte range in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A name with where it appears.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// A string literal: the unescaped value plus how it was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrLit {
    /// The text without quotes, escapes resolved (triple-quoted strings are dedented).
    pub value: String,
    /// Written as `"""…"""`.
    pub triple: bool,
    /// The source text, quotes included.
    #[serde(skip)]
    pub raw: String,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// A parsed file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct File {
    /// `use` declarations.
    pub uses: Vec<UseDecl>,
    /// Graphs (usually one).
    pub graphs: Vec<GraphDecl>,
}

/// `use "file.ag" as name`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UseDecl {
    /// The path, relative to this file.
    pub path: StrLit,
    /// The name it is used under.
    pub alias: Ident,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `graph name { … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphDecl {
    /// The graph's name.
    pub name: Ident,
    /// Its items in source order.
    pub items: Vec<GraphItem>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// One item of a graph body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum GraphItem {
    /// `state { … }`.
    State(StateBlock),
    /// `input { a, b }`.
    Input(NameList),
    /// `output { a, b }`.
    Output(NameList),
    /// `model name = provider { … }`.
    Model(ModelDecl),
    /// `prompt name = expr`.
    Prompt(PromptDecl),
    /// `tools name = [ … ]`.
    Tools(ToolsDecl),
    /// `node name: kind { … }`.
    Node(NodeDecl),
    /// `a -> b -> route { … }`.
    Edge(EdgeStmt),
    /// `interrupt before a, b`.
    Interrupt(InterruptStmt),
    /// `config { recursion_limit: 100 }`.
    Config(ObjectLit),
}

/// A list of names in braces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameList {
    /// The names.
    pub names: Vec<Ident>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `state { … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateBlock {
    /// The fields.
    pub fields: Vec<Field>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `private name: type = default reduce r ephemeral`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    /// The channel name.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
    /// Its default value.
    pub default: Option<Expr>,
    /// Its reducer (default `replace`; `messages` defaults to `add_messages`).
    pub reducer: Option<Ident>,
    /// Left out of the default input/output schema.
    pub private: bool,
    /// Cleared after the step that follows a write.
    pub ephemeral: bool,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// A type: `string`, `list<T>`, `map<T>`, `T?`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeExpr {
    /// The name (`list`, `string`, …).
    pub name: Ident,
    /// The argument of `list<…>` / `map<…>`.
    pub arg: Option<Box<TypeExpr>>,
    /// Ends with `?`.
    pub optional: bool,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `{ key: expr, … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectLit {
    /// Entries in source order.
    pub entries: Vec<(Ident, Expr)>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

impl ObjectLit {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Expr> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }
}

/// `model name = provider { … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelDecl {
    /// The model's name in this file.
    pub name: Ident,
    /// `anthropic`, `openai`, `scripted`, …
    pub provider: Ident,
    /// Provider options.
    pub options: ObjectLit,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `prompt name = "…"` or `= file("…")`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptDecl {
    /// The prompt's name.
    pub name: Ident,
    /// Its text (a string, a `file(…)` call, …).
    pub value: Expr,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `tools name = [a, b { option: v }, other_set]` or `tools name = mcp { … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsDecl {
    /// The set's name.
    pub name: Ident,
    /// Its tools (registered tools, or other sets whose tools it includes); empty for a source.
    pub tools: Vec<ToolRef>,
    /// A source whose tools are listed at run time (`mcp { … }`), instead of a list.
    pub source: Option<ToolSource>,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// `kind { options }`: tools listed at run time, e.g. an MCP server's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSource {
    /// The kind (`mcp`).
    pub kind: Ident,
    /// How to reach it and which tools to take.
    pub options: ObjectLit,
}

/// One tool of a set, with options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRef {
    /// The registered tool name, or another set's name.
    pub name: Ident,
    /// Per-tool options.
    pub options: Option<ObjectLit>,
}

/// `node name: kind { entries }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeDecl {
    /// The node's name.
    pub name: Ident,
    /// Its kind (`None`: inferred from the body, e.g. a `set` block).
    pub kind: Option<NodeKind>,
    /// Body entries.
    pub body: Vec<Entry>,
    /// Whether the body braces were written.
    pub has_body: bool,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeKind {
    /// A named kind: `llm`, `tool_executor`, `set`, `interrupt`, or a registered Rust node.
    Named(Ident),
    /// `subgraph "file.ag"` or `subgraph alias`.
    Subgraph(SubgraphRef),
}

/// The graph a subgraph node runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "ref", rename_all = "snake_case")]
pub enum SubgraphRef {
    /// A path relative to this file.
    Path(StrLit),
    /// A `use` alias.
    Alias(Ident),
}

/// A node body entry: `key: expr` or `key { entries }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// `key: expr`.
    Value {
        /// The key.
        key: Ident,
        /// The value.
        value: Expr,
    },
    /// `key { … }`.
    Block {
        /// The key (`set`, `in`, `out`, `retry`, …).
        key: Ident,
        /// Nested entries.
        entries: Vec<Entry>,
        /// Where.
        #[serde(skip)]
        span: Span,
    },
}

impl Entry {
    /// The entry's key.
    pub fn key(&self) -> &Ident {
        match self {
            Entry::Value { key, .. } | Entry::Block { key, .. } => key,
        }
    }

    /// The first entry of `entries` with key `key`.
    pub fn find<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Entry> {
        entries.iter().find(|e| e.key().name == key)
    }

    /// The value of the first `key: value` entry of `entries` with key `key`.
    pub fn find_value<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Expr> {
        entries.iter().find_map(|e| match e {
            Entry::Value { key: k, value } if k.name == key => Some(value),
            _ => None,
        })
    }

    /// The entries of the first `key { … }` block of `entries` with key `key`.
    pub fn find_block<'a>(entries: &'a [Entry], key: &str) -> Option<&'a [Entry]> {
        entries.iter().find_map(|e| match e {
            Entry::Block {
                key: k, entries, ..
            } if k.name == key => Some(entries.as_slice()),
            _ => None,
        })
    }
}

impl NodeDecl {
    /// The kind the node has: written, `subgraph`, `set` when it has a `set` block, `noop`
    /// when it has no body; `None` when it has a body but no kind.
    pub fn kind_name(&self) -> Option<String> {
        match &self.kind {
            Some(NodeKind::Named(k)) => Some(k.name.clone()),
            Some(NodeKind::Subgraph(_)) => Some("subgraph".into()),
            None if Entry::find(&self.body, "set").is_some() => Some("set".into()),
            None if !self.has_body => Some("noop".into()),
            None => None,
        }
    }

    /// The value of entry `key: value`.
    pub fn value(&self, key: &str) -> Option<&Expr> {
        Entry::find_value(&self.body, key)
    }

    /// The entries of block `key { … }`.
    pub fn block(&self, key: &str) -> Option<&[Entry]> {
        Entry::find_block(&self.body, key)
    }
}

/// Whether two trees have the same shape (everything but spans and raw text).
pub fn same_shape(a: &File, b: &File) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}
