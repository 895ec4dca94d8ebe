//! Static checks of one graph: names, types, edges, routes, reachability, conflicts. Every
//! finding is collected; nothing stops at the first error.

use crate::ast::*;
use crate::diagnostic::{did_you_mean, suggestion, Diagnostic};
use crate::registry::{Registry, COMMON_ENTRIES, CONFIG_KEYS, RETRY_KEYS};
use crate::types::Ty;
use agentgraph_runtime::ValueType;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Dfs;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    match &n.kind {
        Some(NodeKind::Named(k)) => Some(k.name.clone()),
        Some(NodeKind::Subgraph(_)) => Some("subgraph".into()),
        None if n.body.iter().any(|e| e.key().name == "set") => Some("set".into()),
        None if !n.has_body => Some("noop".into()),
        None => None,
    }
}

/// The runtime type of a type expression, or a diagnostic.
pub fn value_type(t: &TypeExpr) -> Result<ValueType, Diagnostic> {
    const NAMES: [&str; 8] = [
        "string", "int", "float", "bool", "json", "messages", "list", "map",
    ];
    let base = match (t.name.name.as_str(), &t.arg) {
        ("list", Some(a)) => ValueType::List(Box::new(value_type(a)?)),
        ("map", Some(a)) => ValueType::Map(Box::new(value_type(a)?)),
        ("list" | "map", None) => {
            return Err(Diagnostic::error(
                "E0202",
                t.span,
                format!("`{}` needs an item type", t.name.name),
            )
            .label("missing `<T>`")
            .help(format!(
                "write `{}<string>` (or `{}<json>` for anything)",
                t.name.name, t.name.name
            )))
        }
        (n, Some(_)) if !NAMES.contains(&n) => {
            let hint = match n {
                "array" | "vec" | "Vec" | "List" => Some("list"),
                "dict" | "object" | "Map" | "HashMap" => Some("map"),
                _ => did_you_mean(n, ["list", "map"]),
            };
            return Err(
                Diagnostic::error("E0202", t.name.span, format!("unknown type `{n}`"))
                    .label("not a type")
                    .help(match hint {
                        Some(h) => format!("did you mean `{h}<…>`?"),
                        None => "generic types are `list<T>` and `map<T>`".to_string(),
                    }),
            );
        }
        (n, Some(_)) => {
            return Err(Diagnostic::error(
                "E0202",
                t.name.span,
                format!("`{n}` takes no type argument"),
            )
            .label("not a generic type")
            .help("only `list<T>` and `map<T>` take a type argument"))
        }
        (n, None) => match n.parse::<ValueType>() {
            Ok(v) => v,
            Err(_) => {
                let hint = match n {
                    "str" | "text" => Some("did you mean `string`?".to_string()),
                    "integer" | "number" | "i64" => {
                        Some("did you mean `int` (or `float`)?".to_string())
                    }
                    "boolean" => Some("did you mean `bool`?".to_string()),
                    "object" | "dict" | "any" => {
                        Some("use `json` for any value, or `map<T>`".to_string())
                    }
                    "array" | "vec" => Some("use `list<T>`".to_string()),
                    _ => did_you_mean(n, NAMES).map(|s| format!("did you mean `{s}`?")),
                };
                return Err(Diagnostic::error("E0202", t.name.span, format!("unknown type `{n}`"))
                    .label("not a type")
                    .help(hint.unwrap_or_else(|| "types: string, int, float, bool, json, messages, list<T>, map<T>, T?".into())));
            }
        },
    };
    Ok(if t.optional {
        ValueType::Optional(Box::new(base))
    } else {
        base
    })
}

const KNOWN_WORDS: [&str; 2] = ["START", "END"];

/// A word with its indefinite article: `a string`, `an int`, an `` `interrupt` ``.
fn a(word: impl std::fmt::Display) -> String {
    let w = word.to_string();
    let first = w.trim_start_matches('`').chars().next().unwrap_or('x');
    if "aeiouAEIOU".contains(first) {
        format!("an {w}")
    } else {
        format!("a {w}")
    }
}

