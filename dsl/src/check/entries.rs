//! Nodes: the kind, the entries it accepts and requires, and the shape of each entry; the
//! entries of code nodes (a `js` node's code parses as JavaScript, a `tool` node's tool is
//! registered).

use super::Checker;
use crate::ast::*;
use crate::code::{code_offset, sandbox};
use crate::diagnostic::catalogue as diag;
use crate::eval::{eval, Scope};
use crate::registry::{EntrySpec, CACHE_KEYS, COMMON_ENTRIES, RETRY_KEYS};
use crate::types::Ty;

impl Checker<'_, '_> {
    pub(super) fn node(&mut self, n: &NodeDecl) {
        let locals: Vec<String> = self
            .s
            .payload_keys
            .get(&n.name.name)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        let Some(kind) = n.kind_name() else {
            let channel_entry = n
                .body
                .iter()
                .map(|e| e.key().name.as_str())
                .find(|k| self.s.channels.contains_key(*k));
            self.out.push(diag::node_without_kind(
                n.name.span,
                &n.name.name,
                channel_entry,
            ));
            return;
        };
        let Some(spec) = self.node_spec(n, &kind) else {
            return;
        };
        let allowed: Vec<&str> = spec.iter().chain(COMMON_ENTRIES).map(|e| e.name).collect();
        for e in &n.body {
            let key = e.key();
            if allowed.contains(&key.name.as_str()) {
                if !self.code_entry(&kind, e) {
                    if kind == "llm" && key.name == "memory" {
                        self.memory_entry(e);
                    }
                    self.entry(e, &locals);
                }
            } else {
                self.out
                    .push(diag::unknown_entry(key.span, &key.name, &kind, &allowed));
            }
        }
        for req in spec.iter().filter(|e| e.required) {
            if Entry::find(&n.body, req.name).is_none() {
                self.out
                    .push(diag::missing_entry(n.name.span, &kind, req.name, req.block));
            }
        }
    }

    /// The entries a node of `kind` accepts, or `None` (reported) for an unknown kind.
    fn node_spec(&mut self, n: &NodeDecl, kind: &str) -> Option<Vec<EntrySpec>> {
        if let Some(NodeKind::Subgraph(r)) = &n.kind {
            if let SubgraphRef::Alias(a) = r {
                if !self.uses.iter().any(|u| u.alias.name == a.name) {
                    let aliases: Vec<&str> =
                        self.uses.iter().map(|u| u.alias.name.as_str()).collect();
                    self.out
                        .push(diag::unknown_subgraph_alias(a.span, &a.name, &aliases));
                }
            }
            return Some(vec![EntrySpec::block("in"), EntrySpec::block("out")]);
        }
        if let Some(e) = self.reg.kinds.get(kind) {
            return Some(e.entries.clone());
        }
        let span = match &n.kind {
            Some(NodeKind::Named(id)) => id.span,
            _ => n.name.span,
        };
        let registered: Vec<&str> = self.reg.kinds.keys().map(String::as_str).collect();
        self.out.push(diag::unknown_kind(span, kind, &registered));
        None
    }

    /// One accepted entry of a node.
    fn entry(&mut self, e: &Entry, locals: &[String]) {
        match (e.key().name.as_str(), e) {
            ("set", Entry::Block { entries, .. }) => self.set_block(entries, locals),
            ("retry", Entry::Block { entries, .. }) => {
                for re in entries {
                    let k = re.key();
                    if !RETRY_KEYS.contains(&k.name.as_str()) {
                        self.out
                            .push(diag::unknown_retry_option(k.span, &k.name, RETRY_KEYS));
                    }
                }
            }
            ("cache", Entry::Block { entries, .. }) => {
                for ce in entries {
                    let k = ce.key();
                    match ce {
                        Entry::Value { value, .. } if k.name == "ttl" => {
                            if !matches!(value.kind, ExprKind::Duration { ms, .. } if ms > 0) {
                                self.out.push(diag::bad_cache_ttl(value.span));
                            }
                        }
                        _ => self
                            .out
                            .push(diag::unknown_cache_option(k.span, &k.name, CACHE_KEYS)),
                    }
                }
            }
            ("timeout", Entry::Value { value, .. }) => {
                if !matches!(value.kind, ExprKind::Duration { .. }) {
                    self.out.push(diag::timeout_not_duration(value.span));
                }
            }
            ("catch", Entry::Value { value, .. }) => match &value.kind {
                ExprKind::Name { name } => self.channel_ref(name),
                _ => self.out.push(diag::catch_not_a_channel(value.span)),
            },
            ("write", Entry::Value { value, .. }) => match &value.kind {
                ExprKind::Name { name } => self.channel_ref(name),
                _ => self.out.push(diag::write_not_a_channel(value.span)),
            },
            ("in", Entry::Block { entries, .. }) => {
                for ie in entries {
                    if let Entry::Value { value, .. } = ie {
                        self.expr(value, locals, false);
                    }
                }
            }
            ("out", Entry::Block { entries, .. }) => {
                for oe in entries {
                    self.channel_ref(oe.key());
                }
            }
            (_, Entry::Value { value, .. }) => self.entry_value(value, locals),
            (_, Entry::Block { entries, .. }) => {
                for be in entries {
                    if let Entry::Value { value, .. } = be {
                        self.entry_value(value, locals);
                    }
                }
            }
        }
    }

