//! Evaluation cases and the prompt sets shipped in `eval/prompts/`.
//!
//! A cases file is JSON Lines, one case per line (blank lines and lines starting with `//` are
//! skipped):
//!
//! ```json
//! {"id": "order-priority", "prompt": "Receive orders on a webhook …", "source": "…",
//!  "checklist": {"trigger": "n8n-nodes-base.webhook",
//!                "nodes": [["n8n-nodes-base.if", "n8n-nodes-base.switch"]],
//!                "connections": [{"from": "n8n-nodes-base.webhook", "to": ["n8n-nodes-base.if", "n8n-nodes-base.switch"]}]},
//!  "offline": {"input": {"orderId": "A-1", "amount": 250}, "expect": [{"value": "high"}]}}
//! ```
//!
//! A node type is a full n8n type name; one ending in `*` matches every type it starts with
//! (`@n8n/n8n-nodes-langchain.lmChat*`); a list is alternatives. A line
//! `{"include": "SET:ID"}` takes case `ID` from shipped set `SET` (the `quick` set is made so).

use crate::EvalError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// One prompt to build a workflow from, and what the workflow must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within its set.
    pub id: String,
    /// The one human message the builder gets.
    pub prompt: String,
    /// Where the prompt comes from (a file path, in this repository or another).
    pub source: String,
    /// A difficulty tier (`simple`, `medium`, `complex`, `agent`), when the source gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// What the workflow must hold.
    #[serde(default)]
    pub checklist: Checklist,
    /// For a workflow that runs without credentials: an input and the output expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offline: Option<Offline>,
    /// For an agent that acts on an n8n instance: its setup, answers and checks
    /// ([`crate::instance`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<crate::instance::InstanceCase>,
}

/// The node types and connections a workflow must have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checklist {
    /// The trigger type (alternatives), if the prompt implies one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<TypeSpec>,
    /// Node types that must be present, one entry per required node (alternatives each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<TypeSpec>,
    /// Connections that must exist between node types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<ConnectionRule>,
}

impl Checklist {
    /// The number of items (trigger, nodes, connections).
    pub fn len(&self) -> usize {
        usize::from(self.trigger.is_some()) + self.nodes.len() + self.connections.len()
    }

    /// Whether there is no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One node type or alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TypeSpec {
    /// This type.
    One(String),
    /// Any of these types.
    Any(Vec<String>),
}

impl TypeSpec {
    /// The alternatives.
    pub fn alternatives(&self) -> &[String] {
        match self {
            TypeSpec::One(t) => std::slice::from_ref(t),
            TypeSpec::Any(ts) => ts,
        }
    }

    /// Whether `node_type` is one of the alternatives (a trailing `*` matches a prefix).
    pub fn matches(&self, node_type: &str) -> bool {
        self.alternatives()
            .iter()
            .any(|alt| match alt.strip_suffix('*') {
                Some(prefix) => node_type.starts_with(prefix),
                None => alt == node_type,
            })
    }

    /// The alternatives for people: short names (after the last `.`) joined with `|`.
    pub fn label(&self) -> String {
        self.alternatives()
            .iter()
            .map(|t| short_type(t))
            .collect::<Vec<_>>()
            .join("|")
    }
}

/// A type name without its package (`n8n-nodes-base.gmail` → `gmail`).
pub fn short_type(t: &str) -> &str {
    t.rsplit('.').next().unwrap_or(t)
}

fn main_kind() -> String {
    "main".into()
}

fn is_main(kind: &str) -> bool {
    kind == "main"
}

/// A connection between node types. For `main` it holds when data can flow from a `from` node
/// to a `to` node along `main` connections (through other nodes unless `direct`); for other
/// kinds (`ai_languageModel`, `ai_tool`, …) a `from` node must be connected straight into a `to`
/// node with that kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionRule {
    /// The source node type.
    pub from: TypeSpec,
    /// The target node type.
    pub to: TypeSpec,
    /// The connection type (`main` by default).
    #[serde(default = "main_kind", skip_serializing_if = "is_main")]
    pub kind: String,
    /// For `main`: only a direct connection counts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
}

/// How an offline-runnable case is run in n8n and what it must produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offline {
    /// The webhook body (or the manual trigger's item).
    #[serde(default)]
    pub input: Value,
    /// What the execution's output must contain (all of it).
    pub expect: Vec<Expect>,
}

