//! Graph items other than nodes and edges: input/output lists, models, prompts, tool sets,
//! interrupts and `config`.

use super::Checker;
use crate::agents::tool_sets;
use crate::ast::*;
use crate::diagnostic::catalogue as diag;
use crate::registry::CONFIG_KEYS;
use std::collections::BTreeSet;

/// Providers every build knows.
const PROVIDERS: [&str; 3] = ["anthropic", "openai", "scripted"];

/// The options each built-in provider reads; anything else would be silently ignored.
const HTTP_OPTIONS: &[&str] = &[
    "model",
    "api_key",
    "base_url",
    "max_tokens",
    "temperature",
    "pricing",
];
const AUTO_OPTIONS: &[&str] = &[
    "anthropic",
    "openai",
    "script",
    "api_key",
    "base_url",
    "max_tokens",
    "temperature",
    "pricing",
];
const SCRIPTED_OPTIONS: &[&str] = &["script", "pricing"];

impl Checker<'_, '_> {
    pub(super) fn items(&mut self, g: &GraphDecl) {
        for item in &g.items {
            match item {
                GraphItem::Input(l) | GraphItem::Output(l) => {
                    for n in &l.names {
                        self.channel_ref(n);
                    }
                }
                GraphItem::Model(m) => self.model(m),
                // `prompt p = file("…")` is read when the graph is loaded (E0252 if it cannot
                // be); `file` anywhere else is E0253.
                GraphItem::Prompt(p) if is_prompt_file(&p.value) => {}
                GraphItem::Prompt(p) => {
                    let locals = self.prompt_locals(&p.name.name);
                    self.expr(&p.value, &locals, false);
                }
                GraphItem::Tools(t) => self.tools(t),
                GraphItem::Node(n) => self.node(n),
                GraphItem::Edge(e) => self.edge(e),
                GraphItem::Interrupt(i) => {
                    for n in &i.nodes {
                        self.node_ref(n, true);
                    }
                }
                GraphItem::Config(o) => self.config(o),
                GraphItem::State(_) => {}
            }
        }
    }