/// Checks one graph; returns its symbols for the compiler.
pub fn check_graph<'a>(
    g: &'a GraphDecl,
    uses: &[UseDecl],
    reg: &Registry,
    out: &mut Vec<Diagnostic>,
) -> Symbols<'a> {
    let mut s = Symbols {
        channels: BTreeMap::new(),
        nodes: BTreeMap::new(),
        models: BTreeMap::new(),
        prompts: BTreeMap::new(),
        toolsets: BTreeMap::new(),
        payload_keys: BTreeMap::new(),
    };
    let mut first_def: HashMap<String, Span> = HashMap::new();
    let mut define = |kind: &str, id: &Ident, out: &mut Vec<Diagnostic>| -> bool {
        let key = format!("{kind}:{}", id.name);
        if let Some(prev) = first_def.get(&key) {
            out.push(
                Diagnostic::error(
                    "E0201",
                    id.span,
                    format!("{kind} `{}` is defined twice", id.name),
                )
                .label("second definition")
                .with_label(*prev, "first defined here")
                .help(format!("rename one of them or remove the duplicate {kind}")),
            );
            return false;
        }
        first_def.insert(key, id.span);
        true
    };
    // Pass 1: declarations.
    for item in &g.items {
        match item {
            GraphItem::State(st) => {
                for f in &st.fields {
                    if !define("channel", &f.name, out) {
                        continue;
                    }
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
                                out.push(
                                    Diagnostic::error(
                                        "E0203",
                                        r.span,
                                        format!("unknown reducer `{}`", r.name),
                                    )
                                    .label("not a registered reducer")
                                    .help(suggestion(
                                        "reducers",
                                        &r.name,
                                        reg.reducers.names().collect::<Vec<_>>(),
                                    )),
                                );
                            }
                            r.name.clone()
                        }
                        None if ty == ValueType::Messages => "add_messages".into(),
                        None => "replace".into(),
                    };
                    if let Some(d) = &f.default {
                        check_const(d, out);
                        if let Ok(v) = crate::eval::eval(d, &crate::eval::Scope::empty()) {
                            if let Err(m) = ty.check(&v) {
                                out.push(
                                    Diagnostic::error(
                                        "E0204",
                                        d.span,
                                        format!(
                                            "the default of `{}` is not {}",
                                            f.name.name,
                                            a(&ty)
                                        ),
                                    )
                                    .label(m.to_string().replace(" at $", ""))
                                    .with_label(f.ty.span, "declared type")
                                    .help(format!(
                                        "write {} here, or change the channel's type",
                                        a(&ty)
                                    )),
                                );
                            }
                        }
                    }
                    s.channels.insert(
                        f.name.name.clone(),
                        ChannelInfo {
                            field: f,
                            ty,
                            reducer,
                        },
                    );
                }
            }
            GraphItem::Node(n) => {
                if KNOWN_WORDS.contains(&n.name.name.as_str()) || n.name.name.starts_with("__") {
                    out.push(
                        Diagnostic::error(
                            "E0201",
                            n.name.span,
                            format!("`{}` is reserved", n.name.name),
                        )
                        .label("reserved name")
                        .help("START and END are built in, and names starting with `__` belong to the runtime; choose another name"),
                    );
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
    // Payload keys that sends give each node.
    for item in &g.items {
        if let GraphItem::Edge(e) = item {
            for h in &e.hops {
                let mut sends = Vec::new();
                match h {
                    Target::Send(sx) => sends.push(sx),
                    Target::Route(r) => {
                        for a in &r.arms {
                            for t in &a.targets {
                                if let RouteTarget::Send(sx) = t {
                                    sends.push(sx);
                                }
                            }
                        }
                    }
                    Target::Node(_) => {}
                }
                for sx in sends {
                    let keys = s.payload_keys.entry(sx.node.name.clone()).or_default();
                    keys.extend(sx.payload.entries.iter().map(|(k, _)| k.name.clone()));
                }
            }
        }
    }
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

fn check_const(e: &Expr, out: &mut Vec<Diagnostic>) {
    let mut names = Vec::new();
    collect_names(e, &mut names);
    for n in names {
        out.push(
            Diagnostic::error(
                "E0204",
                n.span,
                format!("a default must be a constant; `{}` is a name", n.name),
            )
            .label("not a constant")
            .help("defaults are literals: numbers, strings, true/false/null, lists and objects"),
        );
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

    fn node_ref(&mut self, id: &Ident, as_source: bool) {
        match id.name.as_str() {
            "START" if as_source => {}
            "END" if !as_source => {}
            "START" => self.out.push(
                Diagnostic::error("E0221", id.span, "START cannot be a target")
                    .label("edges lead out of START, never into it")
                    .help("to loop back to the first node, name that node"),
            ),
            "END" => self.out.push(
                Diagnostic::error("E0221", id.span, "END cannot be a source")
                    .label("nothing runs after END")
                    .help("edges end at END: `last -> END`"),
            ),
            n if self.s.nodes.contains_key(n) => {}
            n => {
                let names = self.node_names();
                let mut help = suggestion("nodes", n, names.iter().copied());
                if n.eq_ignore_ascii_case("end") || n.eq_ignore_ascii_case("start") {
                    help = format!("write `{}` in capitals", n.to_uppercase());
                }
                self.out.push(
                    Diagnostic::error("E0220", id.span, format!("node `{n}` is not defined"))
                        .label("unknown node")
                        .help(help),
                );
            }
        }
    }

    fn items(&mut self, g: &GraphDecl) {
        for item in &g.items {
            match item {
                GraphItem::Input(l) | GraphItem::Output(l) => {
                    for n in &l.names {
                        if !self.s.channels.contains_key(&n.name) {
                            self.unknown_channel(n);
                        }
                    }
                }
                GraphItem::Model(m) => self.model(m),
                GraphItem::Prompt(p) => self.expr(&p.value, &[], false),
                GraphItem::Tools(t) => {
                    for tr in &t.tools {
                        if !self.reg.tools.contains_key(&tr.name.name) {
                            let help = if self.reg.tools.is_empty() {
                                "no tools are registered in this build; tools come from std-tools or the embedding app".to_string()
                            } else {
                                suggestion(
                                    "tools",
                                    &tr.name.name,
                                    self.reg.tools.keys().map(String::as_str),
                                )
                            };
                            self.out.push(
                                Diagnostic::error(
                                    "E0240",
                                    tr.name.span,
                                    format!("tool `{}` is not registered", tr.name.name),
                                )
                                .label("unknown tool")
                                .help(help),
                            );
                        }
                        if let Some(o) = &tr.options {
                            // Tool options may name models and prompts (`{ model: main }`).
                            for (_, v) in &o.entries {
                                self.entry_value(v, &[]);
                            }
                        }
                    }
                }
                GraphItem::Node(n) => self.node(n),
                GraphItem::Edge(e) => self.edge(e),
                GraphItem::Interrupt(i) => {
                    for n in &i.nodes {
                        self.node_ref(n, true);
                    }
                }
                GraphItem::Config(o) => {
                    for (k, v) in &o.entries {
                        if !CONFIG_KEYS.contains(&k.name.as_str()) {
                            self.out.push(
                                Diagnostic::error(
                                    "E0260",
                                    k.span,
                                    format!("unknown config key `{}`", k.name),
                                )
                                .label("not a config key")
                                .help(suggestion(
                                    "config keys",
                                    &k.name,
                                    CONFIG_KEYS.iter().copied(),
                                )),
                            );
                        } else if !matches!(v.kind, ExprKind::Int { value } if value > 0) {
                            self.out.push(
                                Diagnostic::error(
                                    "E0260",
                                    v.span,
                                    "recursion_limit must be a positive integer",
                                )
                                .label("not a positive integer")
                                .help("the most steps a run may take, e.g. `config { recursion_limit: 50 }`"),
                            );
                        }
                    }
                }
                GraphItem::State(_) => {}
            }
        }
    }

    fn model(&mut self, m: &ModelDecl) {
        const PROVIDERS: [&str; 3] = ["anthropic", "openai", "scripted"];
        let known = PROVIDERS.contains(&m.provider.name.as_str())
            || self.reg.providers.contains(&m.provider.name);
        if !known {
            let all: Vec<&str> = PROVIDERS
                .iter()
                .copied()
                .chain(self.reg.providers.iter().map(String::as_str))
                .collect();
            self.out.push(
                Diagnostic::error(
                    "E0241",
                    m.provider.span,
                    format!("unknown model provider `{}`", m.provider.name),
                )
                .label("not a provider")
                .help(suggestion("providers", &m.provider.name, all)),
            );
        }
        // The options each built-in provider reads; anything else would be silently ignored.
        const HTTP: &[&str] = &[
            "model",
            "api_key",
            "base_url",
            "max_tokens",
            "temperature",
            "pricing",
        ];
        const AUTO: &[&str] = &[
            "anthropic",
            "openai",
            "script",
            "api_key",
            "base_url",
            "max_tokens",
            "temperature",
            "pricing",
        ];
        let allowed: Option<&[&str]> = match m.provider.name.as_str() {
            "anthropic" | "openai" => Some(HTTP),
            "auto" => Some(AUTO),
            "scripted" => Some(&["script", "pricing"]),
            _ => None,
        };
        if let Some(allowed) = allowed {
            for (k, _) in &m.options.entries {
                if !allowed.contains(&k.name.as_str()) {
                    self.out.push(
                        Diagnostic::error(
                            "E0243",
                            k.span,
                            format!(
                                "`{}` is not an option of `{}` models",
                                k.name, m.provider.name
                            ),
                        )
                        .label("unknown option")
                        .help(suggestion(
                            "options",
                            &k.name,
                            allowed.iter().copied(),
                        )),
                    );
                }
            }
        }
        for (k, v) in &m.options.entries {
            let secret =
                k.name.contains("key") || k.name.contains("token") || k.name.contains("secret");
            if secret && matches!(v.kind, ExprKind::Str { .. }) {
                self.out.push(
                    Diagnostic::error("E0242", v.span, format!("`{}` is a literal secret", k.name))
                        .label("never put keys in a graph file")
                        .help(format!(
                            "read it from the environment: `{}: env(\"ANTHROPIC_API_KEY\")`",
                            k.name
                        )),
                );
            }
            self.expr(v, &[], false);
        }
    }

    fn unknown_channel(&mut self, n: &Ident) {
        let names: Vec<&str> = self.s.channels.keys().map(String::as_str).collect();
        self.out.push(
            Diagnostic::error(
                "E0205",
                n.span,
                format!("channel `{}` is not declared", n.name),
            )
            .label("unknown channel")
            .help(suggestion("channels", &n.name, names)),
        );
    }

    fn node(&mut self, n: &NodeDecl) {
        let locals: Vec<String> = self
            .s
            .payload_keys
            .get(&n.name.name)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        let Some(kind) = kind_name(n) else {
            self.out.push(
                Diagnostic::error(
                    "E0210",
                    n.name.span,
                    format!("node `{}` has no kind", n.name.name),
                )
                .label("what does this node do?")
                .help(match n.body.iter().find(|e| self.s.channels.contains_key(&e.key().name)) {
                    // `node bump { count: count + 1 }`: the `set { … }` around it is missing.
                    Some(e) => format!(
                        "to update channels, wrap the entries in a `set` block: `node {} {{ set {{ {}: … }} }}`",
                        n.name.name,
                        e.key().name
                    ),
                    None => "give it a kind (`node name: kind { … }`) or a `set { … }` block".into(),
                }),
            );
            return;
        };
        let spec = match (&n.kind, kind.as_str()) {
            (Some(NodeKind::Subgraph(r)), _) => {
                if let SubgraphRef::Alias(a) = r {
                    if !self.uses.iter().any(|u| u.alias.name == a.name) {
                        let aliases: Vec<&str> =
                            self.uses.iter().map(|u| u.alias.name.as_str()).collect();
                        self.out.push(
                            Diagnostic::error(
                                "E0250",
                                a.span,
                                format!("`{}` is not an imported graph", a.name),
                            )
                            .label("unknown subgraph")
                            .help(if aliases.is_empty() {
                                format!("import it first: `use \"{}.ag\" as {}`", a.name, a.name)
                            } else {
                                suggestion("imports", &a.name, aliases)
                            }),
                        );
                    }
                }
                vec![
                    crate::registry::EntrySpec::block("in"),
                    crate::registry::EntrySpec::block("out"),
                ]
            }
            (_, k) => match self.reg.kinds.get(k) {
                Some(e) => e.entries.clone(),
                None => {
                    let span = match &n.kind {
                        Some(NodeKind::Named(id)) => id.span,
                        _ => n.name.span,
                    };
                    let help = match k {
                        "llm" | "tool_executor" => format!(
                            "`{k}` is an agent node kind, and this registry has none: register them with `agentgraph_dsl::agents::register` (the `agentgraph` CLI does); registered kinds: {}",
                            self.reg.kinds.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                        _ => suggestion("node kinds", k, self.reg.kinds.keys().map(String::as_str).chain(["subgraph"])),
                    };
                    self.out.push(
                        Diagnostic::error("E0210", span, format!("unknown node kind `{k}`"))
                            .label("not a registered kind")
                            .help(help),
                    );
                    return;
                }
            },
        };
        let allowed: Vec<&str> = spec.iter().chain(COMMON_ENTRIES).map(|e| e.name).collect();
        for e in &n.body {
            let key = e.key();
            if !allowed.contains(&key.name.as_str()) {
                self.out.push(
                    Diagnostic::error(
                        "E0211",
                        key.span,
                        format!(
                            "`{}` is not an entry of {} node",
                            key.name,
                            a(format!("`{kind}`"))
                        ),
                    )
                    .label("unknown entry")
                    .help(suggestion(
                        "entries",
                        &key.name,
                        allowed.iter().copied(),
                    )),
                );
                continue;
            }
            match (key.name.as_str(), e) {
                ("set", Entry::Block { entries, .. }) => {
                    for se in entries {
                        match se {
                            Entry::Value { key, value } => {
                                let target = self.s.channels.get(&key.name).map(|c| Ty::of(&c.ty));
                                match target {
                                    None => self.unknown_channel(key),
                                    Some(t) => {
                                        let ty = self.expr_ty(value, &locals);
                                        let reducer = self
                                            .s
                                            .channels
                                            .get(&key.name)
                                            .map(|c| c.reducer.as_str())
                                            .unwrap_or("replace");
                                        let ok = ty.fits(&t)
                                            || (reducer != "replace" && item_fits(&ty, &t));
                                        if !ok {
                                            self.out.push(
                                                Diagnostic::error(
                                                    "E0232",
                                                    value.span,
                                                    format!(
                                                        "`{}` is {}, this is {}",
                                                        key.name,
                                                        a(&t),
                                                        a(&ty)
                                                    ),
                                                )
                                                .label(format!("{ty}"))
                                                .with_label(
                                                    self.s.channels[&key.name].field.ty.span,
                                                    "declared here",
                                                )
                                                .help(format!(
                                                    "write {} value, or change the type of `{}`",
                                                    a(&t),
                                                    key.name
                                                )),
                                            );
                                        }
                                    }
                                }
                            }
                            Entry::Block { key, .. } => self.out.push(
                                Diagnostic::error(
                                    "E0211",
                                    key.span,
                                    "a `set` block holds `channel: expression` entries",
                                )
                                .label("nested block")
                                .help("write one `channel: expression` entry per channel, e.g. `set { count: count + 1 }`"),
                            ),
                        }
                    }
                }
                ("retry", Entry::Block { entries, .. }) => {
                    for re in entries {
                        let k = re.key();
                        if !RETRY_KEYS.contains(&k.name.as_str()) {
                            self.out.push(
                                Diagnostic::error(
                                    "E0270",
                                    k.span,
                                    format!("`{}` is not a retry option", k.name),
                                )
                                .label("unknown option")
                                .help(suggestion(
                                    "options",
                                    &k.name,
                                    RETRY_KEYS.iter().copied(),
                                )),
                            );
                        }
                    }
                }
                ("timeout", Entry::Value { value, .. }) => {
                    if !matches!(value.kind, ExprKind::Duration { .. }) {
                        self.out.push(
                            Diagnostic::error("E0270", value.span, "a timeout is a duration")
                                .label("not a duration")
                                .help("write e.g. `timeout: 30s` (units: ms, s, m, h)"),
                        );
                    }
                }
                ("catch", Entry::Value { value, .. }) => match &value.kind {
                    ExprKind::Name { name } if self.s.channels.contains_key(&name.name) => {}
                    ExprKind::Name { name } => self.unknown_channel(name),
                    _ => self.out.push(
                        Diagnostic::error("E0211", value.span, "`catch` names a channel")
                            .label("not a channel name")
                            .help("name a `json?` channel that receives the error, e.g. `catch: error`"),
                    ),
                },
                ("write", Entry::Value { value, .. }) => match &value.kind {
                    ExprKind::Name { name } if self.s.channels.contains_key(&name.name) => {}
                    ExprKind::Name { name } => self.unknown_channel(name),
                    _ => self.out.push(
                        Diagnostic::error("E0211", value.span, "`write` names a channel")
                            .label("not a channel name")
                            .help(
                                "name the channel that receives the answer, e.g. `write: decision`",
                            ),
                    ),
                },
                ("in", Entry::Block { entries, .. }) => {
                    for ie in entries {
                        if let Entry::Value { value, .. } = ie {
                            self.expr(value, &locals, false);
                        }
                    }
                }
                ("out", Entry::Block { entries, .. }) => {
                    for oe in entries {
                        if !self.s.channels.contains_key(&oe.key().name) {
                            self.unknown_channel(oe.key());
                        }
                    }
                }
                (_, Entry::Value { value, .. }) => self.entry_value(value, &locals),
                (_, Entry::Block { entries, .. }) => {
                    for be in entries {
                        if let Entry::Value { value, .. } = be {
                            self.entry_value(value, &locals);
                        }
                    }
                }
            }
        }
        for req in spec.iter().filter(|e| e.required) {
            if !n.body.iter().any(|e| e.key().name == req.name) {
                self.out.push(
                    Diagnostic::error(
                        "E0212",
                        n.name.span,
                        format!("{} node needs `{}`", a(format!("`{kind}`")), req.name),
                    )
                    .label(format!("missing `{}`", req.name))
                    .help(if req.block {
                        format!("add `{} {{ … }}`", req.name)
                    } else {
                        format!("add `{}: …`", req.name)
                    }),
                );
            }
        }
    }

    /// Entry values may name models, prompts and tool sets besides channels.
    fn entry_value(&mut self, value: &Expr, locals: &[String]) {
        let mut extra: Vec<String> = locals.to_vec();
        extra.extend(self.s.models.keys().cloned());
        extra.extend(self.s.prompts.keys().cloned());
        extra.extend(self.s.toolsets.keys().cloned());
        self.expr(value, &extra, false);
    }

    fn expr(&mut self, e: &Expr, locals: &[String], want_bool: bool) {
        let ty = self.expr_ty(e, locals);
        if want_bool && !matches!(ty.base(), Ty::Bool | Ty::Any) {
            self.out.push(
                Diagnostic::error(
                    "E0232",
                    e.span,
                    format!("a condition must be a bool, this is {}", a(&ty)),
                )
                .label(format!("{ty}"))
                .help("compare it (`len(items) > 0`, `status == \"done\"`) to get a bool"),
            );
        }
    }

    fn expr_ty(&mut self, e: &Expr, locals: &[String]) -> Ty {
        match &e.kind {
            ExprKind::Null => Ty::Null,
            ExprKind::Bool { .. } => Ty::Bool,
            ExprKind::Int { .. } | ExprKind::Duration { .. } => Ty::Int,
            ExprKind::Float { .. } => Ty::Float,
            ExprKind::Str { lit } => {
                if lit.value.contains("{{") {
                    self.template(lit, locals);
                }
                Ty::String
            }
            ExprKind::Name { name } => {
                if locals.contains(&name.name) {
                    return Ty::Any;
                }
                if let Some(c) = self.s.channels.get(&name.name) {
                    return Ty::of(&c.ty);
                }
                let mut cands: Vec<&str> = self.s.channels.keys().map(String::as_str).collect();
                cands.extend(locals.iter().map(String::as_str));
                let mut help = suggestion("names", &name.name, cands);
                if name.name == "True" || name.name == "False" || name.name == "None" {
                    help = "literals are lower-case: `true`, `false`, `null`".into();
                }
                self.out.push(
                    Diagnostic::error(
                        "E0230",
                        name.span,
                        format!("`{}` is not a channel or variable", name.name),
                    )
                    .label("unknown name")
                    .help(help),
                );
                Ty::Any
            }
            ExprKind::Field { base, .. } => {
                let _ = self.expr_ty(base, locals);
                Ty::Any
            }
            ExprKind::Index { base, index } => {
                let b = self.expr_ty(base, locals);
                let _ = self.expr_ty(index, locals);
                match b.base() {
                    Ty::List(t) => (**t).clone(),
                    Ty::Map(t) => (**t).clone(),
                    Ty::Messages => Ty::Message,
                    _ => Ty::Any,
                }
            }
            ExprKind::Call { func, args } => {
                let arg_tys: Vec<Ty> = args.iter().map(|a| self.expr_ty(a, locals)).collect();
                match crate::functions::spec(&func.name) {
                    Some(s) => {
                        if args.len() < s.min || args.len() > s.max {
                            let want = if s.min == s.max {
                                format!("{}", s.min)
                            } else {
                                format!("{} to {}", s.min, s.max)
                            };
                            self.out.push(
                                Diagnostic::error(
                                    "E0231",
                                    func.span,
                                    format!(
                                        "`{}` takes {want} argument(s), got {}",
                                        func.name,
                                        args.len()
                                    ),
                                )
                                .label("wrong number of arguments")
                                .help(format!("{}: {}", s.name, s.doc)),
                            );
                        }
                        (s.returns)(&arg_tys)
                    }
                    None => {
                        let names = crate::functions::FUNCTIONS.iter().map(|f| f.name);
                        self.out.push(
                            Diagnostic::error(
                                "E0231",
                                func.span,
                                format!("unknown function `{}`", func.name),
                            )
                            .label("not a function")
                            .help(suggestion(
                                "functions",
                                &func.name,
                                names,
                            )),
                        );
                        Ty::Any
                    }
                }
            }
            ExprKind::List { items } => {
                let tys: Vec<Ty> = items.iter().map(|i| self.expr_ty(i, locals)).collect();
                let first = tys.first().cloned().unwrap_or(Ty::Any);
                Ty::List(Box::new(if tys.iter().all(|t| *t == first) {
                    first
                } else {
                    Ty::Any
                }))
            }
            ExprKind::Object { object } => {
                for (_, v) in &object.entries {
                    let _ = self.expr_ty(v, locals);
                }
                Ty::Map(Box::new(Ty::Any))
            }
            ExprKind::Unary { op, operand } => {
                let t = self.expr_ty(operand, locals);
                match op {
                    UnOp::Not => Ty::Bool,
                    UnOp::Neg => {
                        if !t.is_number() {
                            self.type_error(
                                e.span,
                                format!("`-` needs a number, this is {}", a(&t)),
                                "only int and float values can be negated",
                            );
                        }
                        t
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr_ty(lhs, locals);
                let r = self.expr_ty(rhs, locals);
                let (lb, rb) = (l.base().clone(), r.base().clone());
                let any = lb == Ty::Any || rb == Ty::Any;
                match op {
                    BinOp::And | BinOp::Or => Ty::Bool,
                    BinOp::Eq | BinOp::Ne => Ty::Bool,
                    BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                        let ok = any
                            || (l.is_number() && r.is_number())
                            || (lb == Ty::String && rb == Ty::String);
                        if !ok {
                            self.type_error(
                                e.span,
                                format!("cannot compare {} with {} using `{}`", a(&l), a(&r), op.symbol()),
                                "compare numbers with numbers and strings with strings; convert with `int(…)` or `str(…)`",
                            );
                        }
                        Ty::Bool
                    }
                    BinOp::Add => {
                        if any {
                            return Ty::Any;
                        }
                        match (&lb, &rb) {
                            (Ty::String, Ty::String) => Ty::String,
                            (Ty::List(_) | Ty::Messages, Ty::List(_) | Ty::Messages) => l.clone(),
                            (a, b) if a.is_number() && b.is_number() => {
                                if *a == Ty::Int && *b == Ty::Int {
                                    Ty::Int
                                } else {
                                    Ty::Float
                                }
                            }
                            _ => {
                                let hint = if lb == Ty::String || rb == Ty::String {
                                    "convert the other side with `str(…)`, or use a template: \"{{ count }} items\""
                                } else {
                                    "`+` adds numbers, joins two strings and concatenates two lists"
                                };
                                self.type_error(
                                    e.span,
                                    format!("cannot add {} and {}", a(&l), a(&r)),
                                    hint,
                                );
                                Ty::Any
                            }
                        }
                    }
                    BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                        if !(any || l.is_number() && r.is_number()) {
                            self.type_error(
                                e.span,
                                format!(
                                    "`{}` needs numbers, got {} and {}",
                                    op.symbol(),
                                    a(&l),
                                    a(&r)
                                ),
                                "arithmetic works on int and float values",
                            );
                            return Ty::Any;
                        }
                        if lb == Ty::Int && rb == Ty::Int && *op != BinOp::Div {
                            Ty::Int
                        } else if any {
                            Ty::Any
                        } else {
                            Ty::Float
                        }
                    }
                }
            }
        }
    }

    fn type_error(&mut self, span: Span, message: String, help: &str) {
        self.out.push(
            Diagnostic::error("E0232", span, message)
                .label("type error")
                .help(help),
        );
    }

    fn template(&mut self, lit: &StrLit, locals: &[String]) {
        match crate::template::holes(&lit.value, lit.span) {
            Err((span, m)) => self.out.push(
                Diagnostic::error("E0233", span, m)
                    .label("bad template")
                    .help("templates look like `{{ expr }}` or `{{ expr | filter }}`"),
            ),
            Ok(holes) => {
                for (mut e, filters) in holes {
                    relocate(&mut e, lit.span);
                    let _ = self.expr_ty(&e, locals);
                    for f in filters {
                        if !crate::template::FILTERS.contains(&f.as_str())
                            && !self.reg.kinds.contains_key(&f)
                        {
                            self.out.push(
                                Diagnostic::error(
                                    "E0233",
                                    lit.span,
                                    format!("unknown filter `{f}`"),
                                )
                                .label("in this template")
                                .help(suggestion(
                                    "filters",
                                    &f,
                                    crate::template::FILTERS.iter().copied(),
                                )),
                            );
                        }
                    }
                }
            }
        }
    }

    fn edge(&mut self, e: &EdgeStmt) {
        match &e.from {
            Endpoint::Node(n) => self.node_ref(n, true),
            Endpoint::Join(l) => {
                for n in &l.names {
                    self.node_ref(n, false);
                    if n.name == "END" {
                        self.out.push(
                            Diagnostic::error("E0221", n.span, "END cannot be waited on")
                                .label("not a source")
                                .help("wait on the nodes that run before END instead"),
                        );
                    }
                }
            }
        }
        let last = e.hops.len().saturating_sub(1);
        for (i, h) in e.hops.iter().enumerate() {
            match h {
                Target::Node(n) => {
                    self.node_ref(n, false);
                    if n.name == "END" && i < last {
                        self.out.push(
                            Diagnostic::error("E0221", n.span, "nothing can follow END")
                                .label("END ends the chain")
                                .help(
                                    "end the chain at END, and start a new edge for what runs next",
                                ),
                        );
                    }
                }
                Target::Route(r) => {
                    if i < last {
                        self.out.push(
                            Diagnostic::error(
                                "E0224",
                                r.span,
                                "a route must be the last hop of an edge",
                            )
                            .label("something follows this route")
                            .help("route targets go inside the route; start a new edge from them"),
                        );
                    }
                    self.route(r);
                }
                Target::Send(s) => {
                    if i < last {
                        self.out.push(
                            Diagnostic::error(
                                "E0224",
                                s.span,
                                "a `send` must be the last hop of an edge",
                            )
                            .label("something follows this send")
                            .help(format!(
                                "add the edge from the send's node separately: `{} -> …`",
                                s.node.name
                            )),
                        );
                    }
                    self.send(s);
                }
            }
        }
    }

    fn route(&mut self, r: &RouteBlock) {
        let has_else = r.arms.iter().any(|a| a.cond.is_none());
        if !has_else {
            self.out.push(
                Diagnostic::error("E0222", r.span, "this route has no `else` arm")
                    .label("what happens when no condition holds?")
                    .help("add `else => END` (or another node) as the last arm"),
            );
        }
        let mut seen_else = false;
        for a in &r.arms {
            if seen_else {
                self.out.push(
                    Diagnostic::warning(
                        "W0304",
                        a.span,
                        "this arm comes after `else` and never runs",
                    )
                    .label("unreachable arm")
                    .help("move the `else` arm to the end of the route, or remove this arm"),
                );
            }
            match &a.cond {
                Some(c) => self.expr(c, &[], true),
                None => seen_else = true,
            }
            for t in &a.targets {
                match t {
                    RouteTarget::Node(n) => self.node_ref(n, false),
                    RouteTarget::Send(s) => self.send(s),
                }
            }
        }
    }

    fn send(&mut self, s: &SendExpr) {
        self.node_ref(&s.node, false);
        let ty = self.expr_ty(&s.iter, &[]);
        if !matches!(ty.base(), Ty::List(_) | Ty::Messages | Ty::Any) {
            self.out.push(
                Diagnostic::error(
                    "E0232",
                    s.iter.span,
                    format!(
                        "`send … for {} in` needs a list, this is {}",
                        s.var.name,
                        a(&ty)
                    ),
                )
                .label("not a list")
                .help("fan out over a list: a `list<…>` channel, a list literal or `range(n)`"),
            );
        }
        let locals = vec![s.var.name.clone()];
        for (_, v) in &s.payload.entries {
            self.expr(v, &locals, false);
        }
    }

    /// Reachability, paths to END, replace-channel writers that can share a step.
    fn graph_shape(&mut self, g: &GraphDecl) {
        let mut pg: DiGraph<&str, ()> = DiGraph::new();
        let mut idx: BTreeMap<&str, NodeIndex> = BTreeMap::new();
        for n in ["START", "END"]
            .into_iter()
            .chain(self.s.nodes.keys().map(String::as_str))
        {
            idx.insert(n, pg.add_node(n));
        }
        let link = |pg: &mut DiGraph<&str, ()>, a: &str, b: &str| {
            if let (Some(&x), Some(&y)) = (idx.get(a), idx.get(b)) {
                pg.update_edge(x, y, ());
            }
        };
        let mut has_dynamic_exit: BTreeSet<String> = BTreeSet::new();
        // What each node triggers: static targets (all run), and route arms (one runs).
        let mut fanout: BTreeMap<String, (BTreeSet<String>, Vec<Vec<String>>)> = BTreeMap::new();
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
                        link(&mut pg, p, t);
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
        // Registered Rust nodes may route by command; do not claim they cannot reach END.
        for (name, n) in &self.s.nodes {
            if let Some(k) = kind_name(n) {
                if self.reg.kinds.get(&k).is_some_and(|e| e.factory.is_some()) {
                    has_dynamic_exit.insert(name.clone());
                }
            }
        }
        if !fanout.contains_key("START") {
            self.out.push(
                Diagnostic::error(
                    "E0290",
                    g.name.span,
                    format!(
                        "graph `{}` has no entry point: no edge leaves START",
                        g.name.name
                    ),
                )
                .label("nothing would run")
                .help("add an edge from START to the first node, e.g. `START -> first_node`"),
            );
        }
        // A node without outgoing edges ends the run (warned about below): its path is done.
        for name in self.s.nodes.keys() {
            if !fanout.contains_key(name.as_str()) {
                link(&mut pg, name, "END");
            }
        }
        let start = idx["START"];
        let end = idx["END"];
        let mut reach = BTreeSet::new();
        let mut dfs = Dfs::new(&pg, start);
        while let Some(nx) = dfs.next(&pg) {
            reach.insert(pg[nx]);
        }
        let mut rev = pg.clone();
        rev.reverse();
        let mut to_end = BTreeSet::new();
        let mut dfs = Dfs::new(&rev, end);
        while let Some(nx) = dfs.next(&rev) {
            to_end.insert(rev[nx]);
        }
        for (name, n) in &self.s.nodes {
            if !reach.contains(name.as_str()) {
                self.out.push(
                    Diagnostic::warning(
                        "W0301",
                        n.name.span,
                        format!("node `{name}` is never reached from START"),
                    )
                    .label("unreachable")
                    .help(format!(
                        "connect it (`START -> {name}` or `some_node -> {name}`), or remove it"
                    )),
                );
            } else if !has_dynamic_exit.contains(name) && !fanout.contains_key(name.as_str()) {
                // A dead end: the run stops after it (the runtime ends a run when nothing is
                // scheduled), which is legal but usually a forgotten edge.
                self.out.push(
                    Diagnostic::warning(
                        "W0302",
                        n.name.span,
                        format!("node `{name}` has no outgoing edge"),
                    )
                    .label("the run stops here without reaching END")
                    .help(format!("say where it goes, e.g. `{name} -> END`")),
                );
            } else if !to_end.contains(name.as_str()) && !has_dynamic_exit.contains(name) {
                self.out.push(
                    Diagnostic::warning(
                        "W0302",
                        n.name.span,
                        format!("node `{name}` has no path to END"),
                    )
                    .label("runs can never finish from here")
                    .help(format!(
                        "add an edge or a route arm that reaches END, e.g. `{name} -> END`"
                    )),
                );
            }
        }
        // Two nodes that START (or one node) fans out to, writing one replace channel. A route
        // runs one arm: its static targets run with the targets of that arm only.
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
                for ch in written_channels(self.s.nodes.get(*n).copied()) {
                    writers.entry(ch).or_default().push(n);
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
                    self.out.push(
                        Diagnostic::warning("W0303", b.name.span, format!("`{}` and `{}` can run in the same step and both write `{ch}`", ws[0], ws[1]))
                            .label("second writer")
                            .with_label(a.name.span, "first writer")
                            .with_label(info.field.name.span, "a replace channel takes one write per step")
                            .help(format!("give `{ch}` a reducer (`reduce append`, `reduce merge`, …) or let one node write it")),
                    );
                }
            }
        }
    }
}

fn item_fits(value: &Ty, channel: &Ty) -> bool {
    match channel.base() {
        Ty::List(item) => value.fits(item),
        Ty::Messages => matches!(value.base(), Ty::Message | Ty::Map(_) | Ty::Any),
        Ty::Int | Ty::Float => value.is_number(),
        _ => false,
    }
}

fn written_channels(n: Option<&NodeDecl>) -> Vec<&str> {
    let Some(n) = n else { return Vec::new() };
    let mut out = Vec::new();
    for e in &n.body {
        match e {
            Entry::Block { key, entries, .. } if key.name == "set" => {
                out.extend(entries.iter().map(|se| se.key().name.as_str()));
            }
            Entry::Value { key, value } if key.name == "write" => {
                if let ExprKind::Name { name } = &value.kind {
                    out.push(name.name.as_str());
                }
            }
            _ => {}
        }
    }
    out
}

/// Moves spans of an expression parsed from a template onto the string literal.
fn relocate(e: &mut Expr, to: Span) {
    e.span = to;
    match &mut e.kind {
        ExprKind::Name { name } => name.span = to,
        ExprKind::Field { base, field } => {
            field.span = to;
            relocate(base, to);
        }
        ExprKind::Index { base, index } => {
            relocate(base, to);
            relocate(index, to);
        }
        ExprKind::Call { func, args } => {
            func.span = to;
            args.iter_mut().for_each(|a| relocate(a, to));
        }
        ExprKind::List { items } => items.iter_mut().for_each(|a| relocate(a, to)),
        ExprKind::Object { object } => object.entries.iter_mut().for_each(|(_, v)| relocate(v, to)),
        ExprKind::Unary { operand, .. } => relocate(operand, to),
        ExprKind::Binary { lhs, rhs, .. } => {
            relocate(lhs, to);
            relocate(rhs, to);
        }
        _ => {}
    }
}
