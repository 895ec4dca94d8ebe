//! `UNKNOWN_PARAMETER`: parameter keys the node type does not define.
//!
//! n8n silently drops a parameter key that no property of the node type defines (and a node
//! never reads an option its collection does not list), so a model that writes `message`
//! where the node expects `text` builds a workflow that quietly does nothing. This rule
//! checks the top-level keys of every node against the properties of its description for
//! the node's typeVersion (any `displayOptions` other than `@version` is ignored: a key that
//! some property defines under some condition counts as defined), then descends into
//! `collection` values (keys must be among its options), `fixedCollection` values (group
//! names, then the keys of each group's values) and nested collections, with paths such as
//! `options.timezone` or `rules.values[0].outputKey`.
//!
//! Not reported:
//! * nodes described by an abridged description (the built-in compact catalogue; see
//!   [`complete`]): only n8n's own descriptions list every property;
//! * nodes whose type is unknown, or whose typeVersion is not one the catalogue knows
//!   (`NODE_TYPE_NOT_FOUND` / `NODE_VERSION_NOT_FOUND` cover them; checking another version's
//!   properties would only give false alarms);
//! * keys whose value is empty (`""`, `null`, `{}`, `[]`): dropping them loses nothing. Real
//!   exports hold such keys for notices of other n8n releases (`httpVariantWarning: ""`) and
//!   empty `options: {}` on nodes that do not have them;
//! * `requestOptions`, which n8n itself adds at load time to declarative nodes and AI
//!   sub-nodes (`applyDeclarativeNodeOptionParameters`) although many `nodes.json`
//!   descriptions lack it; its content is checked against n8n's definition;
//! * the inside of values that are not collections: resource locators (`{__rl, mode,
//!   value}`), filters, assignments, resource mappers, JSON, and expressions (`=…`).

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::codes::UNKNOWN_PARAMETER;
use super::{Finding, NodeInfo};
use crate::catalogue::{is_visible, property_visible, NodeProperty};

/// Kind given to a fixedCollection group (its `values` are its properties).
const GROUP: &str = "\u{0}group";

/// Longest list of valid keys quoted in a message.
const MAX_LISTED: usize = 15;

/// Property kinds that hold no value.
const NOT_VALUES: &[&str] = &["notice", "callout", "button"];

/// One definition: a property, a nested option or a fixedCollection group.
#[derive(Clone, Copy)]
struct Def<'a> {
    name: &'a str,
    display_name: &'a str,
    kind: &'a str,
    /// collection: nested properties; fixedCollection: groups; group: its values.
    children: &'a [Value],
    display: Option<&'a Value>,
}

impl<'a> Def<'a> {
    fn of_property(p: &'a NodeProperty) -> Self {
        Def {
            name: &p.name,
            display_name: &p.display_name,
            kind: &p.kind,
            children: p.options.as_deref().unwrap_or(&[]),
            display: p.display_options.as_ref(),
        }
    }

    /// A nested property (`group == false`) or a fixedCollection group.
    fn of_value(v: &'a Value, group: bool) -> Option<Self> {
        let name = v.get("name")?.as_str()?;
        let str_of = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        let list = |k: &str| v.get(k).and_then(Value::as_array).map(Vec::as_slice);
        Some(Def {
            name,
            display_name: str_of("displayName"),
            kind: if group { GROUP } else { str_of("type") },
            children: if group {
                list("values")
            } else {
                list("options")
            }
            .unwrap_or(&[]),
            display: v.get("displayOptions"),
        })
    }

    fn nests(&self) -> bool {
        matches!(self.kind, "collection" | "fixedCollection" | GROUP)
    }

    /// The definitions one level down (version-filtered).
    fn children(&self, version: f64) -> Vec<Def<'a>> {
        let group = match self.kind {
            "collection" | GROUP => false,
            "fixedCollection" => true,
            _ => return Vec::new(),
        };
        self.children
            .iter()
            .filter_map(|v| Def::of_value(v, group))
            .filter(|d| version_allows(d.display, version))
            .collect()
    }
}

/// Whether the `@version` conditions of these displayOptions (and only those) allow `version`.
fn version_allows(display: Option<&Value>, version: f64) -> bool {
    let Some(Value::Object(opts)) = display else {
        return true;
    };
    let mut only = Map::new();
    for side in ["show", "hide"] {
        if let Some(cond) = opts.get(side).and_then(|s| s.get("@version")) {
            only.insert(side.to_string(), json!({ "@version": cond }));
        }
    }
    only.is_empty() || is_visible(Some(&Value::Object(only)), &Map::new(), version)
}