    /// An `llm` node's `memory`: a namespace goes with the graph's store, and that store needs
    /// one (the namespace's expressions are checked with the other entry values).
    fn memory_entry(&mut self, e: &Entry) {
        let Entry::Value { value, .. } = e else {
            return;
        };
        let ExprKind::Object { object } = &value.kind else {
            return;
        };
        let store = crate::agents::memory::store_name(value);
        let namespace = object.get("namespace");
        match (store, namespace) {
            (Some(crate::agents::memory::GRAPH_STORE), Some(ns)) if !matches!(&ns.kind, ExprKind::List { items } if !items.is_empty()) =>
            {
                self.out.push(diag::store_memory_without_namespace(ns.span));
            }
            (Some(crate::agents::memory::GRAPH_STORE), Some(_)) => {}
            (Some(crate::agents::memory::GRAPH_STORE), None) => {
                self.out
                    .push(diag::store_memory_without_namespace(value.span));
            }
            (Some(other), Some(ns)) => {
                self.out
                    .push(diag::namespace_without_graph_store(ns.span, other));
            }
            _ => {}
        }
    }

    /// `set { channel: expr, … }`: declared channels, values of their types.
    fn set_block(&mut self, entries: &[Entry], locals: &[String]) {
        for se in entries {
            let (key, value) = match se {
                Entry::Value { key, value } => (key, value),
                Entry::Block { key, .. } => {
                    self.out.push(diag::set_nested_block(key.span));
                    continue;
                }
            };
            let Some(info) = self.s.channels.get(&key.name) else {
                self.unknown_channel(key);
                continue;
            };
            let want = Ty::of(&info.ty);
            let got = self.expr_ty(value, locals);
            let ok = got.fits(&want) || (info.reducer != "replace" && item_fits(&got, &want));
            if !ok {
                self.out.push(diag::set_type_mismatch(
                    value.span,
                    &key.name,
                    &want,
                    &got,
                    info.field.ty.span,
                ));
            }
        }
    }
}

impl Checker<'_, '_> {
    /// Checks entry `e` of a `kind` node if it is a code node's own; `false` leaves it to the
    /// checks every entry gets.
    pub(super) fn code_entry(&mut self, kind: &str, e: &Entry) -> bool {
        let Entry::Value { key, value } = e else {
            return false;
        };
        match (kind, key.name.as_str()) {
            ("js", "code") => self.js_code(value),
            ("js", "time_limit") => {
                if !matches!(value.kind, ExprKind::Duration { .. }) {
                    self.out
                        .push(diag::bad_code_limit(value.span, "time_limit"));
                }
            }
            ("js", "memory_limit") => {
                let bytes = eval(value, &Scope::empty()).ok().and_then(|v| v.as_u64());
                if bytes.unwrap_or(0) == 0 {
                    self.out
                        .push(diag::bad_code_limit(value.span, "memory_limit"));
                }
            }
            ("tool", "tool") => match value.as_name() {
                Some(name) if self.reg.tools.contains_key(name) => {}
                // An MCP set's tools are known only when it runs.
                Some(_) if self.s.toolsets.values().any(|t| t.source.is_some()) => {}
                Some(name) => {
                    let registered: Vec<&str> = self.reg.tools.keys().map(String::as_str).collect();
                    self.out
                        .push(diag::unknown_tool(value.span, name, &registered));
                }
                None => self.out.push(diag::tool_not_a_name(value.span)),
            },
            ("tool", "output") => match &value.kind {
                ExprKind::Name { name } => self.channel_ref(name),
                _ => self.out.push(diag::output_not_a_channel(value.span)),
            },
            _ => return false,
        }
        true
    }

    /// A string literal whose text parses as a function body.
    fn js_code(&mut self, value: &Expr) {
        let ExprKind::Str { lit } = &value.kind else {
            self.out.push(diag::js_code_not_a_string(value.span));
            return;
        };
        let Some(sandbox::JsError::Thrown {
            message,
            line,
            column,
        }) = sandbox::syntax_error(&lit.value)
        else {
            return;
        };
        let at = code_offset(lit, line.unwrap_or(1), column.unwrap_or(1));
        // One character, unless the position is at the end of a line.
        let end = lit.raw[at - lit.span.start..]
            .chars()
            .next()
            .filter(|c| *c != '\n')
            .map_or(at, |c| at + c.len_utf8());
        self.out
            .push(diag::js_syntax_error(Span::new(at, end), &message));
    }
}

/// Whether `value` fits as one item a reducer adds to `channel`.
fn item_fits(value: &Ty, channel: &Ty) -> bool {
    match channel.base() {
        Ty::List(item) => value.fits(item),
        Ty::Messages => matches!(value.base(), Ty::Message | Ty::Map(_) | Ty::Any),
        Ty::Int | Ty::Float => value.is_number(),
        _ => false,
    }
}
