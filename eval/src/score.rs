//! Deterministic scores of one built workflow: not empty, the std-tools validators by rule, the
//! case's checklist, and (for executed cases) the expected output.

use crate::cases::{Checklist, ConnectionRule, Expect, TypeSpec};
use agentgraph_std_tools::catalogue::Catalogue;
use agentgraph_std_tools::validate::{
    only_triggers, validate_configuration, validate_structure, Report, ONLY_TRIGGER,
};
use agentgraph_std_tools::workflow::Workflow;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet, VecDeque};

/// One validator group's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Not empty and no error finding.
    pub valid: bool,
    /// Error findings.
    pub errors: usize,
    /// Warning findings.
    pub warnings: usize,
    /// Findings per rule code.
    pub findings: BTreeMap<String, usize>,
}

impl Validation {
    fn of(report: &Report, non_empty: bool) -> Self {
        Validation {
            valid: non_empty && !report.has_errors(),
            errors: report.errors(),
            warnings: report.warnings(),
            findings: report
                .counts()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    /// The result for something that is not a workflow at all.
    fn not_a_workflow() -> Self {
        Validation {
            valid: false,
            errors: 1,
            warnings: 0,
            findings: BTreeMap::from([(NOT_A_WORKFLOW.to_string(), 1)]),
        }
    }
}

/// The pseudo-rule reported when the final value does not parse as a workflow.
pub const NOT_A_WORKFLOW: &str = "NOT_A_WORKFLOW";

/// One checklist item and whether the workflow meets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The item for people (`trigger webhook`, `node gmail|emailSend`, `webhook → if`).
    pub item: String,
    /// Whether it holds.
    pub pass: bool,
}

/// The checklist's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChecklistScore {
    /// Items met over items (`None` for an empty checklist).
    pub score: Option<f64>,
    /// Items met.
    pub passed: usize,
    /// Items in all.
    pub total: usize,
    /// Each item.
    pub items: Vec<Item>,
}

impl ChecklistScore {
    /// The score of these items.
    pub fn of(items: Vec<Item>) -> Self {
        let passed = items.iter().filter(|i| i.pass).count();
        let total = items.len();
        ChecklistScore {
            score: (total > 0).then(|| passed as f64 / total as f64),
            passed,
            total,
            items,
        }
    }

    /// Whether every item holds (an empty checklist holds).
    pub fn all_pass(&self) -> bool {
        self.passed == self.total
    }
}

/// The scores that need only the workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowScores {
    /// The workflow has at least one node.
    pub non_empty: bool,
    /// Its node count.
    pub nodes: usize,
    /// `validate_structure`.
    pub structure: Validation,
    /// `validate_configuration`.
    pub configuration: Validation,
    /// The case's checklist.
    pub checklist: ChecklistScore,
}

/// Scores `workflow` against `checklist` and the validators over `catalogue`.
pub fn score_workflow(
    workflow: &Value,
    checklist: &Checklist,
    catalogue: &Catalogue,
) -> WorkflowScores {
    let Ok(wf) = Workflow::from_value_ref(workflow) else {
        return WorkflowScores {
            non_empty: false,
            nodes: 0,
            structure: Validation::not_a_workflow(),
            configuration: Validation::not_a_workflow(),
            checklist: score_checklist(&Workflow::default(), checklist),
        };
    };
    let non_empty = !wf.nodes.is_empty();
    let mut structure = Validation::of(&validate_structure(&wf, catalogue), non_empty);
    // A workflow of triggers alone passes n8n's structure rules but does nothing: a build that
    // ends there did not build what was asked, so it does not count as structure-valid.
    if only_triggers(&wf, catalogue) {
        structure.valid = false;
        structure.errors += 1;
        *structure
            .findings
            .entry(ONLY_TRIGGER.to_string())
            .or_default() += 1;
    }
    WorkflowScores {
        non_empty,
        nodes: wf.nodes.len(),
        structure,
        configuration: Validation::of(&validate_configuration(&wf, catalogue), non_empty),
        checklist: score_checklist(&wf, checklist),
    }
}