/// The `requestOptions` collection n8n adds to declarative nodes and AI sub-nodes when it
/// loads them (`applyDeclarativeNodeOptionParameters` in n8n-workflow).
fn request_options() -> &'static Value {
    static DEF: OnceLock<Value> = OnceLock::new();
    DEF.get_or_init(|| {
        json!({
            "displayName": "Request Options", "name": "requestOptions", "type": "collection",
            "options": [
                {"displayName": "Batching", "name": "batching", "type": "fixedCollection",
                 "options": [{"displayName": "Batching", "name": "batch", "values": [
                     {"displayName": "Items per Batch", "name": "batchSize", "type": "number"},
                     {"displayName": "Batch Interval (ms)", "name": "batchInterval", "type": "number"}
                 ]}]},
                {"displayName": "Ignore SSL Issues (Insecure)", "name": "allowUnauthorizedCerts", "type": "boolean"},
                {"displayName": "Proxy", "name": "proxy", "type": "string"},
                {"displayName": "Timeout", "name": "timeout", "type": "number"}
            ]
        })
    })
}

/// Whether dropping this value loses nothing.
fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn is_expression(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with('='))
}

pub(crate) fn check(n: &NodeInfo, out: &mut Vec<Finding>) {
    let Some(desc) = n.desc else { return };
    if desc.abridged || !desc.version.contains(n.node.version()) {
        return;
    }
    let all: Vec<Def> = desc.properties.iter().map(Def::of_property).collect();
    let defs: Vec<Def> = all
        .iter()
        .copied()
        .filter(|d| version_allows(d.display, n.version))
        .collect();
    // The keys worth listing at the top: the properties shown for these parameters.
    let mut shown: Vec<&str> = Vec::new();
    for p in &desc.properties {
        if !NOT_VALUES.contains(&p.kind.as_str())
            && !shown.contains(&p.name.as_str())
            && property_visible(p, &n.params, n.version)
        {
            shown.push(&p.name);
        }
    }
    let level = Level {
        defs: &defs,
        all: &all,
        listed: shown,
        parent: None,
    };
    let mut path = String::new();
    walk(n, &level, &n.node.parameters, &mut path, true, out);
}

/// The definitions valid at one level of the parameters.
struct Level<'l, 'a> {
    /// Valid for the node's version.
    defs: &'l [Def<'a>],
    /// Every definition, whatever its version (to say "only in other versions").
    all: &'l [Def<'a>],
    /// Names to list in the message.
    listed: Vec<&'a str>,
    /// Path of the collection this level is inside (`None` at the top).
    parent: Option<&'l str>,
}