    /// The send payload keys a prompt's templates may name: those every node using the
    /// prompt (`system: [p]`, `context: p`, …) receives, since each renders it with its own.
    fn prompt_locals(&self, prompt: &str) -> Vec<String> {
        let names = |v: &'_ Expr| -> bool {
            let is_prompt =
                |e: &Expr| matches!(&e.kind, ExprKind::Name { name } if name.name == prompt);
            match &v.kind {
                ExprKind::List { items } => items.iter().any(is_prompt),
                _ => is_prompt(v),
            }
        };
        let mut common: Option<BTreeSet<String>> = None;
        for (node, n) in &self.s.nodes {
            let uses = n
                .body
                .iter()
                .any(|e| matches!(e, Entry::Value { value, .. } if names(value)));
            if uses {
                let keys = self.s.payload_keys.get(node).cloned().unwrap_or_default();
                common = Some(match common {
                    Some(c) => c.intersection(&keys).cloned().collect(),
                    None => keys,
                });
            }
        }
        common.unwrap_or_default().into_iter().collect()
    }

    fn tools(&mut self, t: &ToolsDecl) {
        if let Some(source) = &t.source {
            self.tool_source(source);
            return;
        }
        for tr in &t.tools {
            let name = tr.name.name.as_str();
            let is_set = self.s.toolsets.contains_key(name);
            if !self.reg.tools.contains_key(name) && !is_set {
                let known: Vec<&str> = self
                    .reg
                    .tools
                    .keys()
                    .chain(self.s.toolsets.keys())
                    .map(String::as_str)
                    .collect();
                self.out
                    .push(diag::unknown_tool(tr.name.span, name, &known));
            }
            if let (true, Some(o)) = (is_set, &tr.options) {
                self.out.push(diag::bad_tool_source(
                    o.span,
                    format!("`{name}` is a tool set: its tools take no options here"),
                    "options belong to single tools (`calculator { … }`)",
                ));
            }
            if let Some(o) = &tr.options {
                // Tool options may name models and prompts (`{ model: main }`).
                for (_, v) in &o.entries {
                    self.entry_value(v, &[]);
                }
            }
        }
        if let Some(path) = self.set_cycle(t) {
            self.out.push(diag::bad_tool_source(
                t.name.span,
                format!("tool set `{}` includes itself ({path})", t.name.name),
                "a set may include other sets, but not in a circle",
            ));
        }
    }

    /// The path back to `t` through the sets it includes, if there is one.
    fn set_cycle(&self, t: &ToolsDecl) -> Option<String> {
        let sets = &self.s.toolsets;
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(t.name.name.as_str(), vec![])];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((name, path)) = stack.pop() {
            let Some(decl) = sets.get(name) else { continue };
            for next in tool_sets::included(decl, |n| sets.contains_key(n)) {
                let mut p = path.clone();
                p.push(next);
                if next == t.name.name {
                    let mut all = vec![t.name.name.as_str()];
                    all.extend(p);
                    return Some(all.join(" → "));
                }
                if seen.insert(next) {
                    stack.push((next, p));
                }
            }
        }
        None
    }

    fn tool_source(&mut self, source: &ToolSource) {
        if !tool_sets::SOURCE_KINDS.contains(&source.kind.name.as_str()) {
            self.out.push(diag::bad_tool_source(
                source.kind.span,
                format!("`{}` is not a source of tools", source.kind.name),
                "a tool set is a list (`[calculator, search]`) or `mcp { command: …, args: […] }`",
            ));
            return;
        }
        for p in tool_sets::mcp_problems(&source.options) {
            self.out
                .push(diag::bad_tool_source(p.span, p.message, p.help));
        }
        for (k, v) in &source.options.entries {
            if let (true, ExprKind::Object { object }) =
                (k.name == "env" || k.name == "headers", &v.kind)
            {
                for (name, value) in &object.entries {
                    let lower = name.name.to_lowercase();
                    let secret = ["key", "token", "secret", "authorization", "password"]
                        .iter()
                        .any(|w| lower.contains(w));
                    if secret && matches!(value.kind, ExprKind::Str { .. }) {
                        self.out.push(diag::literal_secret(value.span, &name.name));
                    }
                }
            }
            self.expr(v, &[], false);
        }
    }

    fn config(&mut self, o: &ObjectLit) {
        for (k, v) in &o.entries {
            if !CONFIG_KEYS.contains(&k.name.as_str()) {
                self.out
                    .push(diag::unknown_config_key(k.span, &k.name, CONFIG_KEYS));
            } else if !matches!(v.kind, ExprKind::Int { value } if value > 0) {
                self.out.push(diag::bad_config_count(v.span, &k.name));
            }
        }
    }

    fn model(&mut self, m: &ModelDecl) {
        let provider = m.provider.name.as_str();
        if !PROVIDERS.contains(&provider) && !self.reg.providers.contains(provider) {
            let all: Vec<&str> = PROVIDERS
                .iter()
                .copied()
                .chain(self.reg.providers.iter().map(String::as_str))
                .collect();
            self.out
                .push(diag::unknown_provider(m.provider.span, provider, &all));
        }
        let allowed: Option<&[&str]> = match provider {
            "anthropic" | "openai" => Some(HTTP_OPTIONS),
            "auto" => Some(AUTO_OPTIONS),
            "scripted" => Some(SCRIPTED_OPTIONS),
            _ => None,
        };
        if let Some(allowed) = allowed {
            for (k, _) in &m.options.entries {
                if !allowed.contains(&k.name.as_str()) {
                    self.out.push(diag::unknown_model_option(
                        k.span, &k.name, provider, allowed,
                    ));
                }
            }
        }
        for (k, v) in &m.options.entries {
            let secret =
                k.name.contains("key") || k.name.contains("token") || k.name.contains("secret");
            if secret && matches!(v.kind, ExprKind::Str { .. }) {
                self.out.push(diag::literal_secret(v.span, &k.name));
            }
            self.expr(v, &[], false);
        }
    }
}

/// Whether `e` is `file("…")` with a literal path: the one form read when the graph is loaded.
fn is_prompt_file(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { func, args }
        if func.name == "file" && args.len() == 1 && matches!(args[0].kind, ExprKind::Str { .. }))
}