/// One expectation on an execution's output, checked on every item of every node but the
/// triggers. Strings compare exactly, numbers by value (a number also matches a string
/// holding it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Expect {
    /// Some item holds every field of this object (recursively).
    Item(Value),
    /// Some item has a field (at any depth) equal to this value.
    Value(Value),
    /// Some item has a field (at any depth) equal to one of these values.
    OneOf(Vec<Value>),
}

/// A line that takes a case from another shipped set.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Include {
    include: String,
}

/// The prompt sets shipped with the crate: name, contents.
const SETS: [(&str, &str); 7] = [
    ("quick", include_str!("../prompts/quick.jsonl")),
    ("scenarios", include_str!("../prompts/scenarios.jsonl")),
    ("n8n-default", include_str!("../prompts/n8n-default.jsonl")),
    ("n8n-basic", include_str!("../prompts/n8n-basic.jsonl")),
    (
        "n8n-synthetic",
        include_str!("../prompts/n8n-synthetic.jsonl"),
    ),
    (
        "control-flow",
        include_str!("../prompts/control-flow.jsonl"),
    ),
    ("instance", include_str!("../prompts/instance.jsonl")),
];

/// The set `agentgraph eval` runs when none is named.
pub const DEFAULT_SET: &str = "quick";

/// The names of the shipped sets.
pub fn set_names() -> Vec<&'static str> {
    SETS.iter().map(|(n, _)| *n).collect()
}

/// The cases of shipped set `name`.
pub fn shipped_set(name: &str) -> Result<Vec<Case>, EvalError> {
    let text = SETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| EvalError::UnknownSet {
            name: name.to_string(),
            known: set_names().join(", "),
        })?;
    parse_cases(text, name)
}

/// The cases of a JSON Lines file.
pub fn cases_file(path: &Path) -> Result<Vec<Case>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    parse_cases(&text, &path.display().to_string())
}

/// Parses cases; `file` names the text in errors.
pub fn parse_cases(text: &str, file: &str) -> Result<Vec<Case>, EvalError> {
    let mut cases: Vec<Case> = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let bad = |message: String| EvalError::BadLine {
            file: file.to_string(),
            line: i + 1,
            message,
        };
        let value: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let case = if value.get("include").is_some() {
            let inc: Include = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            included(&inc.include).map_err(|e| bad(e.to_string()))?
        } else {
            serde_json::from_value(value).map_err(|e| bad(e.to_string()))?
        };
        if !ids.insert(case.id.clone()) {
            return Err(EvalError::DuplicateCase {
                file: file.to_string(),
                id: case.id,
            });
        }
        cases.push(case);
    }
    Ok(cases)
}

/// The case `SET:ID` of a shipped set (never itself an include, so there is no cycle).
fn included(reference: &str) -> Result<Case, EvalError> {
    let (set, id) = reference
        .split_once(':')
        .ok_or_else(|| EvalError::BadLine {
            file: reference.to_string(),
            line: 0,
            message: "an include is `SET:ID`".into(),
        })?;
    let text = SETS
        .iter()
        .find(|(n, _)| *n == set && *n != DEFAULT_SET)
        .map(|(_, t)| *t)
        .ok_or_else(|| EvalError::UnknownSet {
            name: set.to_string(),
            known: set_names().join(", "),
        })?;
    let cases = parse_cases(text, set)?;
    let known = ids_of(&cases);
    cases
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| EvalError::UnknownCase {
            id: id.to_string(),
            set: set.to_string(),
            known,
        })
}

fn ids_of(cases: &[Case]) -> String {
    cases
        .iter()
        .map(|c| c.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Keeps the cases named in `only` (in the set's order), then the first `limit`.
pub fn select(
    cases: Vec<Case>,
    set: &str,
    only: &[String],
    limit: Option<usize>,
) -> Result<Vec<Case>, EvalError> {
    if let Some(missing) = only.iter().find(|id| !cases.iter().any(|c| &c.id == *id)) {
        return Err(EvalError::UnknownCase {
            id: missing.clone(),
            set: set.to_string(),
            known: ids_of(&cases),
        });
    }
    let kept = cases
        .into_iter()
        .filter(|c| only.is_empty() || only.contains(&c.id));
    Ok(match limit {
        Some(n) => kept.take(n).collect(),
        None => kept.collect(),
    })
}