fn walk(
    n: &NodeInfo,
    level: &Level,
    obj: &Map<String, Value>,
    path: &mut String,
    top: bool,
    out: &mut Vec<Finding>,
) {
    for (key, value) in obj {
        let mut cands: Vec<Def> = level
            .defs
            .iter()
            .copied()
            .filter(|d| d.name == key)
            .collect();
        if cands.is_empty() && top && key == "requestOptions" {
            cands.extend(Def::of_value(request_options(), false));
        }
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        if cands.is_empty() {
            if !empty(value) {
                out.push(unknown(n, level, key, path));
            }
            path.truncate(len);
            continue;
        }
        let nested =
            !is_expression(value) && value.get("__rl").is_none() && cands.iter().all(Def::nests);
        if nested {
            let kids: Vec<Def> = cands.iter().flat_map(|c| c.children(n.version)).collect();
            let all_kids: Vec<Def> = cands.iter().flat_map(unfiltered_children).collect();
            if !kids.is_empty() {
                let mut listed: Vec<&str> = Vec::new();
                for k in &kids {
                    if !NOT_VALUES.contains(&k.kind) && !listed.contains(&k.name) {
                        listed.push(k.name);
                    }
                }
                let parent = path.clone();
                let inner = Level {
                    defs: &kids,
                    all: &all_kids,
                    listed,
                    parent: Some(&parent),
                };
                match value {
                    Value::Object(m) => walk(n, &inner, m, path, false, out),
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            if let Value::Object(m) = item {
                                let l = path.len();
                                path.push_str(&format!("[{i}]"));
                                walk(n, &inner, m, path, false, out);
                                path.truncate(l);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        path.truncate(len);
    }
}

/// The definitions one level down, whatever their version.
fn unfiltered_children<'a>(d: &Def<'a>) -> Vec<Def<'a>> {
    let group = match d.kind {
        "collection" | GROUP => false,
        "fixedCollection" => true,
        _ => return Vec::new(),
    };
    d.children
        .iter()
        .filter_map(|v| Def::of_value(v, group))
        .collect()
}

fn unknown(n: &NodeInfo, level: &Level, key: &str, path: &str) -> Finding {
    let node = n.name();
    let ty = &n.node.node_type;
    let version = n.version;
    let mut msg = match level.parent {
        None => format!(
            "node \"{node}\" ({ty} v{version}) has no parameter `{key}`; n8n drops unknown \
             keys, so this value has no effect"
        ),
        Some(parent) => format!(
            "node \"{node}\" ({ty} v{version}): `{parent}` has no option `{key}`, so the node \
             ignores this value"
        ),
    };
    if level.all.iter().any(|d| d.name == key) {
        msg.push_str(&format!(
            " (`{key}` belongs to other typeVersions of this node, not {version})"
        ));
    }
    msg.push('.');
    if let Some(s) = suggest(key, level.defs, version) {
        let full = match level.parent {
            None => s,
            Some(parent) => format!("{parent}.{s}"),
        };
        msg.push_str(&format!(" Did you mean `{full}`?"));
    }
    let what = if level.parent.is_some() {
        "options"
    } else {
        "parameters"
    };
    if !level.listed.is_empty() && level.listed.len() <= MAX_LISTED {
        let list: Vec<String> = level.listed.iter().map(|k| format!("`{k}`")).collect();
        msg.push_str(&format!(" Valid {what} here: {}.", list.join(", ")));
    } else if level.parent.is_none() {
        msg.push_str(&format!(
            " The node has {} parameters for these settings; call get_node_details with \
             withParameters to see them.",
            level.listed.len()
        ));
    }
    msg.push_str(" Rename or move the key, or remove it.");
    Finding::new(UNKNOWN_PARAMETER, Some(node), msg).at(path)
}

/// Levenshtein distance over chars.
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The closest defined name: same name but for case, else a nested option of that name
/// (`systemMessage` → `options.systemMessage`, `paginationMode` inside `options.pagination` →
/// `options.pagination.pagination.paginationMode`), else the smallest edit distance (at most a
/// third of the key), else the property with the shortest label that contains the key as a word
/// (`message` → `text`, labelled "Prompt (User Message)").
fn suggest(key: &str, defs: &[Def], version: f64) -> Option<String> {
    let lower = key.to_lowercase();
    let named = || {
        defs.iter()
            .filter(|d| !NOT_VALUES.contains(&d.kind) && !d.name.is_empty())
    };
    if let Some(d) = named().find(|d| d.name.to_lowercase() == lower) {
        return Some(d.name.to_string());
    }
    if let Some(path) = nested_named(&lower, defs, version, 3) {
        return Some(path);
    }
    let max = (lower.chars().count() / 3).max(1);
    let best = named()
        .map(|d| (levenshtein(&lower, &d.name.to_lowercase()), d.name))
        .filter(|(dist, _)| *dist <= max)
        .min_by_key(|(dist, _)| *dist);
    if let Some((_, name)) = best {
        return Some(name.to_string());
    }
    let squashed: String = lower.chars().filter(|c| c.is_alphanumeric()).collect();
    // The shortest label wins: "Prompt (User Message)" over "Source for Prompt (User Message)".
    named()
        .filter_map(|d| {
            let label = words(d.display_name);
            (label.contains(&lower) || label.concat() == squashed).then_some((label.len(), d.name))
        })
        .min_by_key(|(n, _)| *n)
        .map(|(_, name)| name.to_string())
}

/// `a.b.key` for a nested option named `key` (case-insensitive), searching `depth` levels.
fn nested_named(lower: &str, defs: &[Def], version: f64, depth: usize) -> Option<String> {
    if depth == 0 {
        return None;
    }
    for d in defs.iter().filter(|d| d.nests()) {
        let kids = d.children(version);
        if let Some(k) = kids.iter().find(|k| k.name.to_lowercase() == lower) {
            return Some(format!("{}.{}", d.name, k.name));
        }
        if let Some(rest) = nested_named(lower, &kids, version, depth - 1) {
            return Some(format!("{}.{rest}", d.name));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_distances() {
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("timezone", "timezone"), 0);
        assert_eq!(levenshtein("systemmesage", "systemmessage"), 1);
    }

    #[test]
    fn version_conditions_only() {
        let d = json!({"show": {"@version": [{"_cnd": {"lt": 4.5}}], "operation": ["read"]}});
        assert!(version_allows(Some(&d), 4.4));
        assert!(!version_allows(Some(&d), 4.7));
        let d = json!({"show": {"operation": ["read"]}});
        assert!(version_allows(Some(&d), 1.0));
        let d = json!({"hide": {"@version": [1]}});
        assert!(!version_allows(Some(&d), 1.0));
        assert!(version_allows(Some(&d), 2.0));
        assert!(version_allows(None, 2.0));
    }
}