/// Each checklist item against the workflow.
pub fn score_checklist(wf: &Workflow, checklist: &Checklist) -> ChecklistScore {
    let types: Vec<&str> = wf.nodes.iter().map(|n| n.node_type.as_str()).collect();
    let has = |spec: &TypeSpec| types.iter().any(|t| spec.matches(t));
    let mut items = Vec::new();
    if let Some(trigger) = &checklist.trigger {
        items.push(Item {
            item: format!("trigger {}", trigger.label()),
            pass: has(trigger),
        });
    }
    for node in &checklist.nodes {
        items.push(Item {
            item: format!("node {}", node.label()),
            pass: has(node),
        });
    }
    for rule in &checklist.connections {
        items.push(Item {
            item: connection_label(rule),
            pass: connected(wf, rule),
        });
    }
    ChecklistScore::of(items)
}

fn connection_label(rule: &ConnectionRule) -> String {
    let arrow = match (rule.kind.as_str(), rule.direct) {
        ("main", false) => "→".to_string(),
        ("main", true) => "→ (direct)".to_string(),
        (kind, _) => format!("⇢ ({kind})"),
    };
    format!("{} {arrow} {}", rule.from.label(), rule.to.label())
}

/// Whether the rule's connection exists in the workflow.
pub fn connected(wf: &Workflow, rule: &ConnectionRule) -> bool {
    let type_of = |name: &str| wf.node_by_name(name).map(|n| n.node_type.as_str());
    let edges: Vec<(String, String)> = wf
        .edges()
        .into_iter()
        .filter(|e| e.kind == rule.kind)
        .map(|e| (e.source, e.target.node))
        .collect();
    let is_from = |name: &str| type_of(name).is_some_and(|t| rule.from.matches(t));
    let is_to = |name: &str| type_of(name).is_some_and(|t| rule.to.matches(t));
    if rule.kind != "main" || rule.direct {
        return edges.iter().any(|(s, t)| is_from(s) && is_to(t));
    }
    // Data flow along main connections, through any nodes.
    for start in wf.nodes.iter().filter(|n| rule.from.matches(&n.node_type)) {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut queue: VecDeque<&str> = VecDeque::from([start.name.as_str()]);
        while let Some(at) = queue.pop_front() {
            for (_, target) in edges.iter().filter(|(s, _)| s == at) {
                if is_to(target) {
                    return true;
                }
                if seen.insert(target.as_str()) {
                    queue.push_back(target.as_str());
                }
            }
        }
    }
    false
}

/// Whether each expectation is met by some item in `items`; `(label, met)` per expectation.
pub fn check_expectations(expect: &[Expect], items: &[&Value]) -> Vec<(String, bool)> {
    expect
        .iter()
        .map(|e| match e {
            Expect::Item(want) => (
                format!("item {want}"),
                items.iter().any(|got| subset(want, got)),
            ),
            Expect::Value(want) => (
                format!("value {want}"),
                items.iter().any(|got| contains_value(want, got)),
            ),
            Expect::OneOf(wants) => (
                format!("one of {}", Value::Array(wants.clone())),
                items
                    .iter()
                    .any(|got| wants.iter().any(|want| contains_value(want, got))),
            ),
        })
        .collect()
}

/// Whether `got` holds everything in `want`: every field of an object (recursively), arrays
/// element by element, numbers by value (a number also matches a string holding it).
pub fn subset(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .all(|(k, wv)| g.get(k).is_some_and(|gv| subset(wv, gv))),
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(wv, gv)| subset(wv, gv))
        }
        (Value::Number(w), Value::Number(g)) => same_number(w.as_f64(), g.as_f64()),
        (Value::Number(w), Value::String(g)) => {
            same_number(w.as_f64(), g.trim().parse::<f64>().ok())
        }
        _ => want == got,
    }
}

fn same_number(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if (a - b).abs() <= 1e-9 * a.abs().max(1.0))
}

/// Whether `got`, or a value anywhere inside it, is [`subset`]-equal to `want`.
pub fn contains_value(want: &Value, got: &Value) -> bool {
    subset(want, got)
        || match got {
            Value::Object(o) => o.values().any(|v| contains_value(want, v)),
            Value::Array(a) => a.iter().any(|v| contains_value(want, v)),
            _ => false,
        }
}
